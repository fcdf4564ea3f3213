"""The ``terminal`` toolset: run shell commands in the task's execution environment
(``terminal``) and manage the processes started in the background (``process``).

Every command is decided by the command policy (:mod:`hermes_policy_commands`: parsed with a
real shell grammar, judged by rules written as data) inside the handler, before it runs, with
the task's environment at hand (script files the command runs are read through it, and relative
paths are resolved when the session has moved out of the working folder):

- the paths delete commands name (``rm -r``, ``find -delete``, ``rsync --delete``, ``xargs rm``)
  are resolved where the files are, every symlink followed
  (:func:`hermes_policy_commands.paths.resolve_deletes`), and judged again where they really
  lead: ``rm -rf build/`` with ``build`` a symlink to the home folder is ``rm -rf ~/``; one
  leading outside the working folder needs approval; one that cannot be resolved makes the
  command need approval;
- a ``never`` decision (``rm -rf /``, ``mkfs``, fork bombs, hermes's own configuration, … and
  ``hard: true`` config patterns) is refused whatever approved it (``--yolo`` included);
- an ``ask`` decision (builtin rules, ``approvals.rules``, ``approvals.extra_patterns``) is
  asked through ``ctx.approve``; the request's key names every rule with its normalised target, so a
  ``session`` decision covers exactly that rule on that target;
- ``approvals.allow`` excuses matches (checked by the policy, and by the ``hermes_approve``
  hook this plugin implements, which answers ``once`` when every match is excused).

Every refusal is :func:`hermes_hookspecs.blocked` text naming the rule.
"""

from __future__ import annotations

import re
import threading
import time
import weakref
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import (
    SandboxedEnvironment,
    Tool,
    ToolCancelled,
    ToolContext,
    ToolError,
    Toolset,
    hookimpl,
)

from .config_schema import (
    hermes_register_config,  # noqa: F401 - a hook of this plugin
    number,
    section,
)
from .policy import approval_key, guard, hermes_approve, refuse, terminal_needs_approval

__all__ = [
    "DEFAULT_MAX_OUTPUT",
    "DEFAULT_TIMEOUT",
    "approval_key",
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


# --- configuration --------------------------------------------------------------------------


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
    return int(number(section(config, "terminal").get("max_output_chars"), DEFAULT_MAX_OUTPUT))


def _timeout(args: Mapping[str, Any], config: Mapping[str, Any]) -> float:
    terminal = section(config, "terminal")
    default = number(terminal.get("timeout"), DEFAULT_TIMEOUT)
    ceiling = max(default, number(terminal.get("max_timeout"), DEFAULT_MAX_TIMEOUT))
    requested = args.get("timeout")
    if requested is None:
        return default
    return min(number(requested, default), ceiling)


def _sandbox(env: Any) -> SandboxedEnvironment | None:
    """``env`` when its commands run in an OS sandbox (that is on)."""
    if isinstance(env, SandboxedEnvironment) and env.sandbox_summary:
        return env
    return None


def _escalation(command: str, ctx: ToolContext, box: SandboxedEnvironment, workdir: Any) -> None:
    """Ask a person to run ``command`` once outside the sandbox; refuse unless approved."""
    where = workdir or getattr(box, "cwd", None) or "the working folder"
    reason = (
        f"run this one command OUTSIDE the sandbox, in {where}: with your full authority it "
        "can read and change every file you can (~/.ssh, hermes's own settings and sessions "
        f"too) and use the network (inside, it has: {box.sandbox_summary})"
    )
    if not ctx.approve(
        command, reason, key=f"escalate:{command}", once_only=True, command=command, escalate=True
    ):
        raise refuse(
            "sandbox-escalation",
            "not approved to run outside the sandbox (denied, or no one was available to "
            "approve it); run it inside the sandbox or let the user run it",
            command,
        )


def terminal(args: dict[str, Any], ctx: ToolContext) -> str:
    """Run ``args["command"]`` in the task's environment and report output and exit code."""
    command = str(args.get("command") or "")
    if not command.strip():
        raise ToolError("command is empty")
    env = ctx.environment
    workdir = args.get("workdir") or None
    guard(command, ctx, env, workdir)
    box = _sandbox(env)
    if box is not None and args.get("escalate"):
        _escalation(command, ctx, box, workdir)
        return _report(
            command, args, ctx, box.run_escalated, workdir, note="[ran outside the sandbox]"
        )
    if args.get("background"):
        try:
            process_id = env.start_background(command, cwd=workdir)
        except NotImplementedError as exc:
            raise ToolError(str(exc) or "this environment runs no background processes") from None
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise ToolError(f"cannot start in {workdir}: {exc}") from None
        return _started(process_id, command)
    return _report(command, args, ctx, env.run, workdir, hints=box)


def _started(process_id: str, command: str) -> str:
    return (
        f"Started background process {process_id}: {command}\n"
        f'Use the process tool to follow it: process(action="poll"|"log"|"wait"|"kill", '
        f'process_id="{process_id}").'
    )


def _report(
    command: str,
    args: Mapping[str, Any],
    ctx: ToolContext,
    run: Any,
    workdir: str | None,
    *,
    hints: SandboxedEnvironment | None = None,
    note: str = "",
) -> str:
    """Run ``command`` with ``run`` (in the foreground, or in the background when asked) and
    report its output, exit code, and the sandbox limit it met."""
    if args.get("background"):
        result = run(command, cwd=workdir, background=True)
        return _started(result.background_id, command) + (f"\n{note}" if note else "")
    timeout = _timeout(args, ctx.config)
    started = time.monotonic()
    result = run(command, cwd=workdir, timeout=timeout)
    elapsed = time.monotonic() - started
    output = cap_output(_clean(result.output), _max_output(ctx.config)).rstrip("\n")
    lines = [output if output else "(no output)"]
    hint = hints.sandbox_hint(result) if hints is not None else ""
    if hint:
        lines.append(hint)
    if note:
        lines.append(note)
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
    env = ctx.environment
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
and some are never allowed; when a command is refused, do not retry it or a variant.

Commands run in a sandbox: they may write only the working folder and /tmp, see no network \
and not see credentials or hermes's own files. When a command fails on one of those limits, the \
output says which; if the task truly needs it, repeat the same call with escalate=true: the \
user is asked to allow that one command outside the sandbox (never remembered)."""

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
            "escalate": {
                "type": "boolean",
                "description": "Run this one command outside the sandbox, with the user's full "
                "authority (files, network). Only after it failed on a sandbox limit and the "
                "task needs it: the user is asked each time; with no one to ask it is refused.",
            },
        },
        "required": ["command"],
    },
    handler=terminal,
    max_result_chars=DEFAULT_MAX_OUTPUT + 2_000,
    timeout=0,  # every command has its own timeout (at most terminal.max_timeout)
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
    timeout=0,  # `wait` has its own timeout (at most terminal.max_timeout)
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
