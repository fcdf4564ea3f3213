"""``hermes acp``: serve the Agent Client Protocol on stdin/stdout.

stdout carries protocol frames only: the process's file descriptor 1 is pointed at stderr
before anything else runs (a plugin's ``print``, a warning, a library's output all land
there), and the protocol writes to a private copy of the original stdout.
"""

from __future__ import annotations

import asyncio
import logging
import os
import sys

import click

from hermes_hookspecs import CommandContext, HermesError

log = logging.getLogger("hermes.acp")


def _context() -> CommandContext:
    context: CommandContext = click.get_current_context().find_root().obj
    return context


def _claim_stdout() -> int:
    """A private descriptor of the real stdout; fd 1 and ``sys.stdout`` go to stderr."""
    sys.stdout.flush()
    private = os.dup(1)
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    return private


class _NoTraceback(logging.Filter):
    """Log records keep their message and lose their traceback (shown with ``--debug``)."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.exc_info:
            exc = record.exc_info[1]
            record.msg = f"{record.getMessage()}: {exc}" if exc else record.getMessage()
            record.args = ()
            record.exc_info = None
            record.exc_text = None
        return True


def _log_to_stderr(debug: bool) -> None:
    """Every log line to stderr, one line each (tracebacks with ``--debug`` only)."""
    root = logging.getLogger()
    for old in list(root.handlers):  # nothing may log to stdout
        if getattr(old, "stream", None) is sys.__stdout__:
            root.removeHandler(old)
    if not root.handlers:  # hermes's own (--debug) already writes to stderr
        ours = logging.StreamHandler(sys.stderr)
        ours.setFormatter(logging.Formatter("hermes acp: %(levelname)s %(name)s: %(message)s"))
        root.addHandler(ours)
        root.setLevel(logging.DEBUG if debug else logging.WARNING)
    if not debug:
        for handler in root.handlers:
            handler.addFilter(_NoTraceback())


@click.command("acp")
@click.option(
    "--check", is_flag=True, help="Say whether the provider, sandbox and store are ready."
)
def run_acp(check: bool) -> None:
    """Serve the Agent Client Protocol on stdin/stdout for an editor (docs/acp.md)."""
    context = _context()
    if check:
        from .readiness import check as readiness

        ready, line = readiness(context)
        click.echo(line)
        if not ready:
            raise SystemExit(1)
        return
    private = _claim_stdout()
    _log_to_stderr(context.debug)
    from .settings import Settings

    try:
        settings = Settings.from_config(context.config)
    except (TypeError, ValueError) as exc:
        raise HermesError(f"acp: {exc}") from None
    from .handshake import answer_initialize

    try:  # answered before the SDK loads: the editor hears from hermes at once
        prelude, hello = answer_initialize(sys.stdin.fileno(), private, settings.protocol_v2)
    except OSError as exc:
        raise HermesError(f"acp: {exc}") from None
    from .serve import serve

    try:
        asyncio.run(serve(context, settings, private, prelude, hello))
    except KeyboardInterrupt:
        pass
    except ValueError as exc:  # e.g. stdout redirected to a regular file
        raise HermesError(
            f"acp: {exc}; hermes acp speaks to a client through pipes (an editor starts it)"
        ) from None
