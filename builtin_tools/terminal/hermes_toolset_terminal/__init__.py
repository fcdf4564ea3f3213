"""The ``terminal`` toolset: run shell commands in the task's execution environment
(``terminal``) and manage the processes started in the background (``process``).

Every command is checked by :mod:`hermes_toolset_terminal.danger` before it runs:

- a hard block (``rm -rf /``, ``mkfs``, fork bombs, …) is refused inside the handler, whatever
  approved it (``--yolo`` included);
- a dangerous command needs approval: ``Tool.needs_approval`` returns an ``ApprovalRequest``
  whose reason names the rules that matched and whose key groups the session's decisions by
  those rules;
- ``approvals.extra_patterns`` adds rules from config (checked in the handler, asked through
  ``ctx.approve``) and ``approvals.allow`` excuses matches (through the ``hermes_approve`` hook
  this plugin implements, which answers ``once`` when every match is excused).
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import (
    ApprovalRequest,
    EnvironmentUnavailable,
    Tool,
    ToolCancelled,
    ToolContext,
    ToolError,
    Toolset,
    hookimpl,
)

from . import danger

__all__ = [
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_TIMEOUT",
    "cap_output",
    "hermes_approve",
    "hermes_register_toolsets",
    "process",
    "terminal",
    "terminal_needs_approval",
]

DEFAULT_TIMEOUT = 180
DEFAULT_MAX_TIMEOUT = 3600
DEFAULT_MAX_OUTPUT = 50_000
HEAD_SHARE = 0.4
_ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[@-Z\\-_]")
_COMMAND_TOOLS = frozenset({"terminal"})


# --- configuration --------------------------------------------------------------------------


def _section(config: Mapping[str, Any], name: str) -> Mapping[str, Any]:
    value = config.get(name) if isinstance(config, Mapping) else None
    return value if isinstance(value, Mapping) else {}


def _number(value: Any, default: float) -> float:
    try:
        number = float(value)
    except (TypeError, ValueError):
        return default
    return number if number > 0 else default


def _policy(config: Mapping[str, Any]) -> tuple[list[danger.Rule], list[re.Pattern[str]]]:
    """The rules from ``approvals.extra_patterns`` and the ``approvals.allow`` patterns;
    a malformed entry is a :class:`ToolError` (fail closed: nothing runs with a broken policy)."""
    approvals = _section(config, "approvals")
    try:
        return (
            danger.rules_from_config(approvals.get("extra_patterns")),
            danger.compile_allow(approvals.get("allow")),
        )
    except ValueError as exc:
        raise ToolError(f"the approval settings in config.yaml are invalid: {exc}") from None


# --- output ---------------------------------------------------------------------------------


def cap_output(text: str, limit: int = DEFAULT_MAX_OUTPUT) -> str:
    """Keep the head and the tail of ``text`` within ``limit`` characters, with a marker in the
    middle saying how much was cut."""
    if len(text) <= limit:
        return text
    head = int(limit * HEAD_SHARE)
    tail = max(0, limit - head)
    cut = len(text) - head - tail
    marker = (
        f"\n\n[... {cut} characters of output cut here ({len(text)} in total); "
        "showing the first and last parts ...]\n\n"
    )
    return text[:head] + marker + text[len(text) - tail :]


def _clean(text: str) -> str:
    return _ANSI.sub("", text).replace("\r\n", "\n")


def _max_output(config: Mapping[str, Any]) -> int:
    return int(_number(_section(config, "terminal").get("max_output_chars"), DEFAULT_MAX_OUTPUT))


# --- approval -------------------------------------------------------------------------------


def _request(command: str, findings: list[danger.Finding]) -> ApprovalRequest:
    ids = sorted({f.rule.id for f in findings})
    reason = "; ".join(f"{f.description} (rule {f.rule.id})" for f in findings)
    return ApprovalRequest(
        action=command,
        reason=reason,
        key="terminal:" + "+".join(ids),
        tool="terminal",
        details={"command": command, "rules": ids, "matched": [f.text for f in findings]},
    )


def terminal_needs_approval(args: dict[str, Any]) -> ApprovalRequest | None:
    """``Tool.needs_approval`` of ``terminal``: a request naming every builtin rule the command
    matches, or ``None`` (hard blocks are refused by the handler, so they ask no one)."""
    command = args.get("command")
    if not isinstance(command, str):
        return None
    findings = danger.check(command)
    if not findings or any(f.hard for f in findings):
        return None
    return _request(command, findings)


@hookimpl
def hermes_approve(request: ApprovalRequest, context: ToolContext) -> str | None:
    """Answer ``once`` for a terminal command whose every match is excused by
    ``approvals.allow``; no opinion otherwise."""
    if request.tool not in _COMMAND_TOOLS:
        return None
    command = request.details.get("command")
    if not isinstance(command, str):
        return None
    try:
        rules, allow = _policy(context.config)
    except ToolError:
        return None
    if not allow:
        return None
    if danger.check(command, danger.RULES + tuple(rules), allow=allow):
        return None
    return "once"


def _guard(command: str, ctx: ToolContext) -> None:
    """Refuse hard blocks (builtin or configured) and ask about configured patterns the
    builtin check did not already ask about."""
    rules, allow = _policy(ctx.config)
    findings = danger.check(command, danger.RULES + tuple(rules), allow=allow)
    hard = [f for f in findings if f.hard]
    if hard:
        first = hard[0]
        raise ToolError(
            f"BLOCKED: {first.description} (rule {first.rule.id}). This command is never run, "
            "with or without approval. Do not retry it or a variant of it; if the user really "
            "wants this, they must run it themselves."
        )
    extra = [f for f in findings if f.rule.source != "builtin"]
    if extra and not ctx.approve(
        command,
        _request(command, extra).reason,
        key="terminal:" + "+".join(sorted({f.rule.id for f in extra})),
        command=command,
        rules=[f.rule.id for f in extra],
    ):
        reason = "; ".join(f"{f.description} (rule {f.rule.id})" for f in extra)
        raise ToolError(
            f"BLOCKED: not approved: {reason}: {command}. Do not retry the same command; "
            "choose a safer one or ask the user."
        )


# --- the terminal tool ------------------------------------------------------------------------


def _environment(ctx: ToolContext) -> Any:
    try:
        return ctx.environment
    except EnvironmentUnavailable as exc:
        raise ToolError(f"the execution environment is not available: {exc}") from None


def _timeout(args: Mapping[str, Any], config: Mapping[str, Any]) -> float:
    terminal = _section(config, "terminal")
    default = _number(terminal.get("timeout"), DEFAULT_TIMEOUT)
    ceiling = max(default, _number(terminal.get("max_timeout"), DEFAULT_MAX_TIMEOUT))
    requested = args.get("timeout")
    if requested is None:
        return default
    return min(_number(requested, default), ceiling)


def terminal(args: dict[str, Any], ctx: ToolContext) -> str:
    """Run ``args["command"]`` in the task's environment and report output and exit code."""
    command = str(args.get("command") or "")
    if not command.strip():
        raise ToolError("command is empty")
    _guard(command, ctx)
    env = _environment(ctx)
    workdir = args.get("workdir") or None
    if args.get("background"):
        try:
            process_id = env.start_background(command, cwd=workdir)
        except NotImplementedError as exc:
            raise ToolError(str(exc) or "this environment runs no background processes") from None
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise ToolError(f"cannot start in {workdir}: {exc}") from None
        return (
            f"Started background process {process_id}: {command}\n"
            f'Use the process tool to follow it: process(action="poll"|"log"|"wait"|"kill", '
            f'process_id="{process_id}").'
        )
    timeout = _timeout(args, ctx.config)
    started = time.monotonic()
    result = env.run(command, cwd=workdir, timeout=timeout)
    elapsed = time.monotonic() - started
    output = cap_output(_clean(result.output), _max_output(ctx.config)).rstrip("\n")
    lines = [output if output else "(no output)"]
    if result.timed_out:
        lines.append(
            f"[timed out after {timeout:g} s: the command and its processes were killed; "
            f"exit code: {result.exit_code}. Run long commands with background=true, or pass a "
            "larger timeout.]"
        )
    else:
        lines.append(f"[exit code: {result.exit_code}; {elapsed:.1f} s]")
    return "\n".join(lines)


# --- the process tool -------------------------------------------------------------------------

_offsets: weakref.WeakKeyDictionary[Any, dict[str, int]] = weakref.WeakKeyDictionary()
_offsets_lock = threading.Lock()


def _state_line(state: Any) -> str:
    age = time.time() - state.started_at
    if state.running:
        status = f"running for {age:.0f} s"
    else:
        status = f"exited with code {state.exit_code}"
    return f"{state.id}: {status}; {state.output_chars} characters of output; $ {state.command}"


def _new_output(env: Any, process_id: str, limit: int) -> str:
    with _offsets_lock:
        seen = _offsets.setdefault(env, {})
        offset = seen.get(process_id, 0)
    text, end = env.read_output(process_id, offset)
    with _offsets_lock:
        seen[process_id] = end
    text = cap_output(_clean(text), limit).rstrip("\n")
    return text


def process(args: dict[str, Any], ctx: ToolContext) -> str:
    """List, poll, read, wait for or kill background processes of this task."""
    action = args.get("action")
    env = _environment(ctx)
    limit = _max_output(ctx.config)
    try:
        if action == "list":
            items = env.list_background()
            if not items:
                return "No background processes."
            return "\n".join(_state_line(p) for p in items)
        process_id = args.get("process_id")
        if not process_id:
            raise ToolError(f"process_id is required for action {action!r}")
        if action == "poll":
            state = env.poll(process_id)
            new = _new_output(env, process_id, limit)
            return _state_line(state) + ("\nNew output:\n" + new if new else "\nNo new output.")
        if action == "log":
            offset = int(args.get("offset") or 0)
            text, end = env.read_output(process_id, offset)
            body = cap_output(_clean(text), limit).rstrip("\n") or "(no output)"
            return f"{body}\n[output characters {offset} to {end}; next offset {end}]"
        if action == "wait":
            timeout = _timeout(args, ctx.config) if args.get("timeout") is not None else 60.0
            deadline = time.monotonic() + timeout
            state = env.poll(process_id)
            while state.running and time.monotonic() < deadline:
                if ctx.cancelled:
                    raise ToolCancelled("interrupted by the user")
                time.sleep(0.1)
                state = env.poll(process_id)
            new = _new_output(env, process_id, limit)
            note = "" if not state.running else f"\n[still running after waiting {timeout:g} s]"
            return _state_line(state) + note + ("\nNew output:\n" + new if new else "")
        if action == "kill":
            env.kill(process_id)
            state = env.poll(process_id)
            return "Killed. " + _state_line(state)
    except KeyError:
        known = ", ".join(p.id for p in env.list_background()) or "none"
        raise ToolError(
            f"no background process {args.get('process_id')!r} (known: {known})"
        ) from None
    except NotImplementedError:
        raise ToolError("this environment runs no background processes") from None
    raise ToolError(f"unknown action {action!r}; use list, poll, log, wait or kill")


TERMINAL_DESCRIPTION = """Run a shell command (bash) in the task's execution environment and \
return its output (stdout and stderr together) and exit code.

The working directory and exported variables persist between calls, as in one shell session \
(`cd` and `export` carry over; shell functions and options do not). Commands get no input: \
never run anything interactive (editors, pagers, prompts); use non-interactive flags (`-y`, \
`--no-pager`). Processes a command leaves running may be stopped when it ends: start \
servers, watchers and other long-running processes with background=true and follow them with \
the `process` tool. Long output is cut in the middle. Dangerous commands need the user's approval \
and some are never allowed; when a command is refused, do not retry it or a variant."""

TERMINAL_TOOL = Tool(
    name="terminal",
    description=TERMINAL_DESCRIPTION,
    parameters={
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": "The shell command to run."},
            "timeout": {
                "type": "integer",
                "minimum": 1,
                "description": "Seconds before the command is killed (default from config, "
                "terminal.timeout: 180).",
            },
            "background": {
                "type": "boolean",
                "description": "Start the command in the background and return its process id "
                "at once (for servers and long jobs).",
            },
            "workdir": {
                "type": "string",
                "description": "Working directory for this command only (absolute, or relative "
                "to the current one).",
            },
        },
        "required": ["command"],
    },
    handler=terminal,
    needs_approval=terminal_needs_approval,
    max_result_chars=DEFAULT_MAX_OUTPUT + 2_000,
)

PROCESS_TOOL = Tool(
    name="process",
    description=(
        "Manage background processes started with terminal(background=true): `list` them, "
        "`poll` one (state and output since the last poll), `log` (its output from `offset`), "
        "`wait` until it ends (up to `timeout` seconds, default 60), or `kill` it (and the "
        "processes it started)."
    ),
    parameters={
        "type": "object",
        "properties": {
            "action": {"type": "string", "enum": ["list", "poll", "log", "wait", "kill"]},
            "process_id": {"type": "string", "description": "The id terminal returned."},
            "timeout": {"type": "integer", "minimum": 1, "description": "For wait: seconds."},
            "offset": {
                "type": "integer",
                "minimum": 0,
                "description": "For log: the character offset to read from (default 0).",
            },
        },
        "required": ["action"],
    },
    handler=process,
    max_result_chars=DEFAULT_MAX_OUTPUT + 2_000,
)


@hookimpl
def hermes_register_toolsets(register: Any) -> None:
    """Register the ``terminal`` toolset."""
    register(
        Toolset(
            name="terminal",
            description="Run shell commands and background processes in the task's environment",
            tools=[TERMINAL_TOOL, PROCESS_TOOL],
        )
    )
