"""The client against the test kit's fake LLM server: both modes, whole and streamed, tool
calls, reasoning, errors, interrupts and broken streams, each over the plugin's own
connections and through the real ``openai`` SDK's HTTP client (``HERMES_OPENAI_HTTP=sdk``)."""

from __future__ import annotations

import json
import threading
import time

import hermes_provider_openai as plugin
import pytest

from hermes_core.testing import Call, FakeLLM, Turn, wait_until
from hermes_hookspecs import (
    AuthenticationError,
    Cancelled,
    ContextOverflowError,
    ModelRequest,
    ProviderError,
    ProviderSettings,
    RateLimitError,
)

MODES = ["chat_completions", "codex_responses"]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": f"The {name} tool",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
    for name in ("get_time", "get_weather")
]
ARGUMENTS = '{"city": "Paris, \\"the\\" city of light ü", "days": [1, 2, 3]}'


@pytest.fixture(autouse=True, params=["own", "sdk"])
def transport(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch):
    """Every test runs over the plugin's connections and through the SDK's HTTP client."""
    from hermes_provider_openai import client, http_post

    if request.param == "sdk":
        monkeypatch.setenv(http_post.SDK_SWITCH, "sdk")
    else:
        monkeypatch.delenv(http_post.SDK_SWITCH, raising=False)
    client._SHARED_POSTERS.clear()  # each endpoint's choice is made once per process
    yield request.param
    client._SHARED_POSTERS.clear()


def client_for(fake, mode="chat_completions", timeout=30.0, provider="custom"):
    return plugin.create_client(
        ProviderSettings(
            provider=provider,
            model="m",
            base_url=fake.openai_base_url,
            api_mode=mode,
            timeout=timeout,
        )
    )


def ask(client, *, stream=False, tools=(), messages=None, events=None, **kwargs):
    sink = None if events is None else (lambda event, data: events.append((event, data)))
    request = ModelRequest(
        model="m",
        messages=messages
        or [{"role": "system", "content": "sys"}, {"role": "user", "content": "hi"}],
        tools=list(tools),
        stream=stream,
        sink=sink,
        **kwargs,
    )
    return client.complete(request)


@pytest.fixture
def fake():
    server = FakeLLM().start()
    yield server
    server.stop()
    assert not server.errors, server.errors


# --- text, both modes, whole and streamed ------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stream", [False, True])
def test_text_answer(fake, mode, stream):
    fake.add({"text": "Hello there", "usage": {"input_tokens": 12, "output_tokens": 3}})
    events = []
    response = ask(client_for(fake, mode), stream=stream, events=events)
    assert response.message == {"role": "assistant", "content": "Hello there"}
    assert response.finish_reason == "stop"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 3)
    texts = [d["text"] for e, d in events if e == "text_delta"]
    if stream:
        assert "".join(texts) == "Hello there" and len(texts) > 1
    else:
        assert texts == []
    sent = fake.last_request
    assert sent.headers["authorization"] == "Bearer not-needed"
    assert sent.stream is stream
    if mode == "chat_completions":
        assert sent.path == "/v1/chat/completions"
        assert sent.json["messages"] == [
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "hi"},
        ]
        assert "tools" not in sent.json
        if stream:
            assert sent.json["stream_options"] == {"include_usage": True}
    else:
        assert sent.path == "/v1/responses"
        assert sent.json["instructions"] == "sys"
        assert sent.json["input"] == [{"role": "user", "content": "hi"}]
        assert sent.json["store"] is False


def test_options_and_max_tokens_reach_the_server(fake):
    fake.add("ok")
    ask(client_for(fake), max_tokens=77, options={"temperature": 0.1, "seed": 5, "top_k": 3})
    body = fake.last_request.json
    assert (body["max_tokens"], body["temperature"], body["seed"], body["top_k"]) == (77, 0.1, 5, 3)


HISTORY = [
    {"role": "system", "content": "sys"},
    {"role": "user", "content": [
        {"type": "text", "text": "what is in it? ü"},
        {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
    ]},
    {"role": "assistant", "content": None, "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": ARGUMENTS}},
    ]},
    {"role": "tool", "tool_call_id": "call_1", "content": "sunny"},
    {"role": "user", "content": "and tomorrow?"},
]  # fmt: skip


@pytest.mark.parametrize("stream", [False, True])
def test_the_body_goes_on_the_wire_as_built(fake, stream):
    """The transcript and tools travel as extra body fields, past the SDK's per-field type
    transform: the server gets exactly the body we built, and that transform would have
    changed nothing in it."""
    from hermes_provider_openai import chat
    from openai._utils import maybe_transform
    from openai.types.chat import completion_create_params as params

    fake.add("ok")
    client = client_for(fake)
    request = ModelRequest(
        model="m", messages=[dict(m) for m in HISTORY], tools=TOOLS, stream=stream
    )
    client.complete(request)
    built = chat.build_body(request, client.settings)
    assert fake.last_request.json == json.loads(json.dumps(built))
    assert fake.last_request.json["messages"] == HISTORY
    kind = (
        params.CompletionCreateParamsStreaming
        if stream
        else params.CompletionCreateParamsNonStreaming
    )
    assert maybe_transform(built, kind) == built


def test_the_sdk_client_is_reused(fake):
    fake.add("one", "two")
    client = client_for(fake)
    ask(client)
    sdk = client.sdk
    ask(client)
    assert client.sdk is sdk


def test_clients_of_one_endpoint_share_the_sdk_client_and_its_pool(fake):
    fake.add("one", "two")
    first, second = client_for(fake), client_for(fake)
    ask(first)
    sdk = first.sdk
    first.close()  # an agent built for one turn closes its client: the pool stays
    ask(second)
    assert second.sdk is sdk
    assert client_for(fake, timeout=5.0).sdk is not sdk  # other settings, another client


# --- tool calls --------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("chunks", [1, 9])
def test_streamed_tool_call_in_one_or_many_chunks(fake, mode, chunks):
    fake.add(
        {
            "calls": [{"name": "get_weather", "arguments": ARGUMENTS, "id": "call_x"}],
            "chunks": chunks,
        }
    )
    events = []
    response = ask(client_for(fake, mode), stream=True, tools=TOOLS, events=events)
    assert response.finish_reason == "tool_calls"
    assert response.message["content"] is None
    assert response.message["tool_calls"] == [
        {
            "id": "call_x",
            "type": "function",
            "function": {"name": "get_weather", "arguments": ARGUMENTS},
        }
    ]
    started = [d for e, d in events if e == "tool_call_started"]
    assert started == [{"index": 0, "id": "call_x", "name": "get_weather"}]


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stream", [False, True])
def test_parallel_tool_calls(fake, mode, stream):
    fake.add(
        Turn(
            text="Checking both.",
            calls=[Call("get_weather", {"city": "Oslo"}, "call_a"), Call("get_time", {}, "call_b")],
        )
    )
    events = []
    response = ask(client_for(fake, mode), stream=stream, tools=TOOLS, events=events)
    calls = response.message["tool_calls"]
    assert [(c["id"], c["function"]["name"]) for c in calls] == [
        ("call_a", "get_weather"),
        ("call_b", "get_time"),
    ]
    assert json.loads(calls[0]["function"]["arguments"]) == {"city": "Oslo"}
    assert json.loads(calls[1]["function"]["arguments"]) == {}
    assert response.message["content"] == "Checking both."
    if stream:
        started = [(d["index"], d["id"]) for e, d in events if e == "tool_call_started"]
        assert started == [(0, "call_a"), (1, "call_b")]


@pytest.mark.parametrize("mode", MODES)
def test_tools_are_sent_in_the_wire_format(fake, mode):
    fake.add("ok")
    ask(client_for(fake, mode), tools=TOOLS)
    tools = fake.last_request.json["tools"]
    if mode == "chat_completions":
        assert tools == TOOLS
    else:
        assert [t["name"] for t in tools] == ["get_time", "get_weather"]
        assert all(t["type"] == "function" and t["strict"] is False for t in tools)


# --- reasoning ---------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stream", [False, True])
def test_reasoning(fake, mode, stream):
    fake.add({"text": "42", "reasoning": "Six times seven."})
    events = []
    response = ask(client_for(fake, mode), stream=stream, events=events)
    assert response.message["reasoning"] == "Six times seven."
    assert response.message["content"] == "42"
    reasoning = "".join(d["text"] for e, d in events if e == "reasoning_delta")
    assert reasoning == ("Six times seven." if stream else "")


@pytest.mark.parametrize("stream", [False, True])
def test_responses_reasoning_items_are_replayed(fake, stream):
    fake.add(
        {"reasoning": "Need the weather.", "calls": [{"name": "get_weather", "arguments": "{}"}]},
        "Sunny.",
    )
    client = client_for(fake, "codex_responses")
    first = ask(client, stream=stream, tools=TOOLS)
    assistant = first.message
    items = assistant["_responses_items"]
    assert items[0]["type"] == "reasoning" and items[0]["encrypted_content"]
    call_id = assistant["tool_calls"][0]["id"]

    source = [
        {"role": "user", "content": "hi"},
        assistant,
        {"role": "tool", "tool_call_id": call_id, "content": "Sunny"},
    ]
    wire = [{"role": "system", "content": "sys"}] + [
        {k: v for k, v in m.items() if not k.startswith("_") and k != "reasoning"} for m in source
    ]
    second = ask(client, stream=stream, tools=TOOLS, messages=wire, source_messages=source)
    assert second.message["content"] == "Sunny."
    sent = fake.last_request.json["input"]
    assert [i.get("type", "message") for i in sent] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]
    assert sent[1]["encrypted_content"] == items[0]["encrypted_content"]
    assert sent[2]["call_id"] == sent[3]["call_id"] == call_id


# --- errors ------------------------------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stream", [False, True])
def test_rate_limit_with_retry_after(fake, mode, stream):
    fake.add({"error": {"status": 429, "message": "Slow down please", "retry_after": 1}})
    with pytest.raises(RateLimitError) as info:
        ask(client_for(fake, mode), stream=stream)
    error = info.value
    assert (error.status, error.kind, error.retryable, error.retry_after) == (
        429,
        "rate_limit",
        True,
        1.0,
    )
    assert "HTTP 429" in str(error) and "Slow down please" in str(error)
    assert error.provider == "custom"


@pytest.mark.parametrize("mode", MODES)
def test_server_error(fake, mode):
    fake.add({"error": {"status": 500}})
    with pytest.raises(ProviderError) as info:
        ask(client_for(fake, mode), stream=True)
    assert (info.value.kind, info.value.status, info.value.retryable) == ("server", 500, True)


@pytest.mark.parametrize("mode", MODES)
def test_authentication_error(fake, mode):
    fake.add({"error": {"status": 401}})
    with pytest.raises(AuthenticationError) as info:
        ask(client_for(fake, mode))
    assert info.value.status == 401 and not info.value.retryable


@pytest.mark.parametrize("mode", MODES)
def test_context_overflow(fake, mode):
    message = "This model's maximum context length is 8192 tokens; you sent 9000."
    fake.add({"error": {"status": 400, "message": message}})
    with pytest.raises(ContextOverflowError) as info:
        ask(client_for(fake, mode))
    assert info.value.status == 400 and message in str(info.value)


@pytest.mark.parametrize(
    ("status", "kind"),
    [
        (402, "billing"),
        (403, "auth"),
        (404, "model_not_found"),
        (408, "timeout"),
        (422, "bad_request"),
        (503, "overloaded"),
        (529, "overloaded"),
    ],
)
def test_other_statuses(fake, status, kind):
    fake.add({"error": {"status": status}})
    with pytest.raises(ProviderError) as info:
        ask(client_for(fake))
    assert (info.value.status, info.value.kind) == (status, kind)


def test_client_timeout(fake):
    fake.add({"hang": True})
    started = time.monotonic()
    with pytest.raises(ProviderError) as info:
        ask(client_for(fake, timeout=0.3))
    assert info.value.kind == "timeout" and info.value.retryable
    assert time.monotonic() - started < 5


def test_connection_refused():
    client = plugin.create_client(
        ProviderSettings(provider="custom", model="m", base_url="http://127.0.0.1:9/v1")
    )
    with pytest.raises(ProviderError) as info:
        ask(client)
    assert info.value.kind == "connection" and info.value.retryable


# --- broken streams and interrupts -------------------------------------------------------------


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize("stream", [False, True])
def test_a_broken_stream_is_a_retryable_error(fake, mode, stream):
    fake.add(
        {"text": "a long answer that will not arrive whole", "chunks": 8, "break_stream_after": 4}
    )
    events = []
    with pytest.raises(ProviderError) as info:
        ask(client_for(fake, mode), stream=stream, events=events)
    assert info.value.kind == "connection" and info.value.retryable


def _busy_call_threads():
    from hermes_provider_openai.client import CALL_THREADS

    return CALL_THREADS.busy


@pytest.mark.parametrize("mode", MODES)
@pytest.mark.parametrize(
    "step",
    [
        {"text": "x" * 200, "chunks": 100, "chunk_delay": 0.04},  # streams slowly
        {"text": "abcdefgh", "chunks": 8, "hang_after": 7},  # stops sending mid-stream
    ],
    ids=["slow", "hang"],
)
def test_interrupt_mid_stream(fake, mode, step):
    fake.add(step)
    client = client_for(fake, mode)
    client.prepare()
    before = _busy_call_threads()
    events = []
    request = ModelRequest(
        model="m",
        messages=[{"role": "user", "content": "hi"}],
        stream=True,
        sink=lambda e, d: events.append((e, d)),
    )
    timer = threading.Timer(0.4, request.cancel.set)
    timer.start()
    started = time.monotonic()
    with pytest.raises(Cancelled) as info:  # the contract's one cancellation, not a failure
        client.complete(request)
    elapsed = time.monotonic() - started
    timer.join()
    assert not isinstance(info.value, ProviderError)
    assert str(info.value).endswith(": the model call was cancelled")
    assert 0.35 < elapsed < 1.0
    assert any(e == "text_delta" for e, _ in events)  # it was cut mid-stream
    # the connection is shut: the worker thread is free again although the server never finishes
    assert wait_until(lambda: _busy_call_threads() == before, timeout=3)


def test_interrupt_while_waiting_for_a_whole_answer(fake):
    fake.add({"hang": True})
    client = client_for(fake)
    request = ModelRequest(model="m", messages=[{"role": "user", "content": "hi"}])
    threading.Timer(0.3, request.cancel.set).start()
    started = time.monotonic()
    with pytest.raises(Cancelled, match="cancelled"):
        client.complete(request)
    assert time.monotonic() - started < 1.0


def test_an_interrupt_before_the_call_sends_nothing(fake):
    request = ModelRequest(model="m", messages=[{"role": "user", "content": "hi"}])
    request.cancel.set()
    with pytest.raises(Cancelled, match="cancelled"):
        client_for(fake).complete(request)
    assert fake.requests == []


# --- prompt caching through the real SDK -------------------------------------------------------


def test_openrouter_claude_cache_markers_on_the_wire(fake):
    fake.add("ok")
    client = client_for(fake, provider="openrouter")
    client.settings.config = {"prompt_caching": {"cache_ttl": "1h"}}
    request = ModelRequest(
        model="anthropic/claude-sonnet-4.5",
        messages=[
            {"role": "system", "content": "sys"},
            {"role": "user", "content": "a"},
            {"role": "assistant", "content": "b"},
            {"role": "user", "content": "c"},
            {"role": "assistant", "content": "d"},
            {"role": "user", "content": "e"},
        ],
    )
    client.complete(request)
    sent = fake.last_request.json["messages"]
    marked = [
        i
        for i, m in enumerate(sent)
        if isinstance(m["content"], list) and "cache_control" in m["content"][-1]
    ]
    assert marked == [0, 3, 4, 5]
    assert sent[0]["content"][0]["cache_control"] == {"type": "ephemeral", "ttl": "1h"}
    assert sent[1] == {"role": "user", "content": "a"}


def test_the_codex_backend_is_always_streamed_on_the_wire(fake):
    # the Codex backend answers streamed requests only; any path prefix reaches the fake server
    fake.add({"text": "Hello", "reasoning": "hm"})
    client = plugin.create_client(
        ProviderSettings(
            provider="openai-codex",
            model="m",
            base_url=f"{fake.url}/chatgpt.com/backend-api/codex",
            api_mode="codex_responses",
        )
    )
    events = []
    response = ask(client, stream=False, events=events)
    assert response.message["content"] == "Hello"
    assert fake.last_request.path == "/chatgpt.com/backend-api/codex/responses"
    assert fake.last_request.stream is True
    assert events == []  # the caller did not ask for deltas


def test_calls_reuse_their_threads_and_never_wait_for_one(fake):
    from hermes_provider_openai.client import CALL_THREADS

    fake.add("one", "two", *([{"text": "slow", "delay": 1.0}] * 3))
    client = client_for(fake)
    ask(client)
    named = lambda: {t for t in threading.enumerate() if t.name == CALL_THREADS.name}  # noqa: E731
    threads = named()
    ask(client)
    assert named() == threads  # the second call ran on a thread of the first
    # three at once: none waits for another's thread to be free
    answers: list[str] = []
    callers = [
        threading.Thread(target=lambda: answers.append(ask(client).message["content"]))
        for _ in range(3)
    ]
    for caller in callers:
        caller.start()
    assert wait_until(lambda: len(fake.requests) == 5 and CALL_THREADS.busy == 3)
    for caller in callers:
        caller.join()
    assert answers == ["slow"] * 3
    assert wait_until(lambda: CALL_THREADS.busy == 0)


@pytest.mark.skipif(not hasattr(__import__("os"), "fork"), reason="needs fork")
def test_a_forked_child_runs_calls_on_threads_of_its_own(fake):
    import os

    from hermes_provider_openai.client import CALL_THREADS

    fake.add("one")
    ask(client_for(fake))  # leaves a thread of this process waiting for the next call
    assert wait_until(lambda: CALL_THREADS.busy == 0)
    pid = os.fork()
    if pid == 0:  # the child: that thread does not exist here
        ran = threading.Event()
        CALL_THREADS.submit(ran.set)
        os._exit(0 if ran.wait(5) else 1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
