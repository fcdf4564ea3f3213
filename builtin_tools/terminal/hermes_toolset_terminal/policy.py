"""How the terminal tool decides a command before it runs: the command policy's findings (with
the paths recursive deletes really reach), the approval asked of a person, the refusals, and
the ``hermes_approve`` hook that excuses what ``approvals.allow`` allows."""

from __future__ import annotations

import os
import posixpath
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import ApprovalRequest, ToolContext, ToolError, blocked, hookimpl

if TYPE_CHECKING:  # the policy is imported on first use: `hermes --help` loads this plugin
    from hermes_policy_commands import Finding, Policy

__all__ = ["approval_key", "guard", "hermes_approve", "refuse", "terminal_needs_approval"]

_COMMAND_TOOLS = frozenset({"terminal"})


def _policy(config: Mapping[str, Any]) -> Policy:
    """The command policy of ``config`` (``approvals.rules``, ``approvals.extra_patterns``,
    ``approvals.allow``); a malformed entry is a :class:`ToolError` (fail closed: nothing runs
    with a broken policy)."""
    from hermes_policy_commands import policy_from_config

    try:
        return policy_from_config(config)
    except ValueError as exc:
        raise ToolError(f"the approval settings in config.yaml are invalid: {exc}") from None


# --- output ---------------------------------------------------------------------------------


def approval_key(findings: Sequence[Finding]) -> str:
    """The key a session decision about ``findings`` is remembered under: every rule with the
    normalised text it matched (its target), so approving ``rm -rf /tmp/build`` for the
    session approves that again, never ``rm -rf ~/projects``."""
    parts = sorted({f"{f.rule.id}={f.text}" for f in findings})
    return "terminal:" + "\n".join(parts)


def _request(command: str, findings: Sequence[Finding]) -> ApprovalRequest:
    ids = sorted({f.rule.id for f in findings})
    reason = "; ".join(f"{f.description} (rule {f.rule.id})" for f in findings)
    return ApprovalRequest(
        action=command,
        reason=reason,
        key=approval_key(findings),
        tool="terminal",
        details={"command": command, "rules": ids, "matched": [f.text for f in findings]},
    )


def terminal_needs_approval(args: dict[str, Any]) -> ApprovalRequest | None:
    """The approval request the builtin rules make for ``args["command"]`` on their own (no
    environment: script files are not read, relative paths count as inside the working
    folder), or ``None`` when none is needed or the command is a hard block (always refused).

    The ``terminal`` handler asks through ``ctx.approve`` with the full check, so this is a
    preview for UIs and tests."""
    from hermes_policy_commands import decide

    command = args.get("command")
    if not isinstance(command, str):
        return None
    verdict = decide(command, home=os.environ.get("HOME", ""))
    if verdict.decision != "ask":
        return None
    return _request(command, verdict.asked)


@hookimpl
def hermes_approve(request: ApprovalRequest, context: ToolContext) -> str | None:
    """Answer ``once`` for a terminal command whose every match is excused by
    ``approvals.allow``; no opinion otherwise."""
    from hermes_policy_commands import decide

    if request.tool not in _COMMAND_TOOLS or request.once_only:
        return None  # leaving the sandbox is for a person to allow, never a pattern
    command = request.details.get("command")
    matched = request.details.get("matched")
    if not isinstance(command, str):
        return None
    try:
        policy = _policy(context.config)
    except ToolError:
        return None
    if not policy.allow:
        return None
    if isinstance(matched, list) and matched:
        texts = [str(t) for t in matched]
        if all(any(p.search(t) for p in policy.allow) for t in texts):
            return "once"
        return None
    if decide(command, policy, home=os.environ.get("HOME", "")).decision != "allow":
        return None
    return "once"


def refuse(rule: str, reason: str, command: str) -> ToolError:
    """The error refusing ``command`` under ``rule``: :func:`blocked` text the model sees."""
    return ToolError(blocked(rule, reason, command))


def _script_reader(env: Any, base: str | None) -> Callable[[str], str | None]:
    def read(path: str) -> str | None:
        if path.startswith("~"):
            path = os.path.expanduser(path)
        if not path.startswith("/") and base:
            path = posixpath.join(base, path)
        try:
            data = env.read_file(path)
        except (OSError, ValueError, NotImplementedError):
            return None
        if isinstance(data, bytes):
            return data.decode("utf-8", "replace")
        return data if isinstance(data, str) else None

    return read


def _findings(command: str, ctx: ToolContext, env: Any, workdir: str | None) -> list[Finding]:
    """The findings that decide ``command``, worked out by the policy's one code path for a
    command in its situation (:func:`hermes_policy_commands.situated.judge_command`, which
    ``hermes approvals check`` uses too): the home folder, the workspace, the start folder,
    the sandbox's walls, and the real paths of recursive deletes."""
    from hermes_policy_commands.situated import judge_command, situation

    current = getattr(env, "cwd", None)
    where = situation(
        ctx.config,
        env_cwd=current if isinstance(current, str) else None,
        workdir=workdir,
        sandboxed=bool(getattr(env, "sandbox_summary", "")),
    )
    reader = _script_reader(env, where.base)
    verdict = judge_command(
        command,
        where,
        _policy(ctx.config),
        read_script=reader,
        env=env,
        workdir=workdir,
        config=ctx.config,
    )
    return list(verdict.asked)


def guard(command: str, ctx: ToolContext, env: Any, workdir: str | None) -> None:
    """Refuse ``never`` decisions (builtin or configured); ask about ``ask`` ones, with a key
    naming each rule and its target; refuse what is not approved."""
    findings = _findings(command, ctx, env, workdir)
    hard = [f for f in findings if f.hard]
    if hard:
        first = hard[0]
        raise refuse(
            first.rule.id,
            f"{first.description}; this command is never run, with or without approval (the "
            "user must run it themselves if they really want it)",
            command,
        )
    if not findings:
        return
    request = _request(command, findings)
    if not ctx.approve(
        command,
        request.reason,
        key=request.key,
        command=command,
        rules=request.details["rules"],
        matched=request.details["matched"],
    ):
        descriptions = "; ".join(dict.fromkeys(f.description for f in findings))
        raise refuse(
            "+".join(request.details["rules"]),
            f"not approved (denied, or no one was available to approve it): {descriptions}",
            command,
        )


# --- the terminal tool ------------------------------------------------------------------------
