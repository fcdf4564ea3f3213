"""The provider against the test kit's fake LLM server, each case over the process's own
connections and through the real ``anthropic`` SDK's HTTP client (``HERMES_ANTHROPIC_HTTP=sdk``)."""

from __future__ import annotations

import json
import threading
import time

import pytest
from hermes_provider_anthropic import create_client
from hermes_provider_anthropic.convert import THINKING_KEY

from hermes_core.testing import Call, FakeLLM, Turn, plugin_manager, tool_calls
from hermes_hookspecs import (
    AuthenticationError,
    Cancelled,
    ContextOverflowError,
    ModelRequest,
    ProviderError,
    ProviderSettings,
    RateLimitError,
    Tool,
    Toolset,
    hookimpl,
)

pytest.importorskip("anthropic")

SYSTEM = "You are a test assistant."
WEATHER = Tool(
    name="get_weather",
    description="Current weather for a city",
    parameters={
        "type": "object",
        "properties": {"city": {"type": "string"}, "days": {"type": "integer"}},
        "required": ["city"],
    },
    handler=lambda args, ctx: f"Sunny in {args['city']}",
)
CLOCK = Tool(
    name="get_time",
    description="Current time in a city",
    parameters={"type": "object", "properties": {"city": {"type": "string"}}},
    handler=lambda args, ctx: f"Noon in {args['city']}",
)


class Sink:
    def __init__(self):
        self.events = []

    def __call__(self, event, data):
        self.events.append((event, data))

    def of(self, kind):
        return [d for e, d in self.events if e == kind]


@pytest.fixture(autouse=True, params=["own", "sdk"])
def transport(request, monkeypatch):
    """Every test runs over the plugin's connections and through the SDK's HTTP client."""
    from hermes_provider_anthropic import client, http_messages

    if request.param == "sdk":
        monkeypatch.setenv(http_messages.SDK_SWITCH, "sdk")
    else:
        monkeypatch.delenv(http_messages.SDK_SWITCH, raising=False)
    client._SHARED_POSTERS.clear()  # each endpoint's choice is made once per process
    yield request.param
    client._SHARED_POSTERS.clear()


@pytest.fixture
def fake(fake_llm):
    """The test kit's fake LLM server (stopped after the test)."""
    return fake_llm


def client_for(fake, timeout=10.0, config=None):
    return create_client(
        ProviderSettings(
            provider="anthropic",
            model="claude-test",
            base_url=fake.anthropic_base_url,
            api_key="k",
            api_mode="anthropic_messages",
            timeout=timeout,
            config=config or {},
        )
    )


def make_request(stream=False, tools=(WEATHER,), messages=None, **kw):
    return ModelRequest(
        model="claude-test",
        messages=messages
        or [
            {"role": "system", "content": SYSTEM},
            {"role": "user", "content": "Weather in Paris?"},
        ],
        tools=[t.schema() for t in tools],
        stream=stream,
        **kw,
    )


# --- plain answers --------------------------------------------------------------------------


def test_non_streamed_text_answer(fake):
    fake.add(
        {
            "text": "It is sunny.",
            "usage": {
                "input_tokens": 1500,
                "output_tokens": 9,
                "cache_read_tokens": 1000,
                "cache_write_tokens": 300,
            },
        }
    )
    response = client_for(fake).complete(make_request())
    assert response.message == {"role": "assistant", "content": "It is sunny."}
    assert response.finish_reason == "stop"
    assert response.model == "claude-test"
    assert response.usage.as_dict() == {
        "input_tokens": 1500,
        "output_tokens": 9,
        "cache_read_tokens": 1000,
        "cache_write_tokens": 300,
        "reasoning_tokens": 0,
    }
    sent = fake.last_request
    assert sent.path == "/v1/messages"
    # the key travels as x-api-key or, in newer SDKs, as a bearer token
    assert sent.headers.get("x-api-key") == "k" or sent.headers.get("authorization") == "Bearer k"
    assert "anthropic-version" in sent.headers
    body = sent.json
    assert body["model"] == "claude-test"
    assert body["max_tokens"] == 8192
    assert body["system"] == [
        {"type": "text", "text": SYSTEM, "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {
                    "type": "text",
                    "text": "Weather in Paris?",
                    "cache_control": {"type": "ephemeral"},
                }
            ],
        }
    ]
    assert body["tools"] == [
        {
            "name": "get_weather",
            "description": "Current weather for a city",
            "input_schema": WEATHER.parameters,
        }
    ]
    assert "stream" not in body


@pytest.mark.parametrize("written", ["{url}", "{url}/", "{url}/v1", "{url}/v1/"])
def test_a_base_url_with_or_without_v1_reaches_the_messages_endpoint(fake, written):
    fake.add({"text": "It is sunny."})
    settings = ProviderSettings(
        provider="anthropic",
        model="claude-test",
        base_url=written.format(url=fake.url),
        api_key="k",
        api_mode="anthropic_messages",
        timeout=10.0,
    )
    response = create_client(settings).complete(make_request())
    assert response.message["content"] == "It is sunny."
    assert fake.last_request.path == "/v1/messages"


def test_streamed_text_answer(fake):
    fake.add({"text": "It is sunny in Paris today.", "chunks": 6})
    sink = Sink()
    response = client_for(fake).complete(make_request(stream=True, sink=sink))
    assert fake.last_request.json["stream"] is True
    deltas = [d["text"] for d in sink.of("text_delta")]
    assert len(deltas) == 6
    assert "".join(deltas) == "It is sunny in Paris today."
    assert response.message["content"] == "It is sunny in Paris today."
    assert response.finish_reason == "stop"
    assert response.usage.input_tokens > 0 and response.usage.output_tokens > 0


def test_length_and_refusal_finish_reasons(fake):
    fake.add(
        {"text": "cut", "finish_reason": "length"},
        {"text": "no", "finish_reason": "content_filter"},
    )
    client = client_for(fake)
    assert client.complete(make_request()).finish_reason == "length"
    assert client.complete(make_request(stream=True)).finish_reason == "content_filter"


def test_options_and_configured_max_tokens_reach_the_wire(fake):
    fake.add("ok")
    client = client_for(
        fake, config={"model": {"max_tokens": 1234}, "prompt_caching": {"cache_ttl": "1h"}}
    )
    client.complete(make_request(options={"temperature": 0.3}))
    body = fake.last_request.json
    assert body["max_tokens"] == 1234
    assert body["temperature"] == 0.3
    assert body["system"][-1]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}


# --- tool calls -----------------------------------------------------------------------------

ARGUMENTS = '{"city": "São Paulo", "days": 3, "note": "a \\"quoted\\" {brace}"}'


@pytest.mark.parametrize("stream", [False, True])
def test_tool_call_split_in_many_pieces(fake, stream):
    fake.add(
        {
            "text": "Let me check.",
            "calls": [{"name": "get_weather", "arguments": ARGUMENTS, "id": "toolu_1"}],
            "chunks": 40,
        }
    )
    sink = Sink()
    response = client_for(fake).complete(make_request(stream=stream, sink=sink))
    assert response.finish_reason == "tool_calls"
    (tool_call,) = response.message["tool_calls"]
    assert tool_call["id"] == "toolu_1"
    assert tool_call["function"]["name"] == "get_weather"
    if stream:
        assert tool_call["function"]["arguments"] == ARGUMENTS  # reassembled exactly
        assert sink.of("tool_call_started") == [
            {"index": 0, "id": "toolu_1", "name": "get_weather"}
        ]
    assert json.loads(tool_call["function"]["arguments"]) == json.loads(ARGUMENTS)
    assert response.message["content"] == "Let me check."


@pytest.mark.parametrize("stream", [False, True])
def test_parallel_tool_calls(fake, stream):
    fake.add(
        tool_calls(
            Call("get_weather", {"city": "Rome"}, id="t1"),
            Call("get_time", {"city": "Oslo"}, id="t2"),
        )
    )
    sink = Sink()
    response = client_for(fake).complete(
        make_request(stream=stream, sink=sink, tools=(WEATHER, CLOCK))
    )
    calls = response.message["tool_calls"]
    assert [(c["id"], c["function"]["name"]) for c in calls] == [
        ("t1", "get_weather"),
        ("t2", "get_time"),
    ]
    assert [json.loads(c["function"]["arguments"]) for c in calls] == [
        {"city": "Rome"},
        {"city": "Oslo"},
    ]
    assert response.message["content"] is None
    if stream:
        assert [d["index"] for d in sink.of("tool_call_started")] == [0, 1]


@pytest.mark.parametrize("stream", [False, True])
def test_thinking(fake, stream):
    fake.add(
        {
            "reasoning": "The user wants weather; call the tool.",
            "signature": "c2lnbmVk",
            "calls": [{"name": "get_weather", "arguments": {"city": "Paris"}, "id": "toolu_t"}],
            "chunks": 4,
        }
    )
    sink = Sink()
    response = client_for(fake).complete(make_request(stream=stream, sink=sink))
    message = response.message
    assert message["reasoning"] == "The user wants weather; call the tool."
    assert message[THINKING_KEY] == [
        {
            "type": "thinking",
            "thinking": "The user wants weather; call the tool.",
            "signature": "c2lnbmVk",
        }
    ]
    if stream:
        assert "".join(d["text"] for d in sink.of("reasoning_delta")) == message["reasoning"]
        assert len(sink.of("reasoning_delta")) == 4


def test_thinking_option_is_sent(fake):
    fake.add("ok")
    client_for(fake).complete(make_request(max_tokens=16000, options={"thinking": 2048}))
    body = fake.last_request.json
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 16000


# --- errors ---------------------------------------------------------------------------------


@pytest.mark.parametrize("stream", [False, True])
def test_rate_limit_with_retry_after(fake, stream):
    fake.add({"error": {"status": 429, "message": "slow down please", "retry_after": 1}})
    with pytest.raises(RateLimitError) as info:
        client_for(fake).complete(make_request(stream=stream))
    err = info.value
    assert err.status == 429 and err.kind == "rate_limit" and err.retryable
    assert err.retry_after == 1.0
    assert "429" in str(err) and "slow down please" in str(err)
    assert len(fake.requests) == 1  # the SDK does not retry on its own


def test_overloaded(fake):
    fake.add({"error": {"status": 529}})
    with pytest.raises(ProviderError) as info:
        client_for(fake).complete(make_request())
    assert info.value.kind == "overloaded" and info.value.retryable and info.value.status == 529
    assert "Overloaded" in str(info.value)


def test_server_error(fake):
    fake.add({"error": {"status": 500}})
    with pytest.raises(ProviderError) as info:
        client_for(fake).complete(make_request(stream=True))
    assert info.value.kind == "server" and info.value.retryable


def test_authentication_error(fake):
    fake.add({"error": {"status": 401}})
    with pytest.raises(AuthenticationError) as info:
        client_for(fake).complete(make_request())
    assert info.value.status == 401 and not info.value.retryable
    assert "invalid x-api-key" in str(info.value)


def test_model_not_found_and_billing(fake):
    fake.add({"error": {"status": 404}}, {"error": {"status": 402}})
    client = client_for(fake)
    with pytest.raises(ProviderError) as info:
        client.complete(make_request())
    assert info.value.kind == "model_not_found"
    with pytest.raises(ProviderError) as info:
        client.complete(make_request())
    assert info.value.kind == "billing"


def test_context_overflow(fake):
    fake.add(
        {
            "error": {
                "status": 400,
                "type": "invalid_request_error",
                "message": "prompt is too long: 210000 tokens > 200000 maximum",
            }
        }
    )
    with pytest.raises(ContextOverflowError) as info:
        client_for(fake).complete(make_request())
    assert info.value.kind == "context_overflow" and info.value.status == 400
    assert "prompt is too long" in str(info.value)


def test_bad_request(fake):
    fake.add({"error": {"status": 400, "message": "messages.0: bad"}})
    with pytest.raises(ProviderError) as info:
        client_for(fake).complete(make_request())
    assert info.value.kind == "bad_request" and not info.value.retryable


def test_timeout(fake):
    fake.add({"hang": True})
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        client_for(fake, timeout=0.5).complete(make_request())
    assert info.value.kind == "timeout" and info.value.retryable
    assert time.monotonic() - started < 5


def test_connection_refused():
    with FakeLLM() as server:
        url = server.anthropic_base_url
    client = create_client(
        ProviderSettings(provider="anthropic", model="m", base_url=url, api_key="k", timeout=5)
    )
    with pytest.raises(ProviderError) as info:
        client.complete(make_request())
    assert info.value.kind == "connection" and info.value.retryable


@pytest.mark.parametrize("after", [0, 3, 9])
def test_broken_stream_is_retryable_and_returns_nothing(fake, after):
    fake.add({"text": "This answer will never finish.", "chunks": 8, "break_stream_after": after})
    sink = Sink()
    with pytest.raises(ProviderError) as info:
        client_for(fake).complete(make_request(stream=True, sink=sink))
    assert info.value.kind in ("connection", "timeout") and info.value.retryable


def test_cut_json_answer_is_retryable(fake):
    fake.add({"text": "whole answers can be cut too", "break_stream_after": 0})
    with pytest.raises(ProviderError) as info:
        client_for(fake).complete(make_request())
    assert info.value.retryable


def test_interrupt_mid_stream(fake):
    fake.add({"text": "one two three four five six seven eight", "chunks": 8, "hang_after": 5})
    cancel = threading.Event()

    def sink(event, data):
        if event == "text_delta":
            cancel.set()

    request = make_request(stream=True, sink=sink, cancel=cancel)
    started = time.monotonic()
    with pytest.raises(Cancelled) as info:  # the contract's one cancellation, not a failure
        client_for(fake, timeout=30).complete(request)
    assert str(info.value) == "anthropic: the model call was cancelled"
    assert not isinstance(info.value, ProviderError)
    assert time.monotonic() - started < 3


def test_interrupt_while_the_server_is_silent(fake):
    # the stream is closed from the cancel watcher: the blocked read wakes up at once
    fake.add({"text": "one two three", "chunks": 3, "hang_after": 2})
    cancel = threading.Event()
    threading.Timer(0.3, cancel.set).start()
    started = time.monotonic()
    with pytest.raises(Cancelled, match="cancelled"):
        client_for(fake, timeout=30).complete(make_request(stream=True, cancel=cancel))
    assert time.monotonic() - started < 3


def test_client_is_built_once_and_reused(fake, transport):
    fake.add("one", "two")
    client = client_for(fake)
    client.complete(make_request())
    sdk = client._client
    assert (sdk is None) == (transport == "own")  # the SDK only where it sends the requests
    client.complete(make_request(stream=True))
    assert client._client is sdk


# --- end to end through the agent -----------------------------------------------------------


class WeatherPlugin:
    @hookimpl
    def hermes_register_toolsets(self, register):
        register(Toolset(name="weather", description="Weather", tools=[WEATHER, CLOCK]))

    @hookimpl
    def hermes_prompt_layers(self, context):
        from hermes_hookspecs import PromptLayer

        return [PromptLayer(name="test-system", tier="stable", order=0, text=SYSTEM)]


def _callbacks(**named):
    from hermes_core.testing import Callbacks

    return Callbacks(**named)


def make_agent(fake, **kw):
    from hermes_core.testing import Agent

    kw.setdefault("config", {"agent": {"retry_base_delay": 0}})
    return Agent.from_config(
        provider="anthropic",
        base_url=fake.anthropic_base_url,
        api_key="k",
        model="claude-test",
        plugins=plugin_manager(["anthropic", WeatherPlugin()]),
        **kw,
    )


def raw_field(body: bytes, name: str) -> bytes:
    """The bytes of a top-level JSON field as the SDK serialized it."""
    parsed = json.loads(body)
    for candidate in (
        json.dumps(parsed[name]).encode(),
        json.dumps(parsed[name], separators=(",", ":")).encode(),
        json.dumps(parsed[name], ensure_ascii=False, separators=(",", ":")).encode(),
    ):
        if candidate in body:
            return candidate
    raise AssertionError(f"could not find the raw bytes of {name!r}")


@pytest.mark.parametrize("stream", [False, True])
def test_agent_tool_call_then_text(fake, stream):
    fake.add(
        Turn(
            text="Checking both.",
            calls=[
                Call("get_weather", {"city": "Paris"}, id="c1"),
                Call("get_time", {"city": "Paris"}, id="c2"),
            ],
        ),
        tool_calls(("get_weather", {"city": "Oslo"})),
        "Sunny in Paris and Oslo, at noon.",
        "You're welcome.",
    )
    deltas = []
    with make_agent(fake, stream=stream, callbacks=_callbacks(stream_delta=deltas.append)) as agent:
        assert agent.chat("Weather in Paris and Oslo?") == "Sunny in Paris and Oslo, at noon."
        assert agent.chat("thanks") == "You're welcome."
        session, store = agent.session_id, agent.session_store
    # a resumed session replays the same prefix
    fake.add("Still sunny.")
    with make_agent(fake, stream=stream, session_id=session, session_store=store) as resumed:
        assert resumed.chat("and now?") == "Still sunny."

    requests = fake.model_requests
    assert len(requests) == 5
    bodies = [r.json for r in requests]
    assert all(b.get("stream", False) is stream for b in bodies)
    # system blocks and tools: byte-identical on every request, resume included
    systems = {raw_field(r.body, "system") for r in requests}
    tools = {raw_field(r.body, "tools") for r in requests}
    assert len(systems) == 1 and len(tools) == 1
    assert bodies[0]["system"][0]["text"].startswith(SYSTEM)
    assert [t["name"] for t in bodies[0]["tools"]] == ["get_time", "get_weather"]

    # the second request: both results in ONE user message, in the order asked
    second = bodies[1]["messages"]
    assert [m["role"] for m in second] == ["user", "assistant", "user"]
    assert [b["type"] for b in second[1]["content"]] == ["text", "tool_use", "tool_use"]
    results = second[2]["content"]
    assert [(b["type"], b["tool_use_id"]) for b in results] == [
        ("tool_result", "c1"),
        ("tool_result", "c2"),
    ]
    assert results[0]["content"] == "Sunny in Paris"
    assert results[1]["content"] == "Noon in Paris"
    # roles alternate and at most 4 cache breakpoints on every request
    for body in bodies:
        roles = [m["role"] for m in body["messages"]]
        assert all(a != b for a, b in zip(roles, roles[1:], strict=False)), roles
        marks = sum("cache_control" in b for b in body["system"]) + sum(
            "cache_control" in b for m in body["messages"] for b in m["content"]
        )
        assert marks == min(4, 1 + len(body["messages"]))
    if stream:
        assert "".join(deltas).endswith("Sunny in Paris and Oslo, at noon.You're welcome.")


def test_agent_replays_signed_thinking(fake):
    fake.add(
        {
            "reasoning": "I should look it up.",
            "signature": "U0lH",
            "calls": [{"name": "get_weather", "arguments": {"city": "Lima"}, "id": "c9"}],
        },
        "Sunny in Lima.",
    )
    reasoning = []
    with make_agent(fake, stream=True, callbacks=_callbacks(reasoning=reasoning.append)) as agent:
        assert agent.chat("Lima?") == "Sunny in Lima."
        stored = agent.messages[1]
    assert stored["reasoning"] == "I should look it up."
    assert stored[THINKING_KEY][0]["signature"] == "U0lH"
    assistant = fake.model_requests[1].json["messages"][1]
    assert assistant["content"][0] == {
        "type": "thinking",
        "thinking": "I should look it up.",
        "signature": "U0lH",
    }
    assert assistant["content"][1]["type"] == "tool_use"
    assert "reasoning" not in assistant and THINKING_KEY not in json.dumps(
        fake.model_requests[1].json
    )


def test_agent_retries_a_rate_limit_then_succeeds(fake):
    fake.add({"error": {"status": 429, "retry_after": 0}}, "done")
    with make_agent(fake) as agent:
        result = agent.run_conversation("hi")
    assert result["final_response"] == "done"
    assert len(fake.model_requests) == 2


def test_agent_retries_a_broken_stream_and_keeps_nothing_partial(fake):
    fake.add(
        {"text": "partial partial partial", "chunks": 6, "break_stream_after": 4}, "whole answer"
    )
    with make_agent(fake, stream=True) as agent:
        result = agent.run_conversation("hi")
        messages = agent.messages
    assert result["final_response"] == "whole answer"
    assert [m.get("content") for m in messages if m["role"] == "assistant"] == ["whole answer"]


def test_agent_reports_auth_errors_in_one_line(fake):
    fake.add({"error": {"status": 401}})
    with make_agent(fake) as agent:
        result = agent.run_conversation("hi")
    assert result["exit_reason"] == "provider_error"
    assert "401" in result["error"] and "\n" not in result["error"]
    assert len(fake.model_requests) == 1


def test_agent_interrupt_mid_stream_leaves_no_trace(fake):
    fake.add({"text": "a b c d e f g h", "chunks": 8, "hang_after": 4})
    holder = {}

    def on_delta(text):
        holder["agent"].interrupt()

    with make_agent(fake, stream=True, callbacks=_callbacks(stream_delta=on_delta)) as agent:
        holder["agent"] = agent
        started = time.monotonic()
        result = agent.run_conversation("hi")
        assert result["interrupted"]
        assert time.monotonic() - started < 3
        assert [m["role"] for m in agent.messages] == ["user"]


def test_local_server_without_a_key(fake, monkeypatch, tmp_path):
    for name in ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_PROFILE"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("ANTHROPIC_CONFIG_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))  # no SDK profile on disk either
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path))
    fake.add("hello")
    client = create_client(
        ProviderSettings(
            provider="anthropic", model="m", base_url=fake.anthropic_base_url, timeout=5
        )
    )
    assert client.complete(make_request()).message["content"] == "hello"


def test_agent_budget_summary_sends_tool_history_as_text(fake):
    # the summary request offers no tools; the API refuses tool blocks without tool definitions
    fake.add(tool_calls(("get_weather", {"city": "Kyiv"})), "Here is what I found.")
    with make_agent(fake, max_turns=1) as agent:
        result = agent.run_conversation("weather?")
    assert result["final_response"] == "Here is what I found."
    summary = fake.model_requests[1].json
    assert "tools" not in summary
    kinds = {b["type"] for m in summary["messages"] for b in m["content"]}
    assert kinds == {"text"}
    roles = [m["role"] for m in summary["messages"]]
    assert roles == ["user", "assistant", "user"]
