"""How the terminal tool decides a command before it runs: the command policy's findings (with
the paths recursive deletes really reach), the approval asked of a person, the refusals, and
the ``hermes_approve`` hook that excuses what ``approvals.allow`` allows."""

from __future__ import annotations

import os
import posixpath
import shlex
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import ApprovalRequest, ToolContext, ToolError, blocked, hookimpl

from .config_schema import section

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


def _working_folder(ctx: ToolContext, env: Any, workdir: str | None) -> str | None:
    """The folder the command starts in, when relative paths there are *not* the user's
    working folder (the session moved to ``/``, the home folder, a system folder or outside
    ``terminal.cwd``); ``None`` when relative paths stay inside the working folder."""
    from hermes_policy_commands import decide

    current = getattr(env, "cwd", None)
    base = current if isinstance(current, str) else None
    if workdir:
        base = posixpath.normpath(posixpath.join(base or "", os.path.expanduser(str(workdir))))
    if not base or not base.startswith("/"):
        return None if not workdir else str(workdir)
    root = section(ctx.config, "terminal").get("cwd")
    home = os.environ.get("HOME", "")
    if base in ("/", home.rstrip("/")) or decide(f"rm -r {base}", home=home).decision == "never":
        return base
    if isinstance(root, str) and root:
        root = posixpath.normpath(os.path.expanduser(root))
        if base != root and not base.startswith(root.rstrip("/") + "/"):
            return base
    return None


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


def _delete_operands(commands: Sequence[Any]) -> list[str]:
    """The paths the recursive deletes of a command name (``rm -r``, ``find -delete``,
    ``rsync --delete``), from the folder the command starts in; a part only known at run time
    is cut off (``find build/ -delete`` deletes under ``build/``)."""
    from hermes_policy_commands.shell import UNKNOWN

    out: list[str] = []
    for simple in commands:
        argv = simple.argv
        name = posixpath.basename(argv[0]) if argv else ""
        flags = [a for a in argv[1:] if a.startswith("-")]
        recursive = name in ("rm", "rmdir") and any(
            a.startswith("--rec") or (not a.startswith("--") and ("r" in a or "R" in a))
            for a in flags
        )
        if not (recursive or (name == "rsync" and any(a.startswith("--del") for a in flags))):
            continue
        operands = [a for a in argv[1:] if not a.startswith("-")]
        for path in operands[-1:] if name == "rsync" else operands:
            path = path.split(UNKNOWN, 1)[0]
            cwd = simple.cwd
            if path and cwd and UNKNOWN not in cwd and not path.startswith(("/", "~")):
                path = posixpath.join(cwd, path)
            if path:
                out.append(path)
    return list(dict.fromkeys(out))


def _findings(command: str, ctx: ToolContext, env: Any, workdir: str | None) -> list[Finding]:
    """The findings that decide ``command``: the policy's, and again for every delete operand
    a symlink leads elsewhere (``rm -rf build/`` with ``build`` a link to the home folder)."""
    from hermes_policy_commands import decide
    from hermes_policy_commands.engine import Finding, builtin_rules
    from hermes_policy_commands.paths import resolve_deletes

    policy = _policy(ctx.config)
    start = _working_folder(ctx, env, workdir)
    current = getattr(env, "cwd", None)
    base = start or (workdir if workdir else current if isinstance(current, str) else None)
    home = os.environ.get("HOME", "")
    hermes_home = os.environ.get("HERMES_HOME", "")
    options: dict[str, Any] = {"home": home, "cwd": start, "hermes_home": hermes_home}
    verdict = decide(command, policy, read_script=_script_reader(env, base), **options)
    findings = list(verdict.asked)
    deletes = _delete_operands(verdict.commands)
    if verdict.decision == "never" or not deletes:
        return findings
    if len(deletes) > 64:
        return findings + [_uncheckable(builtin_rules(), command)]
    resolved = resolve_deletes(env, deletes, workdir, ctx.config)
    for path in deletes:
        if path not in resolved:
            return findings + [_uncheckable(builtin_rules(), command)]
        real = resolved[path]
        if real is not None:
            again = decide("rm -rf -- " + shlex.quote(real), policy, **options)
            findings += [Finding(f.rule, f.text) for f in again.asked]
    never = [f for f in findings if f.hard]
    return never or [f for f in findings if f.decision == "ask"]


def _uncheckable(rules: Sequence[Any], command: str) -> Finding:
    from hermes_policy_commands.engine import Finding

    rule = next(r for r in rules if r.id == "uncheckable")
    return Finding(rule, command)


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
