"""The tool call hooks: ``pre_tool_call``, ``post_tool_call``, ``transform_terminal_output``,
``transform_tool_result`` and ``pre_approval_request`` of Hermes agent plugins, called from
``hermes_pre_tool_call``, ``hermes_post_tool_call`` and ``hermes_approve``."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from hermes_hookspecs import hookimpl

from . import current, turns
from .locate import host_of

_EXIT_LINE = re.compile(r"^\[(?:exit code: (-?\d+)|timed out .*exit code: (-?\d+))")


@hookimpl
def hermes_pre_tool_call(call: Any, context: Any) -> Any:
    """``pre_tool_call``: every callback runs; ``modify`` arguments are merged in order, a
    ``block`` wins over an ``approve``, an ``approve`` goes to the approval gate, and a callback
    that raises blocks the call (it made no decision)."""
    host = host_of(context)
    if not host.has_hook("pre_tool_call"):
        return None
    from hermes_hookspecs import Block, blocked

    payload = {
        "tool_name": call.name,
        "args": dict(call.arguments),
        "task_id": context.task_id,
        "session_id": context.session_id,
        "tool_call_id": call.id,
        **turns.turn_ids(context.session_id),
        "middleware_trace": [],
    }
    with current.inside(context):
        results = host.invoke("pre_tool_call", payload, fail_closed=True)
    modified: dict[str, Any] | None = None
    block: tuple[str, str] | None = None
    approve: tuple[str, dict[str, Any]] | None = None
    for key, result in results:
        if not isinstance(result, Mapping):
            continue
        action = result.get("action")
        if action == "modify" and isinstance(result.get("args"), Mapping) and result["args"]:
            modified = {**(modified if modified is not None else call.arguments), **result["args"]}
        elif action == "block" and isinstance(result.get("message"), str) and result["message"]:
            block = block or (key, result["message"])
        elif action == "approve" and approve is None:
            approve = (key, dict(result))
    if block is not None:
        return Block(blocked(f"hermes-plugin:{block[0]}", block[1], call.name))
    if approve is not None:
        key, directive = approve
        message = directive.get("message")
        if not isinstance(message, str):
            message = ""
        rule_key = directive.get("rule_key")
        if not isinstance(rule_key, str):
            rule_key = ""
        arguments = modified if modified is not None else call.arguments
        try:
            approved = context.approve(
                f"{call.name} {json.dumps(arguments, ensure_ascii=False, sort_keys=True)}",
                message or f"the Hermes plugin {key} asks for approval of {call.name}",
                key=rule_key.strip() or call.name,
                plugin=key,
            )
        except Exception as exc:  # the gate failing must not let the call through
            approved = False
            message = f"the approval gate failed ({type(exc).__name__}: {exc})"
        if not approved:
            reason = (
                f"not approved: {message}" if message else "approval was required and not given"
            )
            return Block(blocked(f"hermes-plugin:{key}", reason, call.name))
    return modified


_INTERRUPTED = "Error: interrupted by the user"
_TIMED_OUT = re.compile(r"Error: tool '[^']*' did not finish within ")
_RULE = re.compile(r"\(rule ([^)]*)\)")


def tool_status(content: str, is_error: bool) -> tuple[str, str | None, str | None]:
    """The ``status``, ``error_type`` and ``error_message`` the Hermes agent passes to
    ``post_tool_call`` and ``transform_tool_result`` for a tool result.

    ``blocked`` for a refusal (``plugin_block`` when a Hermes agent plugin refused it),
    ``cancelled`` for an interrupt, ``timeout`` for a tool that did not finish, ``error``
    for any other failed call and for a result that is a JSON object with an ``error`` key
    (as the Hermes agent reads its tools' answers), else ``ok``.

    :param content: the result text the model sees.
    :param is_error: whether the host marked the call as failed.
    """
    if content.startswith("BLOCKED:"):
        rule = _RULE.search(content)
        kind = "plugin_block" if rule and rule.group(1).startswith("hermes-plugin:") else "blocked"
        return "blocked", kind, content
    if is_error:
        if content.startswith(_INTERRUPTED):
            return "cancelled", "keyboard_interrupt", content
        if _TIMED_OUT.match(content):
            return "timeout", "tool_timeout", content
        return "error", "tool_error", content
    try:
        parsed = json.loads(content) if content.lstrip().startswith("{") else None
    except ValueError:
        parsed = None
    if isinstance(parsed, dict) and parsed.get("error"):
        return "error", "tool_error", str(parsed["error"])
    return "ok", None, None


@hookimpl
def hermes_post_tool_call(call: Any, result: Any, context: Any) -> str | None:
    """``transform_terminal_output`` (terminal tool only), then ``post_tool_call`` observers,
    then ``transform_tool_result`` (the first string replaces the result)."""
    host = host_of(context)
    hooks = ("transform_terminal_output", "post_tool_call", "transform_tool_result")
    if not any(host.has_hook(h) for h in hooks):
        return None
    content = result.content
    with current.inside(context):
        if call.name == "terminal" and not result.is_error and host.has_hook(hooks[0]):
            content = _transform_terminal(host, call, content, context)
        status, error_type, error_message = tool_status(result.content, result.is_error)
        payload = {
            "tool_name": call.name,
            "args": dict(call.arguments),
            "result": content,
            "task_id": context.task_id,
            "session_id": context.session_id,
            "tool_call_id": call.id,
            **turns.turn_ids(context.session_id),
            "duration_ms": int(result.duration * 1000),
            "status": status,
            "error_type": error_type,
            "error_message": error_message,
            "middleware_trace": [],
        }
        host.invoke("post_tool_call", payload)
        for _key, replaced in host.invoke("transform_tool_result", payload):
            if isinstance(replaced, str):
                content = replaced
                break
    return content if content != result.content else None


def _transform_terminal(host: Any, call: Any, content: str, context: Any) -> str:
    lines = content.split("\n")
    match = _EXIT_LINE.match(lines[-1]) if lines else None
    if match is None:
        return content
    output = "\n".join(lines[:-1])
    returncode = int(match.group(1) or match.group(2))
    backend = (context.config.get("terminal") or {}).get("backend", "local")
    payload = {
        "command": str(call.arguments.get("command") or ""),
        "output": "" if output == "(no output)" else output,
        "returncode": returncode,
        "task_id": context.task_id,
        "env_type": backend,
    }
    for _key, replaced in host.invoke("transform_terminal_output", payload):
        if isinstance(replaced, str):
            return f"{replaced}\n{lines[-1]}"
    return content


@hookimpl
def hermes_approve(request: Any, context: Any) -> None:
    """``pre_approval_request`` observers; never decides (returns ``None``)."""
    host = host_of(context)
    if host.has_hook("pre_approval_request"):
        host.invoke(
            "pre_approval_request",
            {
                "command": request.action,
                "description": request.reason,
                "pattern_key": request.cache_key,
                "pattern_keys": [request.cache_key],
                "session_key": context.session_id,
                "surface": "cli",
                "turn_id": turns.turn_ids(context.session_id)["turn_id"],
                "tool_call_id": context.call_id,
            },
        )
