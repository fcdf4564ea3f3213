"""Tests of transcript stripping, validation, repair and wire building."""

from __future__ import annotations

import copy
import json
import random
from typing import Any

import pytest

from hermes_core.loop.transcript import (
    INTERRUPTED_RESULT,
    WIRE_FIELDS,
    TranscriptError,
    clean_text,
    clean_value,
    dangling_calls,
    ensure_valid,
    repair,
    strip_internal,
    validate,
    wire_and_source,
    wire_messages,
)
from hermes_hookspecs import HermesError

Message = dict[str, Any]


def user(content: Any = "hi", **extra: Any) -> Message:
    return {"role": "user", "content": content, **extra}


def assistant(content: Any = "ok", **extra: Any) -> Message:
    return {"role": "assistant", "content": content, **extra}


def call(call_id: str, name: str = "lookup", arguments: str = "{}") -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def calling(*ids: str, content: Any = None, **extra: Any) -> Message:
    return {"role": "assistant", "content": content, "tool_calls": [call(i) for i in ids], **extra}


def result(call_id: str, content: str = "done", **extra: Any) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": content, **extra}


def synthetic(call_id: str) -> Message:
    return {"role": "tool", "tool_call_id": call_id, "content": INTERRUPTED_RESULT}


def roles(messages: list[Message]) -> list[str]:
    return [m["role"] for m in messages]


VALID: list[Message] = [
    {"role": "system", "content": "be brief"},
    user("weather?"),
    calling("a", "b"),
    result("a"),
    result("b"),
    assistant("sunny"),
    user("thanks"),
    assistant("you're welcome"),
]


# --- strip_internal ---------------------------------------------------------------------------


def test_wire_fields() -> None:
    assert WIRE_FIELDS == frozenset({"role", "content", "tool_calls", "tool_call_id", "name"})


def test_strip_internal_drops_internal_fields() -> None:
    message = assistant(
        "hello",
        reasoning="thought",
        finish_reason="stop",
        timestamp=1.5,
        token_count=3,
        tool_name="x",
        _private={"k": 1},
        _provider_state="s",
        name="bot",
    )
    assert strip_internal(message) == {"role": "assistant", "content": "hello", "name": "bot"}


def test_strip_internal_cleans_nested_tool_calls() -> None:
    message = calling("a")
    message["tool_calls"][0]["_index"] = 0
    message["tool_calls"][0]["extra_content"] = {"sig": "x"}
    message["tool_calls"][0]["function"]["_parsed"] = {}
    stripped = strip_internal(message)
    assert stripped["tool_calls"] == [call("a")]
    assert "_index" in message["tool_calls"][0]  # the input is untouched
    assert "_parsed" in message["tool_calls"][0]["function"]


def test_strip_internal_keeps_tool_fields_and_drops_empty_tool_calls() -> None:
    assert strip_internal(result("a", tool_name="lookup", _ms=3)) == result("a")
    assert strip_internal(assistant("x", tool_calls=None)) == assistant("x")
    assert strip_internal(assistant("x", tool_calls=[])) == assistant("x")
    assert strip_internal(assistant("x", tool_calls=["odd"])) == assistant("x", tool_calls=["odd"])


def test_strip_internal_returns_a_copy() -> None:
    message = user("hi")
    stripped = strip_internal(message)
    stripped["content"] = "changed"
    assert message["content"] == "hi"


# --- validate ---------------------------------------------------------------------------------


def test_valid_transcripts_have_no_problems() -> None:
    assert validate(VALID) == []
    assert validate([]) == []
    assert validate([{"role": "system", "content": "s"}]) == []
    assert validate([user(), assistant(None, tool_calls=[call("a")]), result("a")]) == []


def one_problem(messages: list[Message]) -> str:
    problems = validate(messages)
    assert len(problems) == 1, problems
    return problems[0]


def test_unknown_role() -> None:
    assert "unknown role 'robot'" in one_problem([user(), {"role": "robot", "content": "x"}])


def test_not_a_dict() -> None:
    assert "not a dict" in one_problem([user(), "hello"])  # type: ignore[list-item]


def test_system_not_first() -> None:
    problem = one_problem([user(), {"role": "system", "content": "s"}])
    assert problem == "message 1: a system message is only allowed first"


def test_first_non_system_must_be_user() -> None:
    system = {"role": "system", "content": "s"}
    assert "is assistant, not user" in one_problem([system, assistant()])
    problems = validate([result("a"), user()])
    assert any("is tool, not user" in p for p in problems)


def test_two_in_a_row() -> None:
    assert one_problem([user(), user()]) == "message 1: two user messages in a row"
    assert (
        one_problem([user(), assistant(), assistant()])
        == "message 2: two assistant messages in a row"
    )


def test_orphan_tool_results() -> None:
    assert "orphan tool result 'a'" in one_problem([user(), result("a")])
    # A result separated from its call by another message is an orphan too.
    problems = validate([user(), calling("a"), result("a"), user("x"), result("a")])
    assert problems == [
        "message 4: orphan tool result 'a': it does not follow the assistant message that made "
        "the call"
    ]
    assert "orphan tool result 'z'" in one_problem([user(), calling("a"), result("a"), result("z")])


def test_call_answered_twice() -> None:
    problem = one_problem([user(), calling("a"), result("a"), result("a")])
    assert problem == "message 3: tool call 'a' is answered twice"


def test_call_never_answered() -> None:
    assert one_problem([user(), calling("a")]) == "message 1: tool call 'a' is never answered"
    problems = validate([user(), calling("a", "b", "c"), result("b"), assistant()])
    assert problems == [
        "message 1: tool call 'a' is never answered",
        "message 1: tool call 'c' is never answered",
    ]


def test_results_out_of_call_order() -> None:
    problem = one_problem([user(), calling("a", "b"), result("b"), result("a")])
    assert problem == "message 3: tool result 'a' is out of call order"


def test_tool_message_without_tool_call_id() -> None:
    problems = validate([user(), calling("a"), result("a"), {"role": "tool", "content": "x"}])
    assert problems == ["message 3: tool message without tool_call_id"]


@pytest.mark.parametrize(
    ("tool_calls", "defect"),
    [
        ("nope", "expected a non-empty list"),
        ([], "expected a non-empty list"),
        (["nope"], "call 0 is not an object"),
        ([{"type": "function", "function": {"name": "f", "arguments": "{}"}}], "call 0 has no id"),
        ([call("a"), call("a")], "call 1 repeats id 'a'"),
        ([{"id": "a", "function": {"name": "f", "arguments": "{}"}}], "call 0 has a type other"),
        ([{"id": "a", "type": "function", "function": {"arguments": "{}"}}], "no function name"),
        ([{"id": "a", "type": "function"}], "call 0 has no function name"),
        (
            [{"id": "a", "type": "function", "function": {"name": "f", "arguments": {"x": 1}}}],
            "call 0 has arguments that are not a JSON string",
        ),
    ],
)
def test_malformed_tool_calls(tool_calls: Any, defect: str) -> None:
    messages = [user(), assistant(None, tool_calls=tool_calls), result("a")]
    problems = validate(messages)
    assert problems[0].startswith("message 1: malformed tool_calls: ")
    assert defect in problems[0]


def test_assistant_without_content_is_valid_but_never_sent_as_null() -> None:
    messages = [user(), assistant(None, finish_reason="stop")]
    assert validate(messages) == []
    assert repair(messages) == [user(), assistant("", finish_reason="stop")]
    assert wire_messages(messages, None) == [user(), assistant("")]
    assert messages[1]["content"] is None


def test_problems_are_one_line() -> None:
    messages = [result("a\nb"), user(), user(), {"role": "x\ny"}, calling("c\nd")]
    for problem in validate(messages):  # type: ignore[arg-type]
        assert "\n" not in problem


def test_ensure_valid() -> None:
    ensure_valid(VALID)
    with pytest.raises(TranscriptError) as info:
        ensure_valid([user(), user(), assistant(), assistant()])
    assert isinstance(info.value, HermesError)
    assert str(info.value) == "invalid transcript: message 1: two user messages in a row"


# --- repair -----------------------------------------------------------------------------------


def test_repair_returns_valid_input_unchanged_as_new_dicts() -> None:
    repaired = repair(VALID)
    assert repaired == VALID
    assert repaired is not VALID
    assert all(a is not b for a, b in zip(repaired, VALID, strict=False))


def test_repair_never_mutates_its_input() -> None:
    messy = [
        assistant("early"),
        user("a"),
        user("b"),
        calling("x", "y", content="calling"),
        result("y"),
        result("zz"),
        {"role": "system", "content": "late"},
        assistant(None),
        assistant(None, tool_calls=[{"function": {"name": "f", "arguments": {"q": 1}}}]),
    ]
    before = copy.deepcopy(messy)
    repaired = repair(messy)
    assert messy == before
    for message in repaired:
        message["content"] = "scribble"
    assert messy == before


def test_interrupted_batch_gets_synthetic_results_in_call_order() -> None:
    messages = [user(), calling("a", "b", "c"), result("b"), user("stop")]
    assert repair(messages) == [
        user(),
        calling("a", "b", "c"),
        synthetic("a"),
        result("b"),
        synthetic("c"),
        user("stop"),
    ]


def test_interrupted_batch_at_the_end() -> None:
    messages = [user(), calling("a", "b", "c"), result("a")]
    assert repair(messages) == [
        user(),
        calling("a", "b", "c"),
        result("a"),
        synthetic("b"),
        synthetic("c"),
    ]


def test_results_are_reordered_to_call_order() -> None:
    messages = [user(), calling("a", "b", "c"), result("c"), result("a"), result("b")]
    assert repair(messages) == [
        user(),
        calling("a", "b", "c"),
        result("a"),
        result("b"),
        result("c"),
    ]


def test_orphan_results_are_dropped() -> None:
    assert repair([user(), result("a"), assistant()]) == [user(), assistant()]
    messages = [user(), calling("a"), result("nope"), result("a")]
    assert repair(messages) == [user(), calling("a"), result("a")]


def test_results_belong_to_the_nearest_assistant_with_tool_calls() -> None:
    # "a" was asked by an earlier assistant, so it answers nothing of the nearest one.
    messages = [user(), calling("a"), user("x"), calling("b"), result("b"), result("a")]
    assert repair(messages) == [
        user(),
        calling("a"),
        synthetic("a"),
        user("x"),
        calling("b"),
        result("b"),
    ]


def test_late_result_is_moved_next_to_its_call() -> None:
    messages = [user(), calling("a"), assistant("meanwhile"), result("a")]
    assert repair(messages) == [user(), calling("a"), result("a"), assistant("meanwhile")]


def test_duplicate_results_are_dropped() -> None:
    messages = [user(), calling("a"), result("a", "first"), result("a", "second")]
    assert repair(messages) == [user(), calling("a"), result("a", "first")]


def test_tool_message_without_tool_call_id_is_dropped() -> None:
    messages = [user(), calling("a"), {"role": "tool", "content": "?"}, result("a")]
    assert repair(messages) == [user(), calling("a"), result("a")]


def test_tool_calls_are_normalised() -> None:
    raw = [
        {"function": {"name": "f", "arguments": {"city": "Zürich"}}, "_extra": 1},
        {"id": "b", "function": {"name": "g", "arguments": None}},
        {"id": "c", "type": "function", "function": {"name": "h", "arguments": [1, 2]}},
    ]
    messages = [user(), assistant(None, tool_calls=raw)]
    repaired = repair(messages)
    calls = repaired[1]["tool_calls"]
    assert [c["type"] for c in calls] == ["function"] * 3
    assert calls[0]["function"]["arguments"] == '{"city": "Zürich"}'
    assert calls[1]["function"]["arguments"] == "{}"
    assert calls[2]["function"]["arguments"] == "[1, 2]"
    assert calls[0]["id"].startswith("call_")
    assert calls[1]["id"] == "b"
    assert calls[0]["_extra"] == 1  # internal extras survive repair; strip removes them
    assert [m.get("tool_call_id") for m in repaired[2:]] == [c["id"] for c in calls]
    assert validate(repaired) == []


def test_generated_ids_are_stable_and_distinct() -> None:
    nameless = {"type": "function", "function": {"name": "f", "arguments": "{}"}}
    messages = [
        user(),
        assistant(None, tool_calls=[dict(nameless), dict(nameless)]),
        user("again"),
        assistant(None, tool_calls=[dict(nameless)]),
    ]
    first = repair(messages)
    second = repair(copy.deepcopy(messages))
    ids = [c["id"] for m in first if m.get("tool_calls") for c in m["tool_calls"]]
    assert ids == [c["id"] for m in second if m.get("tool_calls") for c in m["tool_calls"]]
    assert len(set(ids)) == 3


def test_repeated_call_id_in_one_message_gets_a_new_id() -> None:
    messages = [user(), calling("a", "a"), result("a", "one"), result("a", "two")]
    repaired = repair(messages)
    new_id = repaired[1]["tool_calls"][1]["id"]
    assert new_id != "a"
    assert repaired[2:] == [result("a", "one"), synthetic(new_id)]


def test_calls_without_a_function_name_are_dropped() -> None:
    messages = [
        user(),
        assistant("hm", tool_calls=[{"id": "a", "type": "function"}, "junk", call("b")]),
        result("a"),
        result("b"),
    ]
    repaired = repair(messages)
    assert repaired == [user(), assistant("hm", tool_calls=[call("b")]), result("b")]


def test_assistant_whose_calls_are_all_unusable_becomes_text() -> None:
    messages = [user(), assistant(None, tool_calls=[{"id": "a"}]), result("a"), user("next")]
    assert repair(messages) == [user(), assistant(""), user("next")]


def test_empty_or_null_tool_calls_are_removed() -> None:
    assert repair([user(), assistant("x", tool_calls=[])]) == [user(), assistant("x")]
    repaired = repair([user(), assistant(None, tool_calls=None), assistant("y")])
    assert repaired == [user(), assistant("y")]


def test_consecutive_user_messages_are_merged() -> None:
    assert repair([user("a"), user("b"), user("c")]) == [user("a\n\nb\n\nc")]
    image = {"type": "image_url", "image_url": {"url": "data:x"}}
    text = {"type": "text", "text": "look"}
    assert repair([user([text]), user([image])]) == [user([text, image])]
    assert repair([user("see"), user([image])]) == [user([{"type": "text", "text": "see"}, image])]
    assert repair([user(""), user("b")]) == [user("b")]


def test_merged_message_keeps_the_first_messages_fields() -> None:
    merged = repair([user("a", timestamp=1), user("b", timestamp=2)])
    assert merged == [user("a\n\nb", timestamp=1)]


def test_consecutive_text_assistants_are_merged() -> None:
    messages = [user(), assistant("one"), assistant(None), assistant("two")]
    assert repair(messages) == [user(), assistant("one\n\ntwo")]


def test_text_assistant_is_merged_into_a_following_tool_calling_one() -> None:
    messages = [user(), assistant("Let me check."), calling("a", reasoning="r"), result("a")]
    assert repair(messages) == [
        user(),
        calling("a", content="Let me check.", reasoning="r"),
        result("a"),
    ]
    messages = [user(), assistant("First."), calling("a", content="Second."), result("a")]
    assert repair(messages)[1]["content"] == "First.\n\nSecond."


def test_assistant_after_results_is_not_merged() -> None:
    messages = [user(), calling("a"), result("a"), assistant("done"), assistant("really")]
    assert repair(messages) == [user(), calling("a"), result("a"), assistant("done\n\nreally")]


def test_assistant_none_content_becomes_empty_string() -> None:
    assert repair([user(), assistant(None)]) == [user(), assistant("")]
    assert repair([user(), {"role": "assistant"}]) == [user(), assistant("")]


def test_leading_junk_is_dropped() -> None:
    system = {"role": "system", "content": "s"}
    messages = [
        system,
        assistant("hi"),
        calling("a"),
        result("a"),
        result("b"),
        user(),
        assistant(),
    ]
    assert repair(messages) == [system, user(), assistant()]
    assert repair([assistant("x"), result("a")]) == []


def test_system_messages_after_the_first_are_dropped() -> None:
    system = {"role": "system", "content": "s"}
    late = {"role": "system", "content": "late"}
    assert repair([system, user("a"), late, user("b"), assistant()]) == [
        system,
        user("a\n\nb"),
        assistant(),
    ]
    assert repair([user(), late, assistant()]) == [user(), assistant()]


def test_unknown_roles_and_non_dicts_are_dropped() -> None:
    messages = [user("a"), {"role": "robot"}, 7, user("b")]
    assert repair(messages) == [user("a\n\nb")]  # type: ignore[arg-type]


# --- wire_messages ----------------------------------------------------------------------------


def test_wire_messages_prepends_the_system_prompt_and_strips() -> None:
    history = [
        {"role": "system", "content": "old"},
        user("q", timestamp=1),
        calling("a", reasoning="r", finish_reason="tool_calls", _state=1),
        result("a", tool_name="lookup"),
        assistant("ans", token_count=4),
    ]
    assert wire_messages(history, "new") == [
        {"role": "system", "content": "new"},
        user("q"),
        calling("a"),
        result("a"),
        assistant("ans"),
    ]


def test_wire_messages_keeps_the_name_field() -> None:
    history = [user("hi", name="ada", _id=1), assistant("hello", name="bot")]
    assert wire_messages(history, None) == [user("hi", name="ada"), assistant("hello", name="bot")]


def test_wire_messages_without_system_prompt_keeps_the_leading_one() -> None:
    history = [{"role": "system", "content": "s", "_built": 1}, user()]
    assert wire_messages(history, None) == [{"role": "system", "content": "s"}, user()]
    assert wire_messages([user()], None) == [user()]


def test_wire_messages_drops_every_history_system_message_when_given_one() -> None:
    history = [
        {"role": "system", "content": "a"},
        {"role": "system", "content": "b"},
        user("x"),
        {"role": "system", "content": "c"},
        user("y"),
    ]
    assert wire_messages(history, "S") == [{"role": "system", "content": "S"}, user("x\n\ny")]


def test_wire_messages_repairs() -> None:
    history = [user(), calling("a", "b"), result("b", _ms=1)]
    assert wire_messages(history, "S") == [
        {"role": "system", "content": "S"},
        user(),
        calling("a", "b"),
        synthetic("a"),
        result("b"),
    ]
    assert wire_messages([], "S") == [{"role": "system", "content": "S"}]


def test_wire_messages_does_not_share_dicts_with_the_history() -> None:
    history = [user(), calling("a"), result("a")]
    before = copy.deepcopy(history)
    wire = wire_messages(history, None)
    wire[1]["tool_calls"][0]["function"]["arguments"] = "changed"
    wire[0]["content"] = "changed"
    assert history == before


# --- randomized -------------------------------------------------------------------------------


def _random_content(rng: random.Random) -> Any:
    return rng.choice(["text", "more text", "", None, [{"type": "text", "text": "part"}]])


def _random_call(rng: random.Random, ids: list[str]) -> Any:
    if rng.random() < 0.05:
        return "junk"
    new_id = f"c{rng.randrange(10_000)}"
    call_id = rng.choice([new_id] * 6 + [None, "", rng.choice(ids) if ids else new_id])
    if isinstance(call_id, str) and call_id:
        ids.append(call_id)
    function: dict[str, Any] = {}
    if rng.random() < 0.95:
        function["name"] = rng.choice(["read", "write", ""]) if rng.random() < 0.1 else "read"
    arguments = rng.choice(['{"a": 1}', "{}", None, {"a": [1, 2]}, "not json", 3])
    if rng.random() < 0.95:
        function["arguments"] = arguments
    if rng.random() < 0.2:
        function["_parsed"] = {}
    result: dict[str, Any] = {"function": function}
    if call_id is not None:
        result["id"] = call_id
    if rng.random() < 0.9:
        result["type"] = "function" if rng.random() < 0.95 else "custom"
    if rng.random() < 0.2:
        result["_index"] = 0
    return result


def _random_result(rng: random.Random, ids: list[str]) -> Message:
    message: Message = {"role": "tool", "content": rng.choice(["ok", "", "err"])}
    choice = rng.random()
    if choice < 0.8 and ids:
        message["tool_call_id"] = rng.choice(ids[-4:])
    elif choice < 0.9:
        message["tool_call_id"] = f"unknown{rng.randrange(100)}"
    if rng.random() < 0.3:
        message["tool_name"] = "read"
    return message


def messy_transcript(rng: random.Random) -> list[Any]:
    """A transcript with every kind of damage the repair rules cover, mixed at random."""
    messages: list[Any] = []
    ids: list[str] = []
    for _ in range(rng.randrange(0, 30)):
        kind = rng.random()
        extra: dict[str, Any] = {}
        if rng.random() < 0.3:
            extra = {"timestamp": rng.random(), "_private": {"x": 1}, "reasoning": "r"}
        if kind < 0.05:
            messages.append({"role": "system", "content": "sys", **extra})
        elif kind < 0.30:
            messages.append({"role": "user", "content": _random_content(rng), **extra})
        elif kind < 0.45:
            messages.append({"role": "assistant", "content": _random_content(rng), **extra})
        elif kind < 0.60:
            tool_calls: Any = [_random_call(rng, ids) for _ in range(rng.randrange(0, 4))]
            if rng.random() < 0.05:
                tool_calls = rng.choice([None, "junk", {"id": "x"}])
            messages.append(
                {"role": "assistant", "content": _random_content(rng), "tool_calls": tool_calls}
            )
        elif kind < 0.70:
            # A well-formed batch whose results arrive shuffled, partly lost or duplicated.
            batch = [f"b{rng.randrange(10_000)}" for _ in range(rng.randrange(1, 4))]
            ids.extend(batch)
            messages.append(calling(*batch))
            answers = [b for b in batch if rng.random() < 0.7] + rng.sample(batch, 1)
            rng.shuffle(answers)
            messages.extend(result(b) for b in answers)
        elif kind < 0.93:
            messages.append(_random_result(rng, ids))
        elif kind < 0.97:
            messages.append({"role": rng.choice(["robot", None, "function"]), "content": "?"})
        else:
            messages.append(rng.choice([42, None, "text"]))
    return messages


@pytest.mark.parametrize("seed", range(400))
def test_repair_of_random_transcripts_is_valid_and_idempotent(seed: int) -> None:
    rng = random.Random(seed)
    messages = messy_transcript(rng)
    before = copy.deepcopy(messages)

    repaired = repair(messages)
    assert validate(repaired) == [], (messages, repaired)
    assert repair(repaired) == repaired
    assert repair(messages) == repaired  # deterministic, generated ids included
    assert messages == before

    with_system = wire_messages(messages, "S")
    assert with_system[0] == {"role": "system", "content": "S"}
    assert validate(with_system) == []
    assert all(m["role"] != "system" for m in with_system[1:])
    for message in with_system:
        assert set(message) <= WIRE_FIELDS
        for tool_call in message.get("tool_calls", []):
            assert set(tool_call) == {"id", "type", "function"}
            assert set(tool_call["function"]) == {"name", "arguments"}
            json.dumps(tool_call)
    assert wire_messages(messages, None) == [strip_internal(m) for m in repaired]
    assert messages == before


@pytest.mark.parametrize("seed", range(100))
def test_validate_agrees_with_ensure_valid(seed: int) -> None:
    messages = messy_transcript(random.Random(seed))
    problems = validate(messages)
    if problems:
        with pytest.raises(TranscriptError, match="invalid transcript: "):
            ensure_valid(messages)
        assert repair(messages) != messages
    else:
        ensure_valid(messages)
        # Valid input comes back unchanged, but for null assistant text becoming "".
        expected = [
            {**m, "content": ""}
            if m["role"] == "assistant" and m.get("tool_calls") is None and m.get("content") is None
            else m
            for m in messages
        ]
        assert repair(messages) == expected


# --- WireCache ---------------------------------------------------------------------------------


def _grow(seed: int) -> list[list[dict]]:
    """Snapshots of a valid transcript growing the way the loop grows it."""
    import random as _random

    rng = _random.Random(seed)
    messages: list[dict] = [{"role": "user", "content": "start"}]
    snapshots = []
    for step in range(30):
        if rng.random() < 0.6:
            ids = [f"c{step}_{i}" for i in range(rng.randint(1, 3))]
            messages.append(
                {
                    "role": "assistant",
                    "content": None,
                    "reasoning": "r",
                    "tool_calls": [
                        {"id": i, "type": "function", "function": {"name": "t", "arguments": "{}"}}
                        for i in ids
                    ],
                }
            )
            for i in ids:
                messages.append({"role": "tool", "tool_call_id": i, "content": i, "tool_name": "t"})
        else:
            messages.append(
                {"role": "assistant", "content": f"answer {step}", "finish_reason": "stop"}
            )
            messages.append({"role": "user", "content": f"next {step}"})
        snapshots.append(len(messages))
    return [messages, snapshots]


@pytest.mark.parametrize("seed", range(20))
def test_wire_cache_matches_the_full_computation_as_the_transcript_grows(seed):
    from hermes_core.loop.wire import WireCache

    messages, lengths = _grow(seed)
    cache = WireCache()
    grown: list[dict] = []
    for length in lengths:
        grown.extend(messages[len(grown) : length])
        assert cache.build(grown, "SYS") == wire_and_source(grown, "SYS")


def test_wire_cache_falls_back_when_the_list_is_replaced_or_an_append_is_invalid():
    from hermes_core.loop.wire import WireCache

    cache = WireCache()
    history = [{"role": "user", "content": "a"}, {"role": "assistant", "content": "b"}]
    cache.build(history, None)
    history.append({"role": "assistant", "content": "c"})  # two assistants: needs repair
    wire, source = cache.build(history, None)
    assert validate(wire) == []
    assert wire == wire_and_source(history, None)[0]
    replaced = [{"role": "user", "content": "fresh"}]
    assert cache.build(replaced, "S") == wire_and_source(replaced, "S")


# --- cleaning and dangling calls ----------------------------------------------------------


def test_clean_text_joins_pairs_and_replaces_lone_surrogates():
    assert clean_text("caf\udce9 \ud83d\ude00 \ud800") == "caf\ufffd \U0001f600 \ufffd"
    plain = "plain é 😀"
    assert clean_text(plain) is plain


def test_clean_value_copies_only_what_needed_cleaning():
    clean = {"role": "user", "content": [{"type": "text", "text": "ok"}]}
    assert clean_value(clean) is clean
    dirty = {"role": "tool", "content": "x\udcff", "nested": [{"a": "\ud800"}], "n": 1}
    cleaned = clean_value(dirty)
    assert cleaned == {"role": "tool", "content": "x\ufffd", "nested": [{"a": "\ufffd"}], "n": 1}
    assert dirty["content"] == "x\udcff"  # the input is not modified
    json.dumps(cleaned, ensure_ascii=False).encode("utf-8")


@pytest.mark.parametrize(
    "messages, expected",
    [
        ([user(), calling("a", "b")], ["a", "b"]),
        ([user(), calling("a", "b"), result("a")], ["b"]),
        ([user(), calling("a", "b"), result("a"), result("b")], []),
        ([user(), calling("a", "b"), result("b")], []),  # out of order: repair's job, not ours
        ([user(), calling("a"), user("again")], []),  # not at the end
        ([user(), assistant()], []),
        ([], []),
    ],
)
def test_dangling_calls_are_the_unanswered_calls_at_the_end(messages, expected):
    assert [c["id"] for c in dangling_calls(messages)] == expected
