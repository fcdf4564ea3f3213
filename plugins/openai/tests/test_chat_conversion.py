"""Chat completions conversion: request bodies, prompt-cache markers, responses and streams,
checked with the SDK's own response types."""

from __future__ import annotations

import copy

import pytest
from hermes_provider_openai import chat
from openai.types.chat import ChatCompletion, ChatCompletionChunk

from hermes_hookspecs import ModelRequest, ProviderError, ProviderSettings

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]


def settings(provider="custom", base_url="http://127.0.0.1:1/v1", config=None):
    return ProviderSettings(provider=provider, model="m", base_url=base_url, config=config or {})


def conversation():
    return [
        {"role": "system", "content": "You are terse."},
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": "",
            "tool_calls": [
                {
                    "id": "call_1",
                    "type": "function",
                    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "And tomorrow?"},
    ]


# --- request bodies ----------------------------------------------------------------------------


def test_body_minimal():
    request = ModelRequest(model="m", messages=[{"role": "user", "content": "hi"}])
    assert chat.build_body(request, settings()) == {
        "model": "m",
        "messages": [{"role": "user", "content": "hi"}],
    }


def test_body_full():
    request = ModelRequest(
        model="m",
        messages=conversation(),
        tools=TOOLS,
        stream=True,
        max_tokens=100,
        options={"temperature": 0.2, "top_p": 0.5},
    )
    body = chat.build_body(request, settings())
    assert body["messages"] == conversation()
    assert body["tools"] == TOOLS
    assert body["max_tokens"] == 100
    assert body["temperature"] == 0.2 and body["top_p"] == 0.5
    assert body["stream"] is True
    assert body["stream_options"] == {"include_usage": True}


def test_openai_itself_gets_max_completion_tokens():
    request = ModelRequest(
        model="gpt-5", messages=[{"role": "user", "content": "hi"}], max_tokens=9
    )
    body = chat.build_body(request, settings("openai", "https://api.openai.com/v1"))
    assert body["max_completion_tokens"] == 9 and "max_tokens" not in body


def test_internal_fields_never_reach_the_wire():
    messages = [
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "yo", "reasoning": "r", "finish_reason": "stop", "_x": 1},
        {"role": "user", "content": "again"},
    ]
    body = chat.build_body(ModelRequest(model="m", messages=messages), settings())
    assert body["messages"][1] == {"role": "assistant", "content": "yo"}
    assert messages[1]["reasoning"] == "r"  # the caller's messages are untouched


def test_the_body_is_the_same_for_the_same_request():
    request = ModelRequest(model="m", messages=conversation(), tools=TOOLS)
    assert chat.build_body(request, settings()) == chat.build_body(request, settings())


# --- prompt caching ----------------------------------------------------------------------------


def markers(messages):
    found = []
    for index, message in enumerate(messages):
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                if "cache_control" in part:
                    found.append((index, part["cache_control"]))
    return found


def openrouter_body(model="anthropic/claude-sonnet-4.5", messages=None, config=None):
    request = ModelRequest(model=model, messages=messages or conversation(), tools=TOOLS)
    return chat.build_body(
        request, settings("openrouter", "https://openrouter.ai/api/v1", config=config)
    )


def test_cache_markers_on_system_and_last_three_that_can_carry_one():
    body = openrouter_body()
    # system (0), then from the end: user (5), assistant "Sunny." (4), tool (3); the
    # assistant with only a tool call (2) has no text to carry a marker
    assert [i for i, _ in markers(body["messages"])] == [0, 3, 4, 5]
    assert all(m == {"type": "ephemeral"} for _, m in markers(body["messages"]))
    system = body["messages"][0]
    assert system["content"] == [
        {"type": "text", "text": "You are terse.", "cache_control": {"type": "ephemeral"}}
    ]
    assert body["messages"][1] == conversation()[1]  # unmarked messages are unchanged
    assert body["messages"][2] == conversation()[2]


def test_never_more_than_four_markers():
    messages = [{"role": "system", "content": "s"}]
    for i in range(10):
        messages += [
            {"role": "user", "content": f"u{i}"},
            {"role": "assistant", "content": f"a{i}"},
        ]
    found = markers(openrouter_body(messages=messages)["messages"])
    assert len(found) == 4
    assert [i for i, _ in found] == [0, 18, 19, 20]


def test_without_a_system_prompt_three_markers():
    messages = [{"role": "user", "content": f"u{i}"} for i in range(5)]
    assert [i for i, _ in markers(openrouter_body(messages=messages)["messages"])] == [2, 3, 4]


def test_marker_goes_on_the_last_text_part():
    messages = [
        {"role": "system", "content": "s"},
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,AA"}},
                {"type": "text", "text": "at this"},
                {"type": "image_url", "image_url": {"url": "data:image/png;base64,BB"}},
            ],
        },
    ]
    original = copy.deepcopy(messages)
    content = openrouter_body(messages=messages)["messages"][1]["content"]
    assert [("cache_control" in p) for p in content] == [False, False, True, False]
    assert messages == original


def test_one_hour_ttl():
    body = openrouter_body(config={"prompt_caching": {"cache_ttl": "1h"}})
    assert {repr(m) for _, m in markers(body["messages"])} == {
        repr({"type": "ephemeral", "ttl": "1h"})
    }


def test_caching_can_be_turned_off():
    body = openrouter_body(config={"prompt_caching": {"enabled": False}})
    assert markers(body["messages"]) == []


@pytest.mark.parametrize("model", ["anthropic/claude-opus-4", "claude-3-5-haiku", "anthropic/x"])
def test_claude_models_through_openrouter_get_markers(model):
    assert markers(openrouter_body(model=model)["messages"])


@pytest.mark.parametrize(
    ("provider", "url", "model"),
    [
        ("openrouter", "https://openrouter.ai/api/v1", "openai/gpt-5"),
        ("openai", "https://api.openai.com/v1", "claude-lookalike"),
        ("custom", "http://127.0.0.1:1/v1", "anthropic/claude-sonnet-4.5"),
    ],
)
def test_no_markers_elsewhere(provider, url, model):
    request = ModelRequest(model=model, messages=conversation())
    body = chat.build_body(request, settings(provider, url))
    assert markers(body["messages"]) == []
    assert body["messages"] == conversation()


def test_custom_provider_with_an_openrouter_url_gets_markers():
    request = ModelRequest(model="anthropic/claude-sonnet-4.5", messages=conversation())
    body = chat.build_body(request, settings("custom", "https://openrouter.ai/api/v1"))
    assert len(markers(body["messages"])) == 4


# --- whole responses ---------------------------------------------------------------------------


def completion(message, finish="stop", usage=None, **extra):
    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": "m-2025",
            "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": usage or {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
            **extra,
        }
    )


def test_text_response():
    response = chat.parse_completion(completion({"role": "assistant", "content": "Hello"}))
    assert response.message == {"role": "assistant", "content": "Hello"}
    assert response.finish_reason == "stop"
    assert response.model == "m-2025"
    assert response.usage.input_tokens == 10 and response.usage.output_tokens == 5
    assert response.raw is not None


def test_tool_call_response():
    call = {
        "id": "call_9",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Oslo"}'},
    }
    response = chat.parse_completion(
        completion({"role": "assistant", "content": None, "tool_calls": [call]}, "tool_calls")
    )
    assert response.message == {"role": "assistant", "content": None, "tool_calls": [call]}
    assert response.finish_reason == "tool_calls"


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_reasoning_response(field):
    response = chat.parse_completion(
        completion({"role": "assistant", "content": "42", field: "thought about it"})
    )
    assert response.message["reasoning"] == "thought about it"


def test_a_refusal_is_the_answer():
    response = chat.parse_completion(
        completion({"role": "assistant", "content": None, "refusal": "I can't help with that."})
    )
    assert response.message["content"] == "I can't help with that."


def test_empty_content_becomes_none():
    response = chat.parse_completion(completion({"role": "assistant", "content": ""}))
    assert response.message == {"role": "assistant", "content": None}


@pytest.mark.parametrize(
    ("wire", "has_calls", "expected"),
    [
        ("stop", False, "stop"),
        ("length", False, "length"),
        ("content_filter", False, "content_filter"),
        ("tool_calls", True, "tool_calls"),
        ("stop", True, "tool_calls"),  # some servers say stop with tool calls
        ("tool_calls", False, "stop"),  # ... or tool_calls without any
        ("function_call", True, "tool_calls"),
        (None, False, "stop"),
        ("something_new", False, "stop"),
    ],
)
def test_finish_reasons(wire, has_calls, expected):
    assert chat.finish_reason(wire, has_calls) == expected


def test_usage_mapping():
    usage = completion(
        {"role": "assistant", "content": "x"},
        usage={
            "prompt_tokens": 1000,
            "completion_tokens": 200,
            "total_tokens": 1200,
            "prompt_tokens_details": {"cached_tokens": 800, "cache_write_tokens": 100},
            "completion_tokens_details": {"reasoning_tokens": 150},
        },
    )
    assert chat.parse_completion(usage).usage.as_dict() == {
        "input_tokens": 1000,
        "output_tokens": 200,
        "cache_read_tokens": 800,
        "cache_write_tokens": 100,
        "reasoning_tokens": 150,
    }


def test_deepseek_cache_hits():
    usage = {
        "prompt_tokens": 100,
        "completion_tokens": 3,
        "prompt_cache_hit_tokens": 64,
        "prompt_cache_miss_tokens": 36,
    }
    assert chat.usage_from(usage).cache_read_tokens == 64


def test_missing_usage_is_zero():
    assert chat.usage_from(None).as_dict()["input_tokens"] == 0


def test_no_choices_is_an_error():
    with pytest.raises(ProviderError) as info:
        chat.parse_completion({"choices": [], "error": {"code": 502, "message": "upstream died"}})
    assert info.value.status == 502 and info.value.kind == "server"


# --- streams -----------------------------------------------------------------------------------


def chunk(delta=None, finish=None, usage=None, choices=True):
    return ChatCompletionChunk.model_validate(
        {
            "id": "c",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "m-2025",
            "choices": [{"index": 0, "delta": delta or {}, "finish_reason": finish}]
            if choices
            else [],
            "usage": usage,
        }
    )


def play(chunks, sink_events=None):
    events = [] if sink_events is None else sink_events
    request = ModelRequest(
        model="m", messages=[], stream=True, sink=lambda e, d: events.append((e, d))
    )
    stream = chat.ChatStream(request)
    for c in chunks:
        stream.feed(c)
    return stream.result(), events


def test_stream_text_and_usage():
    response, events = play(
        [
            chunk({"role": "assistant", "content": ""}),
            chunk({"content": "Hel"}),
            chunk({"content": "lo"}),
            chunk({}, "stop"),
            chunk(
                usage={"prompt_tokens": 7, "completion_tokens": 2, "total_tokens": 9}, choices=False
            ),
        ]
    )
    assert events == [("text_delta", {"text": "Hel"}), ("text_delta", {"text": "lo"})]
    assert response.message == {"role": "assistant", "content": "Hello"}
    assert response.usage.input_tokens == 7 and response.usage.output_tokens == 2
    assert response.model == "m-2025"


def test_stream_tool_call_split_over_many_chunks_is_reassembled_exactly():
    arguments = '{"city": "Paris", "note": "a \\"quoted\\" word, ünïcode"}'
    pieces = [arguments[i : i + 3] for i in range(0, len(arguments), 3)]
    chunks = [
        chunk(
            {
                "tool_calls": [
                    {
                        "index": 0,
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "get_weather", "arguments": ""},
                    }
                ]
            }
        )
    ]
    chunks += [chunk({"tool_calls": [{"index": 0, "function": {"arguments": p}}]}) for p in pieces]
    chunks.append(chunk({}, "tool_calls"))
    response, events = play(chunks)
    assert response.message["tool_calls"] == [
        {
            "id": "call_a",
            "type": "function",
            "function": {"name": "get_weather", "arguments": arguments},
        }
    ]
    assert events == [("tool_call_started", {"index": 0, "id": "call_a", "name": "get_weather"})]
    assert response.finish_reason == "tool_calls"
    assert response.message["content"] is None


def test_stream_parallel_tool_calls_interleaved():
    def call(index, **fields):
        return chunk({"tool_calls": [{"index": index, **fields}]})

    response, events = play(
        [
            call(0, id="call_a", type="function", function={"name": "one", "arguments": '{"a"'}),
            call(1, id="call_b", type="function", function={"name": "two", "arguments": '{"b"'}),
            call(0, function={"arguments": ": 1}"}),
            call(1, function={"arguments": ": 2}"}),
            chunk({}, "tool_calls"),
        ]
    )
    calls = response.message["tool_calls"]
    assert [(c["id"], c["function"]["name"], c["function"]["arguments"]) for c in calls] == [
        ("call_a", "one", '{"a": 1}'),
        ("call_b", "two", '{"b": 2}'),
    ]
    assert [e for e, _ in events] == ["tool_call_started", "tool_call_started"]
    assert [d["index"] for _, d in events] == [0, 1]


def test_stream_calls_without_index_or_id():
    response, events = play(
        [
            # plain dicts: the SDK's own type insists on an index
            {"choices": [{"delta": {"tool_calls": [{"function": {"name": "one"}}]}}]},
            {
                "choices": [
                    {
                        "delta": {
                            "tool_calls": [{"function": {"name": "two", "arguments": '{"x": 1}'}}]
                        }
                    }
                ]
            },
            {"choices": [{"delta": {}, "finish_reason": "stop"}]},
        ]
    )
    calls = response.message["tool_calls"]
    assert [c["function"]["name"] for c in calls] == ["one", "two"]
    assert [c["function"]["arguments"] for c in calls] == ["{}", '{"x": 1}']
    assert all(c["id"].startswith("call_") for c in calls)
    assert calls[0]["id"] != calls[1]["id"]
    assert [d["id"] for _, d in events] == [c["id"] for c in calls]


@pytest.mark.parametrize("field", ["reasoning_content", "reasoning"])
def test_stream_reasoning(field):
    response, events = play(
        [
            chunk({field: "let me "}),
            chunk({field: "think"}),
            chunk({"content": "42"}),
            chunk({}, "stop"),
        ]
    )
    assert response.message == {"role": "assistant", "content": "42", "reasoning": "let me think"}
    assert events[:2] == [
        ("reasoning_delta", {"text": "let me "}),
        ("reasoning_delta", {"text": "think"}),
    ]


def test_stream_that_never_finishes_is_a_retryable_error():
    with pytest.raises(ProviderError) as info:
        play([chunk({"content": "Hel"})])
    assert info.value.kind == "connection" and info.value.retryable


def test_stream_error_chunk_raises():
    request = ModelRequest(model="m", messages=[])
    stream = chat.ChatStream(request)
    with pytest.raises(ProviderError) as info:
        stream.feed({"error": {"code": 429, "message": "slow down"}, "choices": []})
    assert info.value.kind == "rate_limit"


def test_stream_length_finish():
    response, _ = play([chunk({"content": "cut"}), chunk({}, "length")])
    assert response.finish_reason == "length"
