"""The hermes plugin that runs Hermes agent plugins: each hermes hook below calls the Hermes agent
hooks that have the same meaning, with the keyword arguments and return conventions the Hermes
agent documents (see docs/hermes-plugins.md)."""

from __future__ import annotations

import json
import re
import sys
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import hookimpl
from hermes_runtime.home import default_home

from . import current
from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin

_pinned: Any = None
_state_lock = threading.Lock()
_platforms: dict[str, str] = {}
_turn_context: dict[tuple[str, int, int], str] = {}
_turn_user: dict[str, Any] = {}
_pending: deque[dict[str, Any]] = deque(maxlen=64)
_turns: dict[str, dict[str, Any]] = {}


def subagent_status(status: str, summary: str) -> str:
    """The Hermes agent's ``child_status`` of ``subagent_stop`` for a child that ended with
    ``status`` (of ``hermes_subagent_stop``) and ``summary``: ``interrupted``; ``error`` for a
    child that raised; else ``completed`` when it left a summary (at its step limit too), and
    ``failed`` when it did not."""
    if status in ("interrupted", "error"):
        return status
    return "completed" if summary.strip() and summary.strip() != "(empty)" else "failed"


def _next_request(session_id: str, task_id: str, messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The ``turn_id``, ``api_request_id`` and ``api_call_count`` of a new model request, made
    as the Hermes agent makes them: a turn starts with a new user message, its id is
    ``<session>:<task>:<8 hex>``, and its requests are ``<turn_id>:api:<n>``."""
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    last = users[-1] if users else -1
    key = (last, hash(_text(messages[last].get("content"))) if users else 0)
    with _state_lock:
        turn = _turns.get(session_id)
        if turn is None or turn["key"] != key:
            turn_id = f"{session_id or 'session'}:{task_id}:{uuid.uuid4().hex[:8]}"
            turn = _turns[session_id] = {"key": key, "turn_id": turn_id, "calls": 0}
        turn["calls"] += 1
        turn["api_request_id"] = f"{turn['turn_id']}:api:{turn['calls']}"
        return {
            "turn_id": turn["turn_id"],
            "api_request_id": turn["api_request_id"],
            "api_call_count": turn["calls"],
        }


def _turn_ids(session_id: str) -> dict[str, str]:
    """The ``turn_id`` and the last ``api_request_id`` of the session's current turn."""
    with _state_lock:
        turn = _turns.get(session_id) or {}
    return {"turn_id": turn.get("turn_id", ""), "api_request_id": turn.get("api_request_id", "")}


PLUGIN_SOURCE = "plugin"
"""The session source of ``ctx.llm`` completions."""
SECTION_ORDER = 500
"""Where system prompt sections go in the volatile tier: after the memory snapshot (100), before
the session facts (1000)."""
SKILL_TOOL = "hermes_plugin_skill"
SKILL_TOOLSET = "hermes_plugin_skills"
_EXIT_LINE = re.compile(r"^\[(?:exit code: (-?\d+)|timed out .*exit code: (-?\d+))")


# --- which host ----------------------------------------------------------------------------


def use_host(host: Any) -> None:
    """Serve every hook of this process from ``host`` (a loaded ``HermesPluginHost``), whatever
    home the caller runs in; ``None`` returns to one host per home folder (embedders, tests)."""
    global _pinned
    _pinned = host


_read: dict[Path, tuple[tuple[int, int, int], dict[str, Any]]] = {}


def _read_config(home: Path) -> dict[str, Any]:
    """``home/config.yaml`` as data (``{}`` when missing or unreadable), read again only when
    the file changed: hook calls outside a command (the gateway's turns) ask for it each time."""
    path = home / "config.yaml"
    try:
        status = path.stat()
    except OSError:
        return {}
    stamp = (status.st_mtime_ns, status.st_size, status.st_ino)
    known = _read.get(path)
    if known is not None and known[0] == stamp:
        return known[1]
    import yaml

    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8-sig")) or {}
    except (OSError, yaml.YAMLError):
        return {}
    data = data if isinstance(data, dict) else {}
    _read[path] = (stamp, data)
    return data


def _as_mapping(config: Any) -> Mapping[str, Any]:
    data = getattr(config, "data", config)
    return data if isinstance(data, Mapping) else {}


def _argv_profile(argv: list[str]) -> str | None:
    """The ``-p``/``--profile`` of the command line, read before click parses it (the commands of
    Hermes agent plugins must be known before that)."""
    skip = False
    for i, arg in enumerate(argv):
        if skip:
            skip = False
            continue
        if arg in ("-p", "--profile") and i + 1 < len(argv):
            return argv[i + 1]
        if arg.startswith("--profile="):
            return arg.split("=", 1)[1]
        if arg == "--plugins":
            skip = True  # its value
        elif not arg.startswith("-"):
            return None  # the command name: options after it are the command's
    return None


def _where(context: Any = None) -> tuple[Path, Mapping[str, Any]]:
    """The home folder and configuration of the running command, tool call or process."""
    command = current.command_context()
    if command is not None:
        return Path(command.home), _as_mapping(command.config)
    context = context if context is not None else current.tool_context()
    if context is not None and getattr(context, "hermes_home", None) is not None:
        return Path(context.hermes_home), _as_mapping(context.config)
    home = default_home()
    return home, _read_config(home)


def _host(context: Any = None) -> Any:
    if _pinned is not None:
        return _pinned
    from .host import host_for

    home, config = _where(context)
    return host_for(home, config)


# --- registration --------------------------------------------------------------------------


@hookimpl
def hermes_register_toolsets(register: Callable[[Any], None]) -> None:
    """The tools of Hermes agent plugins, one toolset per Hermes toolset name, and the
    ``hermes_plugin_skill`` tool when a plugin registered skills."""
    from .tools import toolsets

    host = _host()
    for toolset in toolsets(host.tools.values(), host.toolset_descriptions()):
        register(toolset)
    if host.skills:
        register(_skills_toolset(host))


def _skills_toolset(host: Any) -> Any:
    from hermes_hookspecs import Tool, ToolError, Toolset

    names = sorted(host.skills)

    def read_skill(args: dict[str, Any], ctx: Any) -> str:
        entry = host.skills.get(str(args.get("name") or ""))
        if entry is None:
            raise ToolError(f"no plugin skill {args.get('name')!r}; known: {', '.join(names)}")
        return Path(entry["path"]).read_text(encoding="utf-8")

    listing = "; ".join(f"{n}: {host.skills[n]['description'] or '-'}" for n in names)
    tool = Tool(
        name=SKILL_TOOL,
        description=f"Read a skill that a Hermes agent plugin ships. Skills: {listing}",
        parameters={
            "type": "object",
            "properties": {"name": {"type": "string", "enum": names}},
            "required": ["name"],
        },
        handler=read_skill,
    )
    return Toolset(
        name=SKILL_TOOLSET, description="Skills shipped by Hermes agent plugins", tools=[tool]
    )


@hookimpl
def hermes_prompt_layers(context: Any) -> list[Any] | None:
    """The ``register_system_prompt_section`` sections, sorted by id, after the memory snapshot
    (tier ``volatile``); built once per session like every layer."""
    if _pinned is not None:
        host = _pinned
    elif current.command_context() is not None or not context.hermes_home:
        host = _host()
    else:
        from .host import host_for

        host = host_for(Path(context.hermes_home), context.config)
    if not host.prompt_sections:
        return None
    from hermes_hookspecs import PromptLayer

    from .manifest import profile_name

    info = {
        "session_id": context.session_id,
        "model": context.model,
        "provider": context.provider,
        "platform": context.platform,
        "profile_name": profile_name(host.home),
        "cwd": context.cwd,
    }
    return [
        PromptLayer(
            name=f"hermes-plugin:{section_id}",
            text=f"## Plugin context: {section_id}\n\n{text}",
            tier="volatile",
            order=SECTION_ORDER + index,
        )
        for index, (section_id, text) in enumerate(host.render_prompt_sections(info))
    ]


@hookimpl
def hermes_register_commands(cli: Any) -> None:
    """``hermes agent-plugins``, and the ``register_cli_command`` commands of Hermes agent
    plugins. Plugins are imported here only when ``plugins.enabled`` names at least one, so a
    plain ``hermes --help`` imports none of them."""
    from .cli_adapter import agent_plugins_group, argparse_command

    cli.add_command(agent_plugins_group(_host))
    home = default_home()
    profile = _argv_profile(sys.argv[1:])
    if profile:
        home = home / "profiles" / profile
    config = _read_config(home)
    enabled = (config.get("plugins") or {}).get("enabled") if isinstance(config, dict) else None
    if not enabled:
        return
    from .host import host_for

    host = _pinned if _pinned is not None else host_for(home, config)
    for name, entry in sorted(host.cli_commands.items()):
        cli.add_command(argparse_command(name, entry))


@hookimpl
def hermes_describe_plugins(report: Callable[[Any], None]) -> None:
    """One report per Hermes agent plugin found, loaded or not."""
    for item in _host().reports():
        report(item)


# --- tool calls ----------------------------------------------------------------------------


@hookimpl
def hermes_pre_tool_call(call: Any, context: Any) -> Any:
    """``pre_tool_call``: every callback runs; ``modify`` arguments are merged in order, a
    ``block`` wins over an ``approve``, an ``approve`` goes to the approval gate, and a callback
    that raises blocks the call (it made no decision)."""
    host = _host(context)
    if not host.has_hook("pre_tool_call"):
        return None
    from hermes_hookspecs import Block, blocked

    payload = {
        "tool_name": call.name,
        "args": dict(call.arguments),
        "task_id": context.task_id,
        "session_id": context.session_id,
        "tool_call_id": call.id,
        **_turn_ids(context.session_id),
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
    host = _host(context)
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
            **_turn_ids(context.session_id),
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
    host = _host(context)
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
                "turn_id": _turn_ids(context.session_id)["turn_id"],
                "tool_call_id": context.call_id,
            },
        )


# --- sessions ------------------------------------------------------------------------------


@hookimpl
def hermes_session_start(session: Any) -> None:
    """``on_session_start``."""
    with _state_lock:
        _platforms[session.id] = session.source or "cli"
    host = _host()
    if session.source != PLUGIN_SOURCE and host.has_hook("on_session_start"):
        host.invoke(
            "on_session_start",
            {"session_id": session.id, "model": session.model, "platform": session.source},
        )


@hookimpl
def hermes_session_end(session: Any) -> None:
    """``on_session_end`` and ``on_session_finalize``."""
    if session.source == PLUGIN_SOURCE:
        with _state_lock:
            _platforms.pop(session.id, None)
        return
    host = _host()
    reason = getattr(session, "end_reason", "") or ""
    payload = {
        "session_id": session.id,
        "task_id": session.id,
        "turn_id": _turn_ids(session.id)["turn_id"],
        "completed": True,
        "failed": False,
        "interrupted": False,
        "turn_exit_reason": reason,
        "reason": reason,
        "model": session.model,
        "platform": session.source,
    }
    host.invoke("on_session_end", payload)
    host.invoke(
        "on_session_finalize",
        {"session_id": session.id, "platform": session.source, "reason": reason},
    )
    with _state_lock:
        _platforms.pop(session.id, None)
        _turn_user.pop(session.id, None)
        _turns.pop(session.id, None)
        for key in [k for k in _turn_context if k[0] == session.id]:
            del _turn_context[key]


# --- model requests ------------------------------------------------------------------------


def _text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(p.get("text", "")) for p in content if isinstance(p, Mapping))
    return ""


def _with_context(message: dict[str, Any], extra: str) -> dict[str, Any]:
    content = message.get("content")
    if isinstance(content, list):
        return {**message, "content": [*content, {"type": "text", "text": extra}]}
    return {**message, "content": f"{content or ''}\n\n{extra}"}


def _inject_turn_context(host: Any, request: Any, turn_id: str) -> None:
    """``pre_llm_call``: once per turn, when the request ends with a new user message; what the
    callbacks return is appended to that user message in this and every later request of the
    session (the stored transcript keeps the clean message)."""
    messages = request.messages
    users = [i for i, m in enumerate(messages) if m.get("role") == "user"]
    if not users:
        return
    index = users[-1]
    message = messages[index]
    key = (request.session_id, index, hash(_text(message.get("content"))))
    with _state_lock:
        known = _turn_context.get(key)
    if known is None:
        if index != len(messages) - 1:
            return
        history = [dict(m) for m in messages if m.get("role") != "system"]
        payload = {
            "session_id": request.session_id,
            "task_id": request.task_id,
            "turn_id": turn_id,
            "user_message": message.get("content"),
            "conversation_history": history,
            "is_first_turn": len(users) == 1,
            "model": request.model,
            "platform": _platforms.get(request.session_id, "cli"),
            "parent_session_id": "",
            "sender_id": "",
        }
        parts = []
        for _plugin, result in host.invoke("pre_llm_call", payload):
            text = result.get("context") if isinstance(result, Mapping) else result
            if isinstance(text, str) and text.strip():
                parts.append(text.strip())
        known = "\n\n".join(parts)
        with _state_lock:
            _turn_context[key] = known
    if known:
        request.messages = [
            *messages[:index],
            _with_context(message, known),
            *messages[index + 1 :],
        ]


def _plugin_call(session_id: str) -> bool:
    """Whether the session is a ``ctx.llm`` completion: like the Hermes agent's auxiliary calls,
    those fire no turn or request hooks."""
    return _platforms.get(session_id) == PLUGIN_SOURCE


@hookimpl
def hermes_before_request(request: Any) -> None:
    """``pre_llm_call`` (turn context) and ``pre_api_request`` (observer)."""
    host = _host()
    if _plugin_call(request.session_id):
        with _state_lock:
            _pending.append({"session_id": request.session_id})
        return
    last_user = next((m for m in reversed(request.messages) if m.get("role") == "user"), None)
    with _state_lock:
        _turn_user[request.session_id] = last_user.get("content") if last_user else ""
    history = [dict(m) for m in request.messages if m.get("role") != "system"]
    ids = _next_request(request.session_id, request.task_id, request.messages)
    if host.has_hook("pre_llm_call"):
        _inject_turn_context(host, request, ids["turn_id"])
    started = time.time()
    where = {
        "provider": request.provider,
        "base_url": request.base_url,
        "api_mode": request.api_mode,
    }
    api_request_id = ids["api_request_id"]
    with _state_lock:
        _pending.append(
            {
                "api_request_id": api_request_id,
                "started_at": started,
                "session_id": request.session_id,
                "task_id": request.task_id,
                "model": request.model,
                "message_count": len(request.messages),
                "history": history,
                **ids,
                **where,
            }
        )
    if not host.has_hook("pre_api_request"):
        return
    chars = sum(len(_text(m.get("content"))) for m in request.messages)
    host.invoke(
        "pre_api_request",
        {
            "task_id": request.task_id,
            "turn_id": ids["turn_id"],
            "api_request_id": api_request_id,
            "session_id": request.session_id,
            "user_message": _turn_user.get(request.session_id, ""),
            "conversation_history": history,
            "platform": _platforms.get(request.session_id, "cli"),
            "model": request.model,
            **where,
            "api_call_count": ids["api_call_count"],
            "retry_count": 0,
            "request_messages": request.messages,
            "message_count": len(request.messages),
            "tool_count": len(request.tools),
            "approx_input_tokens": chars // 4,
            "request_char_count": chars,
            "max_tokens": request.max_tokens,
            "started_at": started,
            "middleware_trace": [],
            "request": {
                "model": request.model,
                "message_count": len(request.messages),
                "tools": request.tool_names,
                "max_tokens": request.max_tokens,
            },
        },
    )


@hookimpl
def hermes_after_response(response: Any) -> None:
    """``post_api_request`` (observer); for a final answer (no tool calls) also
    ``transform_llm_output`` (the first non-empty string replaces the answer) and
    ``post_llm_call`` (observer)."""
    host = _host()
    with _state_lock:
        pending = _pending.pop() if _pending else {}
    session_id = pending.get("session_id", "")
    if _plugin_call(session_id):
        return
    platform = _platforms.get(session_id, "cli")
    model = pending.get("model") or response.model
    message = response.message
    tool_calls = message.get("tool_calls") or []
    usage = response.usage
    if host.has_hook("post_api_request"):
        ended = time.time()
        started = pending.get("started_at", ended)
        host.invoke(
            "post_api_request",
            {
                "task_id": pending.get("task_id", ""),
                "turn_id": pending.get("turn_id", ""),
                "api_request_id": pending.get("api_request_id", ""),
                "session_id": session_id,
                "platform": platform,
                "model": model,
                "provider": pending.get("provider", ""),
                "base_url": pending.get("base_url", ""),
                "api_mode": pending.get("api_mode", ""),
                "api_call_count": pending.get("api_call_count", 1),
                "api_duration": ended - started,
                "started_at": started,
                "ended_at": ended,
                "finish_reason": response.finish_reason,
                "message_count": pending.get("message_count", 0),
                "response_model": response.model or model,
                "response": {
                    "content": _text(message.get("content")),
                    "tool_calls": [c.get("function", {}).get("name") for c in tool_calls],
                    "finish_reason": response.finish_reason,
                    "model": response.model or model,
                },
                "usage": {
                    "prompt_tokens": usage.input_tokens,
                    "input_tokens": usage.input_tokens,
                    "output_tokens": usage.output_tokens,
                    "completion_tokens": usage.output_tokens,
                    "total_tokens": usage.input_tokens + usage.output_tokens,
                    "cache_read_tokens": usage.cache_read_tokens,
                    "cache_write_tokens": usage.cache_write_tokens,
                    "reasoning_tokens": usage.reasoning_tokens,
                },
                "assistant_message": dict(message),
                "assistant_content_chars": len(_text(message.get("content"))),
                "assistant_tool_call_count": len(tool_calls),
            },
        )
    if tool_calls:
        return
    text = _text(message.get("content"))
    if host.has_hook("transform_llm_output"):
        payload = {
            "response_text": text,
            "session_id": session_id,
            "model": model,
            "platform": platform,
        }
        for _key, replaced in host.invoke("transform_llm_output", payload):
            if isinstance(replaced, str) and replaced:
                message["content"] = text = replaced
                break
    if host.has_hook("post_llm_call"):
        host.invoke(
            "post_llm_call",
            {
                "session_id": session_id,
                "task_id": pending.get("task_id", ""),
                "turn_id": pending.get("turn_id", ""),
                "user_message": _turn_user.get(session_id, ""),
                "assistant_response": text,
                "conversation_history": [*pending.get("history", []), dict(message)],
                "model": model,
                "platform": platform,
            },
        )


# --- subagents -----------------------------------------------------------------------------


@hookimpl
def hermes_subagent_start(parent_session_id: str, child_session_id: str, goal: str) -> None:
    """``subagent_start``."""
    host = _host()
    if host.has_hook("subagent_start"):
        host.invoke(
            "subagent_start",
            {
                "parent_session_id": parent_session_id,
                "parent_turn_id": _turn_ids(parent_session_id)["turn_id"],
                "parent_subagent_id": "",
                "child_session_id": child_session_id,
                "child_subagent_id": child_session_id,
                "child_role": "leaf",
                "child_goal": goal,
            },
        )


@hookimpl
def hermes_subagent_stop(
    parent_session_id: str, child_session_id: str, status: str, duration: float, outcome: Any
) -> None:
    """``subagent_stop``."""
    host = _host()
    if host.has_hook("subagent_stop"):
        host.invoke(
            "subagent_stop",
            {
                "parent_session_id": parent_session_id,
                "parent_turn_id": _turn_ids(parent_session_id)["turn_id"],
                "child_session_id": child_session_id,
                "child_role": "leaf",
                "child_summary": getattr(outcome, "text", "") or "",
                "child_status": subagent_status(status, getattr(outcome, "text", "") or ""),
                "tool_call_history": [],
                "duration_ms": int(duration * 1000),
            },
        )
