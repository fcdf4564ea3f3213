"""Every hook a Hermes agent plugin registers gets the keyword arguments the Hermes agent 0.19
passes it, with values of the same kind (one test per row of the table in
docs/hermes-plugins.md)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hermes_compat_agent_plugins import plugin as bridge
from hermes_compat_agent_plugins.host import HermesPluginHost

from hermes_core.testing import Agent, ScriptedModel, plugin_manager, text, tool_call
from hermes_core.testing.kit import scripted_provider_plugin

COMPAT = "hermes-agent-compat"
BASE_URL = "http://127.0.0.1:9/v1"

RECORDER = """
import json

CALLS = []
HOOKS = [
    "pre_tool_call", "post_tool_call", "transform_tool_result", "transform_terminal_output",
    "pre_llm_call", "post_llm_call", "pre_api_request", "post_api_request",
    "transform_llm_output", "on_session_start", "on_session_end", "on_session_finalize",
    "pre_approval_request",
]


def _recorder(name):
    def record(**kwargs):
        CALLS.append((name, kwargs))
        return None
    return record


def _fail(args, **kwargs):
    return json.dumps({"error": "no such city"})


def register(ctx):
    for name in HOOKS:
        ctx.register_hook(name, _recorder(name))
    ctx.register_tool(name="weather", toolset="rec", handler=_fail, schema={
        "name": "weather", "description": "Weather",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}}})
    CTX.append(ctx)


CTX = []
"""

# What the Hermes agent 0.19 passes each hook (keyword names), from its call sites.
HERMES_ARGUMENTS = {
    "pre_tool_call": {"tool_name", "args", "task_id", "session_id", "tool_call_id"},
    "post_tool_call": {
        "tool_name",
        "args",
        "result",
        "task_id",
        "session_id",
        "tool_call_id",
        "turn_id",
        "api_request_id",
        "duration_ms",
        "status",
        "error_type",
        "error_message",
        "middleware_trace",
    },
    "transform_tool_result": {
        "tool_name",
        "args",
        "result",
        "task_id",
        "session_id",
        "tool_call_id",
        "turn_id",
        "api_request_id",
        "duration_ms",
        "status",
        "error_type",
        "error_message",
    },
    "pre_llm_call": {
        "session_id",
        "task_id",
        "turn_id",
        "user_message",
        "conversation_history",
        "is_first_turn",
        "model",
        "platform",
        "sender_id",
    },
    "pre_api_request": {
        "task_id",
        "turn_id",
        "api_request_id",
        "session_id",
        "user_message",
        "conversation_history",
        "platform",
        "model",
        "provider",
        "base_url",
        "api_mode",
        "api_call_count",
        "request_messages",
        "message_count",
        "tool_count",
        "approx_input_tokens",
        "request_char_count",
        "max_tokens",
        "started_at",
        "middleware_trace",
        "request",
    },
    "post_api_request": {
        "task_id",
        "turn_id",
        "api_request_id",
        "session_id",
        "platform",
        "model",
        "provider",
        "base_url",
        "api_mode",
        "api_call_count",
        "api_duration",
        "started_at",
        "ended_at",
        "finish_reason",
        "message_count",
        "response_model",
        "response",
        "usage",
        "assistant_message",
        "assistant_content_chars",
        "assistant_tool_call_count",
    },
    "transform_llm_output": {"response_text", "session_id", "model", "platform"},
    "post_llm_call": {
        "session_id",
        "task_id",
        "turn_id",
        "user_message",
        "assistant_response",
        "conversation_history",
        "model",
        "platform",
    },
    "on_session_start": {"session_id", "model", "platform"},
}


@pytest.fixture
def recorded(tmp_path: Path, write_plugin: Callable[..., Path]) -> Callable[..., list]:
    """``recorded(*script, question=...)`` runs one turn of an agent on the ``scripted``
    provider at ``BASE_URL`` with the recording plugin loaded; returns the hooks it saw."""
    write_plugin(tmp_path, "rec", RECORDER)
    host = HermesPluginHost(tmp_path, {"plugins": {"enabled": ["rec"]}}, entry_points=False)
    host.load()
    bridge.use_host(host)

    def run(*script: Any, question: str = "weather in Paris?") -> list[tuple[str, dict]]:
        model = ScriptedModel()
        model.add(*script)
        config = {"model": {"provider": "scripted", "default": "m1", "base_url": BASE_URL}}
        manager = plugin_manager([COMPAT, scripted_provider_plugin(model)])
        agent = Agent.from_config(config, plugins=manager)
        agent.chat(question)
        agent.close()
        return list(sys.modules["hermes_plugins.rec"].CALLS)

    return run


def _first(calls: list[tuple[str, dict]], hook: str) -> dict[str, Any]:
    return next(kwargs for name, kwargs in calls if name == hook)


@pytest.mark.parametrize("hook", sorted(HERMES_ARGUMENTS))
def test_each_hook_gets_every_argument_hermes_passes(recorded, hook: str) -> None:
    calls = recorded(tool_call("weather", {"city": "Paris"}), text("Sunny."))
    assert HERMES_ARGUMENTS[hook] <= set(_first(calls, hook))


def test_post_llm_call_gets_the_conversation(recorded) -> None:
    calls = recorded(tool_call("weather", {"city": "Paris"}), text("Sunny."))
    kwargs = _first(calls, "post_llm_call")
    history = kwargs["conversation_history"]
    assert [m["role"] for m in history] == ["user", "assistant", "tool", "assistant"]
    assert history[0]["content"] == "weather in Paris?"
    assert history[-1]["content"] == kwargs["assistant_response"] == "Sunny."


def test_request_hooks_get_provider_base_url_and_api_mode(recorded) -> None:
    calls = recorded(text("Sunny."))
    for hook in ("pre_api_request", "post_api_request"):
        kwargs = _first(calls, hook)
        assert (kwargs["provider"], kwargs["base_url"], kwargs["api_mode"]) == (
            "scripted",
            BASE_URL,
            "chat_completions",
        )
    pre = _first(calls, "pre_api_request")
    assert pre["conversation_history"] == [{"role": "user", "content": "weather in Paris?"}]
    assert _first(calls, "post_api_request")["api_request_id"] == pre["api_request_id"]


def test_tool_status_values_are_hermes_s(recorded) -> None:
    calls = recorded(tool_call("weather", {"city": "Atlantis"}), text("Unknown."))
    post = _first(calls, "post_tool_call")
    assert (post["status"], post["error_type"], post["error_message"]) == (
        "error",
        "tool_error",
        "no such city",
    )
    assert _first(calls, "transform_tool_result")["status"] == "error"


@pytest.mark.parametrize(
    ("content", "is_error", "expected"),
    [
        ('{"temp": 21}', False, ("ok", None, None)),
        ('{"error": "boom"}', False, ("error", "tool_error", "boom")),
        ("Error: tool 'x' raised ValueError: bad", True, ("error", "tool_error", None)),
        ("BLOCKED: no (rule hermes-plugin:guard).", True, ("blocked", "plugin_block", None)),
        ("BLOCKED: no (rule user-denied).", True, ("blocked", "blocked", None)),
        (
            "Error: interrupted by the user while this tool was running.",
            True,
            ("cancelled", "keyboard_interrupt", None),
        ),
        (
            "Error: tool 'x' did not finish within 5 seconds (tools.timeout)",
            True,
            ("timeout", "tool_timeout", None),
        ),
    ],
)
def test_every_status_hermes_passes(content: str, is_error: bool, expected: tuple) -> None:
    status, error_type, message = bridge.tool_status(content, is_error)
    assert (status, error_type) == expected[:2]
    assert message == (expected[2] or (content if status != "ok" else None))


def test_on_session_end_and_finalize_get_the_session(recorded) -> None:
    calls = recorded(text("Sunny."))
    expected = {
        "on_session_end": {
            "session_id",
            "task_id",
            "turn_id",
            "completed",
            "interrupted",
            "model",
            "platform",
        },
        "on_session_finalize": {"session_id", "platform", "reason"},
    }
    for hook, names in expected.items():
        kwargs = _first(calls, hook)
        assert names <= set(kwargs)
        assert kwargs["session_id"] == _first(calls, "on_session_start")["session_id"]


def test_inject_message_answers_false_as_hermes_does_without_a_session(recorded) -> None:
    recorded(text("ok"))
    ctx = sys.modules["hermes_plugins.rec"].CTX[0]
    assert ctx.inject_message("hello") is False


def test_turn_and_request_ids_are_made_as_hermes_makes_them(recorded) -> None:
    calls = recorded(tool_call("weather", {"city": "Paris"}), text("Sunny."))
    turn_id = _first(calls, "pre_llm_call")["turn_id"]
    session_id = _first(calls, "pre_llm_call")["session_id"]
    assert turn_id.startswith(f"{session_id}:") and len(turn_id.rsplit(":", 1)[1]) == 8
    requests = [kw for name, kw in calls if name == "pre_api_request"]
    assert [r["api_request_id"] for r in requests] == [f"{turn_id}:api:1", f"{turn_id}:api:2"]
    assert [r["api_call_count"] for r in requests] == [1, 2]
    tool = _first(calls, "post_tool_call")
    assert (tool["turn_id"], tool["api_request_id"]) == (turn_id, f"{turn_id}:api:1")
    assert _first(calls, "pre_tool_call")["turn_id"] == turn_id
    assert _first(calls, "post_llm_call")["turn_id"] == turn_id
    responses = [kw["api_request_id"] for name, kw in calls if name == "post_api_request"]
    assert responses == [r["api_request_id"] for r in requests]


CONTEXT_PLUGIN = """
SEEN = {}
NOT_HONOURED = [
    "register_context_engine", "register_image_gen_provider", "register_dashboard_auth_provider",
    "register_video_gen_provider", "register_web_search_provider", "register_browser_provider",
    "register_secret_source", "register_tts_provider", "register_transcription_provider",
    "register_platform", "register_slack_action_handler", "register_auxiliary_task",
    "register_middleware",
]


def register(ctx):
    SEEN["manifest"] = (ctx.manifest.name, ctx.manifest.key, ctx.manifest.version,
                        ctx.manifest.source)
    SEEN["profile_name"] = ctx.profile_name
    SEEN["hermes_home"] = str(ctx.hermes_home)
    SEEN["get_config"] = (ctx.get_config("level"), ctx.get_config("absent", "fallback"))
    SEEN["has_plugin"] = (ctx.has_plugin("ctxdemo"), ctx.has_plugin("nowhere"))
    SEEN["inject_message"] = ctx.inject_message("hi", role="user")
    SEEN["not_honoured"] = [getattr(ctx, name)(object()) for name in NOT_HONOURED]
"""


def test_every_context_method_of_hermes_0_19_answers(
    tmp_path: Path, write_plugin: Callable[..., Path]
) -> None:
    write_plugin(tmp_path, "ctxdemo", CONTEXT_PLUGIN, 'name: ctxdemo\nversion: "2.0"\n')
    config = {
        "plugins": {
            "enabled": ["ctxdemo"],
            "entries": {"ctxdemo": {"settings": {"level": 3}}},
        }
    }
    host = HermesPluginHost(tmp_path, config, entry_points=False).load()
    seen = sys.modules["hermes_plugins.ctxdemo"].SEEN
    assert seen["manifest"] == ("ctxdemo", "ctxdemo", "2.0", "user")
    assert seen["profile_name"] == "custom"
    assert seen["hermes_home"] == str(tmp_path)
    assert seen["get_config"] == (3, "fallback")
    assert seen["has_plugin"] == (False, False)  # itself is not loaded until register returns
    assert seen["inject_message"] is False
    assert seen["not_honoured"] == [None] * 13
    plugin = host.plugins["ctxdemo"]
    assert plugin.status == "loaded"
    noted = {note.split(":", 1)[0] for note in plugin.notes}
    assert {"inject_message", "register_platform", "register_middleware"} <= noted
    assert len(noted) == 14


SUBAGENT_HOOKS = """
CALLS = []


def register(ctx):
    for name in ("subagent_start", "subagent_stop", "pre_approval_request"):
        ctx.register_hook(name, lambda _n=name, **kw: CALLS.append((_n, kw)))
"""


def _subagent_host(tmp_path: Path, write_plugin: Callable[..., Path]) -> list:
    write_plugin(tmp_path, "subs", SUBAGENT_HOOKS)
    host = HermesPluginHost(tmp_path, {"plugins": {"enabled": ["subs"]}}, entry_points=False)
    bridge.use_host(host.load())
    return sys.modules["hermes_plugins.subs"].CALLS


def test_subagent_hooks_get_hermes_s_arguments_and_status_values(
    tmp_path: Path, write_plugin: Callable[..., Path]
) -> None:
    from hermes_hookspecs import AgentOutcome

    calls = _subagent_host(tmp_path, write_plugin)
    bridge.hermes_subagent_start(parent_session_id="p1", child_session_id="c1", goal="sum it")
    for status, text_ in [("completed", "42"), ("max_iterations", "part"), ("max_iterations", "")]:
        outcome = AgentOutcome(session_id="c1", text=text_, status=status)
        bridge.hermes_subagent_stop(
            parent_session_id="p1",
            child_session_id="c1",
            status=status,
            duration=1.5,
            outcome=outcome,
        )
    start = calls[0][1]
    assert {
        "parent_session_id",
        "parent_turn_id",
        "parent_subagent_id",
        "child_session_id",
        "child_subagent_id",
        "child_role",
        "child_goal",
    } <= set(start)
    assert (start["child_goal"], start["child_role"]) == ("sum it", "leaf")
    stops = [kw for name, kw in calls if name == "subagent_stop"]
    assert {
        "parent_session_id",
        "parent_turn_id",
        "child_session_id",
        "child_role",
        "child_summary",
        "child_status",
        "duration_ms",
    } <= set(stops[0])
    assert [s["child_status"] for s in stops] == ["completed", "completed", "failed"]
    assert stops[0]["duration_ms"] == 1500
    for status in ("interrupted", "error"):
        assert bridge.subagent_status(status, "text") == status


def test_pre_approval_request_gets_hermes_s_arguments(
    tmp_path: Path, write_plugin: Callable[..., Path]
) -> None:
    from hermes_hookspecs import ApprovalRequest, ToolContext

    calls = _subagent_host(tmp_path, write_plugin)
    request = ApprovalRequest(action="rm -rf build", reason="deletes files", key="rm")
    bridge.hermes_approve(
        request=request, context=ToolContext(task_id="k1", session_id="s1", call_id="t1")
    )
    [(name, kwargs)] = calls
    assert name == "pre_approval_request"
    assert {
        "command",
        "description",
        "pattern_key",
        "pattern_keys",
        "session_key",
        "surface",
    } <= set(kwargs)
    assert (kwargs["command"], kwargs["pattern_keys"], kwargs["surface"]) == (
        "rm -rf build",
        ["rm"],
        "cli",
    )


def test_transform_terminal_output_gets_hermes_s_arguments(
    tmp_path: Path, write_plugin: Callable[..., Path]
) -> None:
    from hermes_hookspecs import ToolCall, ToolContext, ToolResult

    write_plugin(tmp_path, "rec", RECORDER)
    host = HermesPluginHost(tmp_path, {"plugins": {"enabled": ["rec"]}}, entry_points=False)
    bridge.use_host(host.load())
    call = ToolCall(id="c1", name="terminal", arguments={"command": "make"})
    context = ToolContext(task_id="k1", session_id="s1", call_id="c1", config={})
    bridge.hermes_post_tool_call(
        call=call, result=ToolResult("built\n[exit code: 2]", is_error=False), context=context
    )
    calls = sys.modules["hermes_plugins.rec"].CALLS
    assert _first(calls, "transform_terminal_output") == {
        "command": "make",
        "output": "built",
        "returncode": 2,
        "task_id": "k1",
        "env_type": "local",
    }
