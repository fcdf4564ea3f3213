"""Responses API conversion: instructions and input items (with replayed reasoning), tools,
responses and streams, checked with the SDK's own response types."""

from __future__ import annotations

import pytest
from hermes_provider_openai import responses
from openai.types.responses import Response

from hermes_hookspecs import ModelRequest, ProviderError, ProviderSettings

SETTINGS = ProviderSettings(
    provider="openai-codex",
    model="m",
    base_url="http://127.0.0.1:1/v1",
    api_mode="codex_responses",
)
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
REASONING = {
    "id": "rs_1",
    "type": "reasoning",
    "summary": [{"type": "summary_text", "text": "Need the weather."}],
    "encrypted_content": "opaque-1",
    "status": "completed",
}
CALL = {
    "id": "call_1",
    "type": "function",
    "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
}


def transcript():
    """(wire messages, source messages): what the core hands a provider."""
    source = [
        {"role": "user", "content": "Weather in Paris?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [CALL],
            "reasoning": "Need the weather.",
            "finish_reason": "tool_calls",
            "_responses_items": [REASONING],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "Sunny"},
        {"role": "assistant", "content": "Sunny.", "finish_reason": "stop"},
        {"role": "user", "content": "Thanks"},
    ]
    wire = [{"role": "system", "content": "Be brief."}]
    for message in source:
        stripped = {
            k: v
            for k, v in message.items()
            if not k.startswith("_") and k not in ("reasoning", "finish_reason")
        }
        if stripped["role"] == "assistant" and stripped["content"] is None:
            stripped["content"] = ""
        wire.append(stripped)
    return wire, source


def test_input_items_with_replayed_reasoning():
    wire, source = transcript()
    instructions, items = responses.build_input(
        ModelRequest(model="m", messages=wire, source_messages=source)
    )
    assert instructions == "Be brief."
    replayed = {k: v for k, v in REASONING.items() if k != "status"}
    assert items == [
        {"role": "user", "content": "Weather in Paris?"},
        replayed,
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "get_weather",
            "arguments": '{"city": "Paris"}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "Sunny"},
        {"role": "assistant", "content": "Sunny."},
        {"role": "user", "content": "Thanks"},
    ]


def test_reasoning_goes_before_the_text_of_its_message():
    wire = [
        {"role": "system", "content": "s"},
        {"role": "user", "content": "q"},
        {"role": "assistant", "content": "a"},
        {"role": "user", "content": "q2"},
    ]
    source = [dict(m) for m in wire[1:]]
    source[1]["_responses_items"] = [REASONING]
    _, items = responses.build_input(ModelRequest(model="m", messages=wire, source_messages=source))
    assert [i.get("type") or i["role"] for i in items] == ["user", "reasoning", "assistant", "user"]


def test_source_messages_aligned_from_the_end():
    # the source may be shorter than the wire list (e.g. an extra user message was appended)
    wire, source = transcript()
    wire.append({"role": "user", "content": "extra"})
    source = source[:-1] + [
        {"role": "user", "content": "Thanks"},
        {"role": "user", "content": "extra"},
    ]
    # (two user messages in a row are not valid in hermes, but alignment is what is tested)
    _, items = responses.build_input(ModelRequest(model="m", messages=wire, source_messages=source))
    assert sum(1 for i in items if i.get("type") == "reasoning") == 1


def test_mismatched_source_is_ignored():
    wire, source = transcript()
    source = [{"role": "user", "content": "x"}] * len(source)
    _, items = responses.build_input(ModelRequest(model="m", messages=wire, source_messages=source))
    assert not [i for i in items if i.get("type") == "reasoning"]


def test_without_source_messages_nothing_is_replayed():
    wire, _ = transcript()
    _, items = responses.build_input(ModelRequest(model="m", messages=wire))
    assert not [i for i in items if i.get("type") == "reasoning"]
    assert [i.get("type") for i in items].count("function_call") == 1


def test_reasoning_without_encrypted_content_is_not_replayed():
    bare = {k: v for k, v in REASONING.items() if k != "encrypted_content"}
    assert responses.replay_items({"_responses_items": [bare, {"type": "message"}]}) == []


def test_images_become_input_images():
    wire = [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {
                    "type": "image_url",
                    "image_url": {"url": "data:image/png;base64,AA", "detail": "low"},
                },
            ],
        }
    ]
    instructions, items = responses.build_input(ModelRequest(model="m", messages=wire))
    assert instructions is None
    assert items[0]["content"] == [
        {"type": "input_text", "text": "what is this?"},
        {"type": "input_image", "image_url": "data:image/png;base64,AA", "detail": "low"},
    ]


def test_tools_become_function_tools():
    assert responses.convert_tools(TOOLS) == [
        {
            "type": "function",
            "name": "get_weather",
            "description": "Weather for a city",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
            "strict": False,
        }
    ]


def test_body():
    wire, source = transcript()
    request = ModelRequest(
        model="m",
        messages=wire,
        source_messages=source,
        tools=TOOLS,
        max_tokens=50,
        options={"reasoning": {"effort": "high", "summary": "auto"}},
    )
    body = responses.build_body(request, SETTINGS, stream=True)
    assert body["model"] == "m"
    assert body["instructions"] == "Be brief."
    assert body["store"] is False
    assert body["include"] == ["reasoning.encrypted_content"]
    assert body["max_output_tokens"] == 50
    assert body["reasoning"] == {"effort": "high", "summary": "auto"}
    assert body["stream"] is True
    assert body["tools"][0]["name"] == "get_weather"
    assert "messages" not in body


def test_body_without_tools_or_stream():
    body = responses.build_body(
        ModelRequest(model="m", messages=[{"role": "user", "content": "hi"}]),
        SETTINGS,
        stream=False,
    )
    assert "tools" not in body and "stream" not in body and "instructions" not in body


# --- responses ---------------------------------------------------------------------------------


def make_response(output, status="completed", incomplete=None, usage=None):
    return Response.model_validate(
        {
            "id": "resp_1",
            "object": "response",
            "created_at": 1,
            "model": "m-2025",
            "status": status,
            "incomplete_details": incomplete,
            "output": output,
            "parallel_tool_calls": True,
            "tool_choice": "auto",
            "tools": [],
            "error": None,
            "instructions": None,
            "metadata": {},
            "temperature": 1.0,
            "top_p": 1.0,
            "usage": usage
            or {
                "input_tokens": 100,
                "input_tokens_details": {"cached_tokens": 60, "cache_write_tokens": 30},
                "output_tokens": 20,
                "output_tokens_details": {"reasoning_tokens": 12},
                "total_tokens": 120,
            },
        }
    )


def message_item(text):
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call_item(call_id="call_7", name="get_weather", arguments='{"city":"Rome"}'):
    return {
        "id": "fc_1",
        "type": "function_call",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
        "status": "completed",
    }


def test_text_response_and_usage():
    response = responses.parse_response(make_response([message_item("Hello")]))
    assert response.message == {"role": "assistant", "content": "Hello"}
    assert response.finish_reason == "stop"
    assert response.model == "m-2025"
    assert response.usage.as_dict() == {
        "input_tokens": 100,
        "output_tokens": 20,
        "cache_read_tokens": 60,
        "cache_write_tokens": 30,
        "reasoning_tokens": 12,
    }


def test_function_calls_keep_their_call_ids():
    response = responses.parse_response(
        make_response([REASONING, call_item(), call_item("call_8", "other", "{}")])
    )
    assert response.finish_reason == "tool_calls"
    assert [c["id"] for c in response.message["tool_calls"]] == ["call_7", "call_8"]
    assert response.message["tool_calls"][0] == {
        "id": "call_7",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city":"Rome"}'},
    }
    assert response.message["reasoning"] == "Need the weather."
    assert response.message["_responses_items"] == [REASONING]
    assert response.message["content"] is None


def test_round_trip_replays_what_was_returned():
    response = responses.parse_response(make_response([REASONING, call_item()]))
    source = [{"role": "user", "content": "q"}, response.message]
    wire = [{"role": "user", "content": "q"}, {**response.message, "content": ""}]
    del wire[1]["_responses_items"], wire[1]["reasoning"]
    _, items = responses.build_input(ModelRequest(model="m", messages=wire, source_messages=source))
    assert items[1]["encrypted_content"] == "opaque-1"
    assert items[2]["call_id"] == "call_7"


@pytest.mark.parametrize(
    ("reason", "expected"), [("max_output_tokens", "length"), ("content_filter", "content_filter")]
)
def test_incomplete_responses(reason, expected):
    response = responses.parse_response(
        make_response([message_item("cut")], status="incomplete", incomplete={"reason": reason})
    )
    assert response.finish_reason == expected


def test_failed_response_raises():
    with pytest.raises(ProviderError) as info:
        responses.parse_response(
            {"status": "failed", "error": {"code": "rate_limit_exceeded", "message": "slow"}}
        )
    assert info.value.kind == "rate_limit"


# --- streams -----------------------------------------------------------------------------------


def stream_of(events):
    seen = []
    request = ModelRequest(
        model="m", messages=[], stream=True, sink=lambda e, d: seen.append((e, d))
    )
    accumulator = responses.ResponsesStream(request)
    for event in events:
        accumulator.feed(event)
    return accumulator, seen


def test_stream_events():
    final = make_response([REASONING, message_item("Hi"), call_item()])
    accumulator, seen = stream_of(
        [
            {"type": "response.created", "response": {}},
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {"type": "reasoning", "id": "rs_1", "summary": []},
            },
            {"type": "response.reasoning_summary_text.delta", "output_index": 0, "delta": "Need"},
            {
                "type": "response.output_item.added",
                "output_index": 1,
                "item": {
                    "type": "message",
                    "id": "m",
                    "content": [],
                    "role": "assistant",
                    "status": "in_progress",
                },
            },
            {"type": "response.output_text.delta", "output_index": 1, "delta": "H"},
            {"type": "response.output_text.delta", "output_index": 1, "delta": "i"},
            {
                "type": "response.output_item.added",
                "output_index": 2,
                "item": {**call_item(), "arguments": ""},
            },
            {
                "type": "response.function_call_arguments.delta",
                "output_index": 2,
                "delta": '{"city"',
            },
            {"type": "response.completed", "response": final},
        ]
    )
    assert seen == [
        ("reasoning_delta", {"text": "Need"}),
        ("text_delta", {"text": "H"}),
        ("text_delta", {"text": "i"}),
        ("tool_call_started", {"index": 0, "id": "call_7", "name": "get_weather"}),
    ]
    response = accumulator.result()
    assert response.message["content"] == "Hi"
    assert response.message["tool_calls"][0]["function"]["arguments"] == '{"city":"Rome"}'
    assert response.usage.input_tokens == 100


def test_stream_final_event_without_output_uses_the_streamed_items():
    accumulator, _ = stream_of(
        [
            {
                "type": "response.output_item.added",
                "output_index": 0,
                "item": {**call_item(), "arguments": ""},
            },
            {
                "type": "response.function_call_arguments.delta",
                "output_index": 0,
                "delta": '{"city":',
            },
            {
                "type": "response.function_call_arguments.delta",
                "output_index": 0,
                "delta": '"Rome"}',
            },
            {"type": "response.output_item.added", "output_index": 1, "item": REASONING},
            {"type": "response.output_item.done", "output_index": 1, "item": REASONING},
            {
                "type": "response.completed",
                "response": {"status": "completed", "output": [], "usage": None},
            },
        ]
    )
    response = accumulator.result()
    assert response.message["tool_calls"][0]["function"]["arguments"] == '{"city":"Rome"}'
    assert response.message["_responses_items"] == [REASONING]


def test_stream_without_completion_is_a_retryable_error():
    accumulator, _ = stream_of([{"type": "response.output_text.delta", "delta": "x"}])
    with pytest.raises(ProviderError) as info:
        accumulator.result()
    assert info.value.kind == "connection" and info.value.retryable


@pytest.mark.parametrize(
    ("event", "kind"),
    [
        ({"type": "error", "code": "rate_limit_exceeded", "message": "slow down"}, "rate_limit"),
        (
            {"type": "error", "code": "context_length_exceeded", "message": "too long"},
            "context_overflow",
        ),
        ({"type": "error", "code": "server_error", "message": "oops"}, "server"),
        (
            {
                "type": "response.failed",
                "response": {"error": {"code": "server_error", "message": "x"}},
            },
            "server",
        ),
    ],
)
def test_stream_errors(event, kind):
    with pytest.raises(ProviderError) as info:
        stream_of([event])
    assert info.value.kind == kind
