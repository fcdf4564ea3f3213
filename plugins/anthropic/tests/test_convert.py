"""Conversion between hermes messages and Anthropic's wire format: pure unit tests."""

from __future__ import annotations

import copy
import json

import pytest
from hermes_provider_anthropic.convert import (
    THINKING_KEY,
    StreamAssembler,
    apply_cache_control,
    build_params,
    convert_messages,
    convert_tools,
    finish_reason,
    parse_arguments,
    parse_message,
    thinking_param,
    usage_from,
)

from hermes_hookspecs import ModelRequest

SYSTEM = {"role": "system", "content": "You are terse."}


def call(call_id, name, arguments):
    return {
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": arguments},
    }


def tool_result(call_id, content, name="t"):
    return {"role": "tool", "tool_call_id": call_id, "content": content, "tool_name": name}


def request(messages, **kw):
    return ModelRequest(model="claude-test", messages=messages, **kw)


WEATHER = {
    "type": "function",
    "function": {
        "name": "get_weather",
        "description": "Weather for a city",
        "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
    },
}


# --- system, user, assistant --------------------------------------------------------------


def test_system_goes_to_top_level_blocks():
    system, messages = convert_messages([SYSTEM, {"role": "user", "content": "hi"}])
    assert system == [{"type": "text", "text": "You are terse."}]
    assert messages == [{"role": "user", "content": [{"type": "text", "text": "hi"}]}]


def test_no_system_prompt_means_no_system_key():
    params = build_params(request([{"role": "user", "content": "hi"}]))
    assert "system" not in params
    assert params["messages"][0]["role"] == "user"


def test_assistant_text_and_tool_calls_become_blocks():
    _, messages = convert_messages(
        [
            SYSTEM,
            {"role": "user", "content": "weather?"},
            {
                "role": "assistant",
                "content": "Checking.",
                "tool_calls": [call("toolu_1", "get_weather", '{"city": "Paris"}')],
            },
            tool_result("toolu_1", "sunny"),
        ]
    )
    assert messages[1] == {
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Checking."},
            {
                "type": "tool_use",
                "id": "toolu_1",
                "name": "get_weather",
                "input": {"city": "Paris"},
            },
        ],
    }
    assert messages[2] == {
        "role": "user",
        "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "sunny"}],
    }


@pytest.mark.parametrize("arguments", ["{not json", "", None, "[1, 2]", '"str"'])
def test_invalid_tool_arguments_become_an_empty_input(arguments):
    _, messages = convert_messages(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("c1", "t", arguments)]},
            tool_result("c1", "ok"),
        ]
    )
    assert messages[1]["content"] == [{"type": "tool_use", "id": "c1", "name": "t", "input": {}}]


def test_parse_arguments():
    assert parse_arguments('{"a": 1}') == {"a": 1}
    assert parse_arguments({"a": 1}) == {"a": 1}
    assert parse_arguments("nope") == {}


def test_consecutive_tool_results_merge_into_one_user_message():
    _, messages = convert_messages(
        [
            {"role": "user", "content": "two things"},
            {
                "role": "assistant",
                "content": "",
                "tool_calls": [call("a", "t", "{}"), call("b", "t", "{}"), call("c", "t", "{}")],
            },
            tool_result("a", "one"),
            tool_result("b", "two"),
            tool_result("c", "three"),
        ]
    )
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "one"},
        {"type": "tool_result", "tool_use_id": "b", "content": "two"},
        {"type": "tool_result", "tool_use_id": "c", "content": "three"},
    ]


def test_user_message_after_tool_results_joins_them():
    _, messages = convert_messages(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("a", "t", "{}")]},
            tool_result("a", "done"),
            {"role": "user", "content": "and now?"},
        ]
    )
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "a", "content": "done"},
        {"type": "text", "text": "and now?"},
    ]


def test_tool_results_stay_ahead_of_text_in_a_merged_user_message():
    _, messages = convert_messages(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("a", "t", "{}")]},
            {"role": "user", "content": "early words"},
            tool_result("a", "done"),
        ]
    )
    assert [b["type"] for b in messages[2]["content"]] == ["tool_result", "text"]


def test_roles_alternate_on_every_conversion():
    history = [
        SYSTEM,
        {"role": "user", "content": "a"},
        {"role": "assistant", "content": ""},
        {"role": "user", "content": "b"},
        {"role": "assistant", "content": "x", "tool_calls": [call("1", "t", "{}")]},
        tool_result("1", "r"),
        {"role": "user", "content": "c"},
        {"role": "assistant", "content": "y"},
        {"role": "user", "content": "d"},
    ]
    _, messages = convert_messages(history)
    roles = [m["role"] for m in messages]
    assert roles[0] == "user"
    assert all(a != b for a, b in zip(roles, roles[1:], strict=False))


# --- empty content --------------------------------------------------------------------------


def test_empty_text_is_never_sent():
    _, messages = convert_messages(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": "", "tool_calls": [call("a", "t", "{}")]},
            tool_result("a", ""),
        ]
    )
    assert messages[1]["content"] == [{"type": "tool_use", "id": "a", "name": "t", "input": {}}]
    # an empty result is a tool_result without content
    assert messages[2]["content"] == [{"type": "tool_result", "tool_use_id": "a"}]
    for message in messages:
        assert message["content"], message
        for block in message["content"]:
            assert block.get("text", "x") != ""


def test_empty_assistant_message_is_dropped_and_users_merge():
    _, messages = convert_messages(
        [
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": ""},
            {"role": "user", "content": "second"},
        ]
    )
    assert messages == [
        {
            "role": "user",
            "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}],
        }
    ]


def test_empty_user_text_is_skipped():
    _, messages = convert_messages(
        [
            {"role": "user", "content": ""},
            {"role": "user", "content": [{"type": "text", "text": ""}]},
        ]
    )
    assert messages == []


def test_content_parts_and_images():
    _, messages = convert_messages(
        [
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "look"},
                    {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}},
                    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                ],
            }
        ]
    )
    assert messages[0]["content"] == [
        {"type": "text", "text": "look"},
        {"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "AAAA"}},
        {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
    ]


def test_without_tools_offered_tool_history_becomes_text():
    _, messages = convert_messages(
        [
            {"role": "user", "content": "go"},
            {"role": "assistant", "content": None, "tool_calls": [call("a", "lookup", '{"q": 1}')]},
            tool_result("a", "found it"),
            {"role": "user", "content": "summarise"},
        ],
        tools_offered=False,
    )
    kinds = [b["type"] for m in messages for b in m["content"]]
    assert set(kinds) == {"text"}
    assert messages[1]["content"][0]["text"] == '[called tool lookup with {"q": 1}]'
    assert messages[2]["content"][0]["text"] == "[result of lookup]\nfound it"


# --- tools ----------------------------------------------------------------------------------


def test_tools_convert_to_input_schema():
    assert convert_tools([WEATHER]) == [
        {
            "name": "get_weather",
            "description": "Weather for a city",
            "input_schema": {"type": "object", "properties": {"city": {"type": "string"}}},
        }
    ]
    bare = {"type": "function", "function": {"name": "noop"}}
    assert convert_tools([bare]) == [
        {"name": "noop", "input_schema": {"type": "object", "properties": {}}}
    ]


def test_no_tools_means_no_tools_key():
    assert "tools" not in build_params(request([{"role": "user", "content": "hi"}]))


# --- max_tokens and options -----------------------------------------------------------------


def test_max_tokens_precedence():
    msgs = [{"role": "user", "content": "hi"}]
    assert build_params(request(msgs))["max_tokens"] == 8192
    assert build_params(request(msgs), {"model": {"max_tokens": 1000}})["max_tokens"] == 1000
    assert (
        build_params(request(msgs, max_tokens=50), {"model": {"max_tokens": 1000}})["max_tokens"]
        == 50
    )


def test_options_are_merged():
    params = build_params(
        request(
            [{"role": "user", "content": "hi"}],
            options={"temperature": 0.2, "stop": "END", "reasoning_effort": "high"},
        )
    )
    assert params["temperature"] == 0.2
    assert params["stop_sequences"] == ["END"]
    assert "reasoning_effort" not in params


def test_thinking_budget_option():
    params = build_params(
        request([{"role": "user", "content": "hi"}], max_tokens=2000, options={"thinking": 4000})
    )
    assert params["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert params["max_tokens"] > 4000
    assert thinking_param({"type": "adaptive"}) == {"type": "adaptive"}
    assert thinking_param(0) is None and thinking_param(None) is None


# --- thinking replay ------------------------------------------------------------------------

SIGNED = [
    {"type": "thinking", "thinking": "Need the weather.", "signature": "sig-1", "extra": 1},
    {"type": "redacted_thinking", "data": "opaque"},
]


def thinking_history():
    assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("a", "get_weather", '{"city": "Oslo"}')],
        "reasoning": "Need the weather.",
        THINKING_KEY: copy.deepcopy(SIGNED),
        "finish_reason": "tool_calls",
    }
    source = [{"role": "user", "content": "weather in Oslo?"}, assistant, tool_result("a", "cold")]
    wire_assistant = {
        "role": "assistant",
        "content": None,
        "tool_calls": [call("a", "get_weather", '{"city": "Oslo"}')],
    }
    wire = [SYSTEM, source[0], wire_assistant, source[2]]
    return wire, source


def test_signed_thinking_is_replayed_first_from_source_messages():
    wire, source = thinking_history()
    _, messages = convert_messages(wire, source)
    assert messages[1]["content"] == [
        {"type": "thinking", "thinking": "Need the weather.", "signature": "sig-1"},
        {"type": "redacted_thinking", "data": "opaque"},
        {"type": "tool_use", "id": "a", "name": "get_weather", "input": {"city": "Oslo"}},
    ]


def test_thinking_is_not_replayed_onto_a_different_message():
    wire, source = thinking_history()
    source[1] = {**source[1], "tool_calls": [call("zzz", "get_weather", "{}")]}
    _, messages = convert_messages(wire, source)
    assert [b["type"] for b in messages[1]["content"]] == ["tool_use"]


def test_thinking_replay_survives_an_appended_message():
    wire, source = thinking_history()
    wire = [*wire, {"role": "user", "content": "extra"}]  # appended after the transcript
    _, messages = convert_messages(wire, source)
    assert messages[1]["content"][0]["type"] == "thinking"


def test_without_source_messages_nothing_is_replayed():
    wire, _ = thinking_history()
    _, messages = convert_messages(wire)
    assert [b["type"] for b in messages[1]["content"]] == ["tool_use"]


def test_build_params_replays_thinking_via_request():
    wire, source = thinking_history()
    params = build_params(request(wire, source_messages=source, tools=[WEATHER]))
    assert params["messages"][1]["content"][0]["signature"] == "sig-1"
    # thinking blocks never carry cache markers
    for message in params["messages"]:
        for block in message["content"]:
            if block["type"] in ("thinking", "redacted_thinking"):
                assert "cache_control" not in block


# --- prompt caching -------------------------------------------------------------------------


def markers(params):
    found = []
    for i, block in enumerate(params.get("system", [])):
        if "cache_control" in block:
            found.append(("system", i, block["cache_control"]))
    for m, message in enumerate(params["messages"]):
        for b, block in enumerate(message["content"]):
            if "cache_control" in block:
                found.append((m, b, block["cache_control"]))
    return found


def long_history(turns=4):
    history = [SYSTEM]
    for n in range(turns):
        history += [
            {"role": "user", "content": f"q{n}"},
            {
                "role": "assistant",
                "content": f"checking {n}",
                "tool_calls": [call(f"c{n}", "t", "{}")],
            },
            tool_result(f"c{n}", f"r{n}"),
            {"role": "assistant", "content": f"a{n}"},
        ]
    return history + [{"role": "user", "content": "last"}]


def test_four_breakpoints_system_and_last_three_messages():
    params = build_params(
        request(long_history(), tools=[{"type": "function", "function": {"name": "t"}}])
    )
    found = markers(params)
    assert len(found) == 4
    n = len(params["messages"])
    assert found[0] == ("system", 0, {"type": "ephemeral"})
    assert [f[0] for f in found[1:]] == [n - 3, n - 2, n - 1]
    for m, b, _ in found[1:]:
        assert b == len(params["messages"][m]["content"]) - 1  # the last block of the message


def test_short_conversation_gets_fewer_breakpoints():
    params = build_params(request([SYSTEM, {"role": "user", "content": "hi"}]))
    assert [f[:2] for f in markers(params)] == [("system", 0), (0, 0)]


def test_one_hour_ttl():
    params = build_params(request(long_history()), {"prompt_caching": {"cache_ttl": "1h"}})
    assert {json.dumps(f[2]) for f in markers(params)} == {'{"type": "ephemeral", "ttl": "1h"}'}
    params = build_params(request(long_history()), {"prompt_caching": {"cache_ttl": "5m"}})
    assert {json.dumps(f[2]) for f in markers(params)} == {'{"type": "ephemeral"}'}


def test_caching_can_be_turned_off():
    params = build_params(request(long_history()), {"prompt_caching": {"enabled": False}})
    assert markers(params) == []


def test_messages_ending_in_thinking_are_skipped_for_markers():
    system = [{"type": "text", "text": "s"}]
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "a"}]},
        {"role": "assistant", "content": [{"type": "thinking", "thinking": "t", "signature": "s"}]},
        {"role": "user", "content": [{"type": "text", "text": "b"}]},
    ]
    assert apply_cache_control(system, messages) == 3
    assert "cache_control" not in messages[1]["content"][0]
    assert "cache_control" in messages[0]["content"][0]


def test_conversion_does_not_touch_the_input():
    history = long_history()
    before = copy.deepcopy(history)
    build_params(request(history))
    assert history == before


def test_system_and_tools_are_identical_across_requests():
    tools = [WEATHER]
    short = build_params(request([SYSTEM, {"role": "user", "content": "hi"}], tools=tools))
    long = build_params(request(long_history(), tools=tools))
    assert json.dumps(short["system"]) == json.dumps(long["system"])
    assert json.dumps(short["tools"]) == json.dumps(long["tools"])


# --- responses ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "stop_reason, expected",
    [
        ("end_turn", "stop"),
        ("stop_sequence", "stop"),
        ("tool_use", "tool_calls"),
        ("max_tokens", "length"),
        ("refusal", "content_filter"),
        ("model_context_window_exceeded", "length"),
        ("something_new", "stop"),
    ],
)
def test_stop_reasons(stop_reason, expected):
    assert finish_reason(stop_reason) == expected


def test_usage_counts_the_whole_prompt():
    usage = usage_from(
        {
            "input_tokens": 10,
            "cache_read_input_tokens": 1000,
            "cache_creation_input_tokens": 200,
            "output_tokens": 7,
            "output_tokens_details": {"thinking_tokens": 3},
        }
    )
    assert usage.as_dict() == {
        "input_tokens": 1210,
        "output_tokens": 7,
        "cache_read_tokens": 1000,
        "cache_write_tokens": 200,
        "reasoning_tokens": 3,
    }
    assert usage_from({"input_tokens": 5, "output_tokens": 1}).input_tokens == 5
    assert usage_from(None).input_tokens == 0


def test_parse_message_with_thinking_text_and_tools():
    response = parse_message(
        {
            "model": "claude-test",
            "stop_reason": "tool_use",
            "usage": {"input_tokens": 3, "output_tokens": 4},
            "content": [
                {"type": "thinking", "thinking": "hmm", "signature": "S"},
                {"type": "redacted_thinking", "data": "D"},
                {"type": "text", "text": "Let me look."},
                {"type": "tool_use", "id": "t1", "name": "get_weather", "input": {"city": "Rome"}},
                {"type": "tool_use", "id": "t2", "name": "get_weather", "input": {"city": "Oslo"}},
            ],
        }
    )
    assert response.finish_reason == "tool_calls"
    assert response.model == "claude-test"
    message = response.message
    assert message["content"] == "Let me look."
    assert message["reasoning"] == "hmm"
    assert message[THINKING_KEY] == [
        {"type": "thinking", "thinking": "hmm", "signature": "S"},
        {"type": "redacted_thinking", "data": "D"},
    ]
    assert [c["id"] for c in message["tool_calls"]] == ["t1", "t2"]
    assert json.loads(message["tool_calls"][0]["function"]["arguments"]) == {"city": "Rome"}


def test_parse_message_without_text():
    only_tool = parse_message(
        {
            "stop_reason": "tool_use",
            "content": [{"type": "tool_use", "id": "x", "name": "n", "input": {}}],
        }
    )
    assert only_tool.message["content"] is None
    empty = parse_message({"stop_reason": "end_turn", "content": []})
    assert empty.message == {"role": "assistant", "content": ""}


# --- stream assembly ------------------------------------------------------------------------


class Sink:
    def __init__(self):
        self.events = []

    def __call__(self, event, data):
        self.events.append((event, data))


def stream_events(json_pieces):
    yield {
        "type": "message_start",
        "message": {
            "model": "claude-test",
            "usage": {"input_tokens": 5, "cache_read_input_tokens": 100, "output_tokens": 1},
        },
    }
    yield {
        "type": "content_block_start",
        "index": 0,
        "content_block": {"type": "thinking", "thinking": ""},
    }
    yield {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "thinking_delta", "thinking": "Let me "},
    }
    yield {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "thinking_delta", "thinking": "think."},
    }
    yield {
        "type": "content_block_delta",
        "index": 0,
        "delta": {"type": "signature_delta", "signature": "SIG"},
    }
    yield {"type": "content_block_stop", "index": 0}
    yield {"type": "content_block_start", "index": 1, "content_block": {"type": "text", "text": ""}}
    yield {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "text_delta", "text": "On "},
    }
    yield {
        "type": "content_block_delta",
        "index": 1,
        "delta": {"type": "text_delta", "text": "it."},
    }
    yield {"type": "content_block_stop", "index": 1}
    yield {
        "type": "content_block_start",
        "index": 2,
        "content_block": {"type": "tool_use", "id": "tu_1", "name": "get_weather", "input": {}},
    }
    for piece in json_pieces:
        yield {
            "type": "content_block_delta",
            "index": 2,
            "delta": {"type": "input_json_delta", "partial_json": piece},
        }
    yield {"type": "content_block_stop", "index": 2}
    yield {
        "type": "message_delta",
        "delta": {"stop_reason": "tool_use"},
        "usage": {"output_tokens": 42},
    }
    yield {"type": "message_stop"}


def test_stream_assembly_emits_and_reassembles_exactly():
    arguments = '{"city": "Zürich", "days": [1, 2, 3], "note": "a \\"quoted\\" word"}'
    pieces = [arguments[i : i + 3] for i in range(0, len(arguments), 3)]
    sink = Sink()
    assembler = StreamAssembler(request([], stream=True, sink=sink))
    for event in stream_events(pieces):
        assembler.feed(event)
    assert assembler.complete
    response = assembler.response()
    assert response.message["tool_calls"][0]["function"]["arguments"] == arguments
    assert response.message["content"] == "On it."
    assert response.message["reasoning"] == "Let me think."
    assert response.message[THINKING_KEY] == [
        {"type": "thinking", "thinking": "Let me think.", "signature": "SIG"}
    ]
    assert response.finish_reason == "tool_calls"
    assert response.usage.output_tokens == 42
    assert response.usage.input_tokens == 105
    assert response.usage.cache_read_tokens == 100
    assert sink.events == [
        ("reasoning_delta", {"text": "Let me "}),
        ("reasoning_delta", {"text": "think."}),
        ("text_delta", {"text": "On "}),
        ("text_delta", {"text": "it."}),
        ("tool_call_started", {"index": 0, "id": "tu_1", "name": "get_weather"}),
    ]


def test_stream_tool_call_without_input_deltas_has_empty_arguments_object():
    assembler = StreamAssembler()
    for event in stream_events([]):
        assembler.feed(event)
    assert assembler.response().message["tool_calls"][0]["function"]["arguments"] == "{}"


def test_incomplete_stream_is_not_complete():
    assembler = StreamAssembler()
    for event in list(stream_events(['{"a"']))[:-3]:
        assembler.feed(event)
    assert not assembler.complete
