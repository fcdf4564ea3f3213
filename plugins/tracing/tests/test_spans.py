"""The span tree of scripted runs against the fake LLM server: names, kinds, parents and the
attribute keys, compared with the constants of the semantic conventions package."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hermes_tracing_otel import conventions as c
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as genai
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics
from opentelemetry.semconv.attributes import error_attributes, server_attributes
from opentelemetry.trace import SpanKind, StatusCode

from hermes_core.testing import FakeLLM, toolset_plugin
from hermes_hookspecs import Block, Tool, ToolError, hookimpl

MODEL = "gpt-test"
LOOKUP_USAGE = {"input_tokens": 120, "output_tokens": 9, "cache_read_tokens": 100}
ANSWER_USAGE = {"input_tokens": 150, "output_tokens": 5, "cache_write_tokens": 20}


def lookup(args: dict[str, Any], ctx: Any) -> str:
    return f"the capital of {args['country']} is Paris"


def broken(args: dict[str, Any], ctx: Any) -> str:
    raise ToolError("the backend is down")


PARAMS = {
    "type": "object",
    "properties": {"country": {"type": "string"}},
    "required": ["country"],
}
TOOLS = toolset_plugin(
    Tool("lookup", "Look a fact up", PARAMS, lookup),
    Tool("broken", "Always fails", PARAMS, broken),
    Tool("forbidden", "Refused by the guard", PARAMS, lookup),
    name="facts",
)


class Guard:
    """Blocks every call of ``forbidden``."""

    @hookimpl
    def hermes_pre_tool_call(self, call: Any, context: Any) -> Block | None:
        return Block("not allowed here") if call.name == "forbidden" else None


def script_tools_then_answer(server: FakeLLM) -> None:
    server.add(
        {
            "calls": [
                {"name": "lookup", "arguments": {"country": "France"}, "id": "call_1"},
                {"name": "broken", "arguments": {"country": "France"}, "id": "call_2"},
                {"name": "forbidden", "arguments": {"country": "France"}, "id": "call_3"},
            ],
            "usage": LOOKUP_USAGE,
        },
        {"text": "Paris.", "usage": ANSWER_USAGE},
    )


def children(parent: ReadableSpan, spans: list[ReadableSpan]) -> list[ReadableSpan]:
    assert parent.context is not None
    return [s for s in spans if s.parent is not None and s.parent.span_id == parent.context.span_id]


def test_the_conventions_names_are_the_packages_constants() -> None:
    assert c.OPERATION_NAME == genai.GEN_AI_OPERATION_NAME
    assert c.PROVIDER_NAME == genai.GEN_AI_PROVIDER_NAME
    assert c.AGENT_NAME_ATTR == genai.GEN_AI_AGENT_NAME
    assert c.CONVERSATION_ID == genai.GEN_AI_CONVERSATION_ID
    assert c.REQUEST_MODEL == genai.GEN_AI_REQUEST_MODEL
    assert c.REQUEST_MAX_TOKENS == genai.GEN_AI_REQUEST_MAX_TOKENS
    assert c.REQUEST_TEMPERATURE == genai.GEN_AI_REQUEST_TEMPERATURE
    assert c.REQUEST_TOP_P == genai.GEN_AI_REQUEST_TOP_P
    assert c.REQUEST_SEED == genai.GEN_AI_REQUEST_SEED
    assert c.RESPONSE_MODEL == genai.GEN_AI_RESPONSE_MODEL
    assert c.RESPONSE_ID == genai.GEN_AI_RESPONSE_ID
    assert c.RESPONSE_FINISH_REASONS == genai.GEN_AI_RESPONSE_FINISH_REASONS
    assert c.USAGE_INPUT_TOKENS == genai.GEN_AI_USAGE_INPUT_TOKENS
    assert c.USAGE_OUTPUT_TOKENS == genai.GEN_AI_USAGE_OUTPUT_TOKENS
    assert c.USAGE_CACHE_READ == genai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS
    assert c.USAGE_CACHE_CREATION == genai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS
    assert c.USAGE_REASONING == genai.GEN_AI_USAGE_REASONING_OUTPUT_TOKENS
    assert c.TOOL_NAME == genai.GEN_AI_TOOL_NAME
    assert c.TOOL_CALL_ID == genai.GEN_AI_TOOL_CALL_ID
    assert c.TOOL_TYPE == genai.GEN_AI_TOOL_TYPE
    assert c.TOOL_CALL_ARGUMENTS == genai.GEN_AI_TOOL_CALL_ARGUMENTS
    assert c.TOOL_CALL_RESULT == genai.GEN_AI_TOOL_CALL_RESULT
    assert c.TOOL_DEFINITIONS == genai.GEN_AI_TOOL_DEFINITIONS
    assert c.INPUT_MESSAGES == genai.GEN_AI_INPUT_MESSAGES
    assert c.OUTPUT_MESSAGES == genai.GEN_AI_OUTPUT_MESSAGES
    assert c.SYSTEM_INSTRUCTIONS == genai.GEN_AI_SYSTEM_INSTRUCTIONS
    assert c.TOKEN_TYPE == genai.GEN_AI_TOKEN_TYPE
    assert c.ERROR_TYPE == error_attributes.ERROR_TYPE
    assert c.SERVER_ADDRESS == server_attributes.SERVER_ADDRESS
    assert c.SERVER_PORT == server_attributes.SERVER_PORT
    assert c.METRIC_TOKEN_USAGE == gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE
    assert c.METRIC_DURATION == gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION
    operations = genai.GenAiOperationNameValues
    assert c.OP_CHAT == operations.CHAT.value
    assert c.OP_INVOKE_AGENT == operations.INVOKE_AGENT.value
    assert c.OP_EXECUTE_TOOL == operations.EXECUTE_TOOL.value
    known = {v.value for v in genai.GenAiProviderNameValues}
    assert set(c.PROVIDERS.values()) <= known
    assert {name for _, name in c.HOSTS} <= known
    assert genai.GenAiTokenTypeValues.INPUT.value == "input"
    assert genai.GenAiTokenTypeValues.OUTPUT.value == "output"


def test_one_turn_with_tools_is_an_agent_span_over_chats_and_tool_calls(
    server: FakeLLM, telemetry: Any, make_agent: Any
) -> None:
    script_tools_then_answer(server)
    bot = make_agent(server, TOOLS, Guard())
    result = bot.run_conversation("What is the capital of France?")
    bot.close()
    assert result["final_response"] == "Paris."
    spans = telemetry.spans()
    [root] = telemetry.named("invoke_agent")
    chats = telemetry.named("chat ")
    tools = telemetry.named("execute_tool ")
    assert len(spans) == 6 and len(chats) == 2 and len(tools) == 3
    assert root.parent is None
    assert root.name == "invoke_agent hermes" and root.kind is SpanKind.INTERNAL
    assert sorted(s.name for s in children(root, spans)) == [
        f"chat {MODEL}",
        f"chat {MODEL}",
        "execute_tool broken",
        "execute_tool forbidden",
        "execute_tool lookup",
    ]
    assert {s.context.trace_id for s in spans if s.context} == {root.context.trace_id}

    agent_attrs = root.attributes or {}
    assert agent_attrs[genai.GEN_AI_OPERATION_NAME] == "invoke_agent"
    assert agent_attrs[genai.GEN_AI_AGENT_NAME] == "hermes"
    assert agent_attrs[genai.GEN_AI_PROVIDER_NAME] == "openai"
    assert agent_attrs[genai.GEN_AI_CONVERSATION_ID] == result["session_id"]
    assert agent_attrs[genai.GEN_AI_REQUEST_MODEL] == MODEL
    assert agent_attrs[genai.GEN_AI_USAGE_INPUT_TOKENS] == 270
    assert agent_attrs[genai.GEN_AI_USAGE_OUTPUT_TOKENS] == 14
    assert agent_attrs[genai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 100
    assert agent_attrs["hermes.exit_reason"] == "completed"
    assert agent_attrs["hermes.api_calls"] == 2
    assert error_attributes.ERROR_TYPE not in agent_attrs
    assert root.status.status_code is StatusCode.UNSET

    first, second = chats
    assert first.kind is SpanKind.CLIENT and second.kind is SpanKind.CLIENT
    chat = first.attributes or {}
    assert chat[genai.GEN_AI_OPERATION_NAME] == "chat"
    assert chat[genai.GEN_AI_PROVIDER_NAME] == "openai"
    assert chat[genai.GEN_AI_REQUEST_MODEL] == MODEL
    assert chat[genai.GEN_AI_RESPONSE_MODEL] == MODEL
    assert chat[genai.GEN_AI_RESPONSE_FINISH_REASONS] == ("tool_calls",)
    assert chat[genai.GEN_AI_USAGE_INPUT_TOKENS] == 120
    assert chat[genai.GEN_AI_USAGE_OUTPUT_TOKENS] == 9
    assert chat[genai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 100
    assert chat[genai.GEN_AI_CONVERSATION_ID] == result["session_id"]
    assert chat[server_attributes.SERVER_ADDRESS] == "127.0.0.1"
    assert isinstance(chat[server_attributes.SERVER_PORT], int)
    assert (second.attributes or {})[genai.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    assert (second.attributes or {})[genai.GEN_AI_USAGE_CACHE_CREATION_INPUT_TOKENS] == 20
    # content is not recorded unless opted in
    for span in spans:
        keys = set(span.attributes or {})
        assert not keys & {
            genai.GEN_AI_INPUT_MESSAGES,
            genai.GEN_AI_OUTPUT_MESSAGES,
            genai.GEN_AI_SYSTEM_INSTRUCTIONS,
            genai.GEN_AI_TOOL_CALL_ARGUMENTS,
            genai.GEN_AI_TOOL_CALL_RESULT,
        }

    by_name = {s.name: s for s in tools}
    ok = by_name["execute_tool lookup"].attributes or {}
    assert ok[genai.GEN_AI_OPERATION_NAME] == "execute_tool"
    assert ok[genai.GEN_AI_TOOL_NAME] == "lookup"
    assert ok[genai.GEN_AI_TOOL_CALL_ID] == "call_1"
    assert ok[genai.GEN_AI_TOOL_TYPE] == "function"
    assert error_attributes.ERROR_TYPE not in ok
    assert by_name["execute_tool lookup"].kind is SpanKind.INTERNAL
    failed = by_name["execute_tool broken"]
    assert (failed.attributes or {})[error_attributes.ERROR_TYPE] == "tool_error"
    assert failed.status.status_code is StatusCode.ERROR
    refused = by_name["execute_tool forbidden"]
    assert (refused.attributes or {})[error_attributes.ERROR_TYPE] == "refused"
    assert "not allowed here" in (refused.status.description or "")
    # the tools ran between the two model calls
    assert first.end_time <= min(t.start_time for t in tools)
    assert max(t.end_time for t in tools) <= second.start_time


def test_the_client_metrics_carry_tokens_by_type_and_durations(
    server: FakeLLM, telemetry: Any, make_agent: Any
) -> None:
    script_tools_then_answer(server)
    bot = make_agent(server, TOOLS, Guard())
    bot.run_conversation("What is the capital of France?")
    bot.close()
    points = telemetry.metrics()
    usage = points[gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE]
    by_type = {p.attributes[genai.GEN_AI_TOKEN_TYPE]: p for p in usage}
    assert by_type["input"].sum == 270 and by_type["input"].count == 2
    assert by_type["output"].sum == 14
    for point in usage:
        assert point.attributes[genai.GEN_AI_OPERATION_NAME] == "chat"
        assert point.attributes[genai.GEN_AI_PROVIDER_NAME] == "openai"
        assert point.attributes[genai.GEN_AI_REQUEST_MODEL] == MODEL
    [duration] = points[gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION]
    assert duration.count == 2 and duration.sum > 0
    assert error_attributes.ERROR_TYPE not in duration.attributes


def test_a_failed_attempt_is_a_chat_span_with_its_error_type_and_the_retry_another(
    server: FakeLLM, telemetry: Any, make_agent: Any
) -> None:
    server.add({"error": {"status": 500, "message": "upstream down"}}, "recovered")
    bot = make_agent(server)
    assert bot.chat("hello") == "recovered"
    bot.close()
    failed, ok = telemetry.named("chat ")
    assert failed.status.status_code is StatusCode.ERROR
    attrs = failed.attributes or {}
    assert attrs[error_attributes.ERROR_TYPE] == "server"
    assert attrs["http.response.status_code"] == 500
    assert error_attributes.ERROR_TYPE not in (ok.attributes or {})
    [root] = telemetry.named("invoke_agent")
    assert error_attributes.ERROR_TYPE not in (root.attributes or {})
    [duration] = [
        p
        for p in telemetry.metrics()[gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION]
        if p.attributes.get(error_attributes.ERROR_TYPE) == "server"
    ]
    assert duration.count == 1


def test_a_turn_that_fails_marks_its_agent_span(
    server: FakeLLM, telemetry: Any, make_agent: Any
) -> None:
    server.add(*[{"error": {"status": 401, "message": "bad key"}}] * 2)
    bot = make_agent(server)
    result = bot.run_conversation("hello")
    bot.close()
    assert result["exit_reason"] == "provider_error"
    [root] = telemetry.named("invoke_agent")
    assert (root.attributes or {})[error_attributes.ERROR_TYPE] == "provider_error"
    assert root.status.status_code is StatusCode.ERROR
    assert all(
        (s.attributes or {})[error_attributes.ERROR_TYPE] == "auth"
        for s in telemetry.named("chat ")
    )


def test_content_is_recorded_only_when_opted_in(
    server: FakeLLM, telemetry: Any, make_agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", "true")
    script_tools_then_answer(server)
    bot = make_agent(server, TOOLS, Guard(), plugins=("openai", "tracing", "prompt_identity"))
    bot.run_conversation("What is the capital of France?")
    bot.close()
    first, second = telemetry.named("chat ")
    inputs = json.loads((first.attributes or {})[genai.GEN_AI_INPUT_MESSAGES])
    assert inputs[-1] == {
        "role": "user",
        "parts": [{"type": "text", "content": "What is the capital of France?"}],
    }
    [instructions] = json.loads((first.attributes or {})[genai.GEN_AI_SYSTEM_INSTRUCTIONS])
    assert instructions["type"] == "text" and instructions["content"]
    tools = json.loads((first.attributes or {})[genai.GEN_AI_TOOL_DEFINITIONS])
    assert {t["name"] for t in tools} == {"lookup", "broken", "forbidden"}
    [output] = json.loads((first.attributes or {})[genai.GEN_AI_OUTPUT_MESSAGES])
    assert output["finish_reason"] == "tool_calls"
    assert output["parts"][0] == {
        "type": "tool_call",
        "id": "call_1",
        "name": "lookup",
        "arguments": {"country": "France"},
    }
    later = json.loads((second.attributes or {})[genai.GEN_AI_INPUT_MESSAGES])
    responses = [p for m in later if m["role"] == "tool" for p in m["parts"]]
    assert responses[0]["type"] == "tool_call_response" and responses[0]["id"] == "call_1"
    lookup_span = telemetry.named("execute_tool lookup")[0].attributes or {}
    assert json.loads(lookup_span[genai.GEN_AI_TOOL_CALL_ARGUMENTS]) == {"country": "France"}
    assert "Paris" in json.loads(lookup_span[genai.GEN_AI_TOOL_CALL_RESULT])


def test_the_configuration_can_opt_out_of_a_configured_tracer(
    server: FakeLLM, telemetry: Any, make_agent: Any
) -> None:
    server.add("hi")
    bot = make_agent(server, config={"tracing": {"enabled": False}})
    assert bot.chat("hello") == "hi"
    bot.close()
    assert telemetry.spans() == []


class EarlyGuard:
    """A guard that runs before the tracer's hook and refuses ``forbidden``."""

    @hookimpl(tryfirst=True)
    def hermes_pre_tool_call(self, call: Any, context: Any) -> Block | None:
        return Block("refused early") if call.name == "forbidden" else None


def test_a_call_refused_before_the_tracer_saw_it_still_has_its_span(
    server: FakeLLM, telemetry: Any, make_agent: Any
) -> None:
    server.add(
        {"calls": [{"name": "forbidden", "arguments": {"country": "X"}, "id": "call_f"}]},
        "ok",
    )
    bot = make_agent(server, TOOLS, EarlyGuard())
    bot.run_conversation("try it")
    bot.close()
    [root] = telemetry.named("invoke_agent")
    [refused] = telemetry.named("execute_tool forbidden")
    assert refused.parent is not None and refused.parent.span_id == root.context.span_id
    assert (refused.attributes or {})[error_attributes.ERROR_TYPE] == "refused"
    assert (refused.attributes or {})[genai.GEN_AI_TOOL_CALL_ID] == "call_f"


def test_an_interrupted_model_call_and_turn_say_so(
    server: FakeLLM, telemetry: Any, make_agent: Any
) -> None:
    import threading

    server.add({"hang": True})
    bot = make_agent(server)
    timer = threading.Timer(0.3, bot.interrupt)
    timer.start()
    result = bot.run_conversation("wait forever")
    timer.join()
    bot.close()
    assert result["exit_reason"] == "interrupted"
    [chat] = telemetry.named("chat ")
    assert (chat.attributes or {})[error_attributes.ERROR_TYPE] == "cancelled"
    [root] = telemetry.named("invoke_agent")
    assert (root.attributes or {})[error_attributes.ERROR_TYPE] == "interrupted"
    assert root.status.status_code is StatusCode.ERROR


def test_parallel_tool_calls_each_have_their_span(
    server: FakeLLM, telemetry: Any, make_agent: Any
) -> None:
    import threading
    import time

    threads: set[str] = set()

    def slow(args: dict[str, Any], ctx: Any) -> str:
        threads.add(str(threading.get_ident()))
        time.sleep(0.05)
        return args["country"]

    tools = toolset_plugin(Tool("slow", "Takes a while", PARAMS, slow), name="slowset")
    server.add(
        {
            "calls": [
                {"name": "slow", "arguments": {"country": c}, "id": f"call_{c}"}
                for c in ("a", "b", "c", "d")
            ]
        },
        "done",
    )
    bot = make_agent(server, tools)
    assert bot.chat("all at once") == "done"
    bot.close()
    [root] = telemetry.named("invoke_agent")
    spans = telemetry.named("execute_tool slow")
    assert sorted((s.attributes or {})[genai.GEN_AI_TOOL_CALL_ID] for s in spans) == [
        "call_a",
        "call_b",
        "call_c",
        "call_d",
    ]
    assert all(s.parent is not None and s.parent.span_id == root.context.span_id for s in spans)
    assert len(threads) > 1, "the calls ran one after the other: the test proves nothing"


def test_an_anthropic_call_is_named_by_the_conventions_list(
    server: FakeLLM, telemetry: Any
) -> None:
    pytest.importorskip("hermes_provider_anthropic")
    from hermes_core.testing import Agent, plugin_manager

    server.add({"text": "hello", "usage": {"input_tokens": 40, "output_tokens": 2,
                                           "cache_read_tokens": 30}})  # fmt: skip
    bot = Agent.from_config(
        {},
        provider="anthropic",
        base_url=server.anthropic_base_url,
        api_key="sk-ant-test",
        model="claude-test",
        plugins=plugin_manager(["anthropic", "tracing"]),
    )
    assert bot.chat("hi") == "hello"
    bot.close()
    [chat] = telemetry.named("chat ")
    attrs = chat.attributes or {}
    assert chat.name == "chat claude-test"
    assert attrs[genai.GEN_AI_PROVIDER_NAME] == genai.GenAiProviderNameValues.ANTHROPIC.value
    assert attrs[genai.GEN_AI_USAGE_INPUT_TOKENS] == 40
    assert attrs[genai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS] == 30
    assert attrs[genai.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    [root] = telemetry.named("invoke_agent")
    assert (root.attributes or {})[genai.GEN_AI_PROVIDER_NAME] == "anthropic"
