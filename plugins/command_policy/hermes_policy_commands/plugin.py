"""The ``approvals`` entry point: ``hermes approvals check`` (the policy loads when it runs, so
``hermes --help`` imports no parser)."""

from __future__ import annotations

import json
import sys
from typing import Any

from hermes_hookspecs import hookimpl

__all__ = ["hermes_register_commands"]


@hookimpl
def hermes_register_commands(cli: Any) -> None:
    """Add ``hermes approvals check``."""
    import click

    @click.group("approvals")
    def approvals() -> None:
        """The command policy: what a command the model runs is allowed, asked or refused."""

    cli.add_command(approvals)

    @approvals.command("check")
    @click.argument("command", required=False)
    @click.option("--json", "as_json", is_flag=True, help="One JSON object per command.")
    @click.option(
        "--workdir",
        help="The folder the command runs in (default: terminal.cwd, else this folder).",
    )
    @click.option("--home", help="The home folder (default: $HOME).")
    def check(command: str | None, as_json: bool, workdir: str | None, home: str | None) -> None:
        """Decide COMMAND, or with --json and no COMMAND each JSON string line of stdin, exactly
        as the terminal tool would in that folder: the same workspace, home folder, sandbox and
        script files."""
        import os

        from .engine import RuleError
        from .policy import policy_from_config
        from .situated import judge_command, local_files, situation, started_in

        context = click.get_current_context().obj
        config = getattr(context, "config", {}) or {}
        try:
            policy = policy_from_config(config)
        except RuleError as exc:
            raise click.ClickException(
                f"the approval settings in config.yaml are invalid: {exc}"
            ) from None
        if command is None and not as_json:
            raise click.UsageError("give a COMMAND, or --json to read commands from stdin")
        folder = os.path.abspath(os.path.expanduser(workdir)) if workdir else None
        if folder is not None and not os.path.isdir(folder):
            raise click.BadParameter(f"{workdir} is not a folder", param_hint="--workdir")
        where = situation(started_in(config, folder), env_cwd=folder, home=home)
        reader = local_files(where.base)

        def decide(text: str) -> Any:
            return judge_command(text, where, policy, read_script=reader)

        if command is not None:
            verdict = decide(command)
            if as_json:
                click.echo(json.dumps(verdict.as_json(command)))
                return
            click.echo(verdict.decision)
            for finding in verdict.asked:
                click.echo(f"  rule {finding.rule.id}: {finding.rule.justification}")
                click.echo(f"    on: {finding.text}")
            return
        for line in sys.stdin:
            if not line.strip():
                continue
            try:
                text = json.loads(line)
            except ValueError:
                text = None
            if not isinstance(text, str):
                row = {"command": line.rstrip("\n"), "decision": "ask", "rule": "uncheckable",
                       "justification": "the line is not one JSON string"}  # fmt: skip
            else:
                try:
                    row = decide(text).as_json(text)
                except Exception:  # fail closed: a command it cannot decide asks
                    row = {"command": text, "decision": "ask", "rule": "uncheckable",
                           "justification": "the command could not be decided"}  # fmt: skip
            click.echo(json.dumps(row))
