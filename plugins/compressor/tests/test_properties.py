"""Property: whatever the conversation, the compressor's output is a valid transcript that the
Anthropic and Responses conversions accept, and it keeps the latest request and the open tool
chain.

Generated conversations have parallel tool calls, reasoning and signed thinking blocks, tool
output from empty to huge, repeated outputs, interrupted tool batches, turns cut short, content
parts with images, and summaries (plain or merged into a request) left by an earlier compaction
with other settings. The summarising model answers, fails, or answers nothing.
"""

from __future__ import annotations

import json
import os
from typing import Any

from hermes_engine_compressor import summary as summaries
from hermes_engine_compressor.engine import Compressor
from hermes_provider_anthropic.convert import build_params
from hermes_provider_openai.responses import build_input
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from hermes_core.testing import INTERRUPTED_RESULT, strip_internal
from hermes_core.testing import transcript_problems as validate
from hermes_hookspecs import ModelRequest

TOOL_NAMES = ("read_file", "terminal", "search", "write_file")
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": name,
            "description": name,
            "parameters": {"type": "object", "properties": {}},
        },
    }
    for name in TOOL_NAMES
]

SIZES = st.one_of(
    st.integers(0, 120),  # small
    st.integers(200, 3_000),  # ordinary
    st.integers(10_000, 60_000),  # huge
)


def filler(tag: str, size: int) -> str:
    return (tag + " " + "lorem ipsum dolor sit amet " * (size // 27 + 1))[:size]


@st.composite
def user_content(draw: Any, tag: str) -> Any:
    text = filler(tag, draw(st.integers(1, 2_500)))
    if draw(st.integers(0, 5)) == 0:
        return [
            {"type": "text", "text": text},
            {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}},
        ]
    return text


@st.composite
def turns(draw: Any, ids: list[int], count: int, finish_last: bool) -> list[dict[str, Any]]:
    """``count`` user turns; call ids come from the counter ``ids``."""
    messages: list[dict[str, Any]] = []
    outputs: list[str] = []
    for turn in range(count):
        messages.append({"role": "user", "content": draw(user_content(f"request {ids[0]}"))})
        interrupted = False
        for _ in range(draw(st.integers(0, 6))):
            calls = []
            for _ in range(draw(st.integers(1, 4))):
                ids[0] += 1
                name = draw(st.sampled_from(TOOL_NAMES))
                arguments = json.dumps({"path": f"src/file{ids[0] % 7}.py", "n": ids[0]})
                calls.append(
                    {
                        "id": f"call_{ids[0]}",
                        "type": "function",
                        "function": {"name": name, "arguments": arguments},
                    }
                )
            text = draw(st.sampled_from([None, "", "Let me look.", filler("plan", 400)]))
            assistant: dict[str, Any] = {
                "role": "assistant",
                "content": text,
                "tool_calls": calls,
                "finish_reason": "tool_calls",
            }
            if draw(st.booleans()):
                assistant["reasoning"] = filler("thinking", 300)
            if draw(st.integers(0, 4)) == 0:
                assistant["_anthropic_thinking"] = [
                    {"type": "thinking", "thinking": "hmm", "signature": "c2lnbmF0dXJl"}
                ]
            messages.append(assistant)
            interrupted = draw(st.integers(0, 8)) == 0
            for position, call in enumerate(calls):
                if interrupted and position > 0:
                    content = INTERRUPTED_RESULT
                elif outputs and draw(st.integers(0, 5)) == 0:
                    content = draw(st.sampled_from(outputs))  # the same output again
                else:
                    content = filler(f"output of {call['id']}", draw(SIZES))
                    if content and draw(st.booleans()):
                        content += f"\nexit code {draw(st.integers(0, 2))}"
                    outputs.append(content)
                messages.append(
                    {
                        "role": "tool",
                        "tool_call_id": call["id"],
                        "content": content,
                        "tool_name": call["function"]["name"],
                    }
                )
            if interrupted:
                break  # the turn ended there; the next user message follows the results
        last = turn == count - 1
        if not interrupted and (finish_last or not last or draw(st.booleans())):
            answer = draw(st.sampled_from(["", "Done.", filler("answer", 1_500)]))
            messages.append({"role": "assistant", "content": answer, "finish_reason": "stop"})
    return messages


class Summariser:
    def __init__(self, behaviour: str) -> None:
        self.behaviour = behaviour

    def __call__(self, messages: list[dict[str, Any]], max_tokens: int | None) -> Any:
        assert messages[0]["role"] == "system" and messages[-1]["role"] == "user"
        if self.behaviour == "fail":
            raise RuntimeError("the summary model is down")
        if self.behaviour == "empty":
            return ""
        return "## Goal\nKeep going.\n## Done\nA lot.\n## In progress\nThe rest."


@st.composite
def engines(draw: Any) -> Compressor:
    config: dict[str, Any] = {
        "threshold": draw(st.sampled_from([0.3, 0.5, 0.8])),
        "protect_first_n": draw(st.integers(0, 6)),
        "protect_last_n": draw(st.integers(0, 30)),
    }
    if draw(st.booleans()):
        config["protect_last_tokens"] = draw(st.integers(50, 8_000))
    engine = Compressor(config)
    engine.set_context_window(draw(st.sampled_from([1_500, 4_000, 16_000, 128_000])))
    behaviour = draw(st.sampled_from(["ok", "ok", "fail", "empty", "none"]))
    engine.summarize = None if behaviour == "none" else Summariser(behaviour)
    return engine


@st.composite
def conversations(draw: Any) -> list[dict[str, Any]]:
    ids = [0]
    if draw(st.booleans()):  # a conversation compacted before, then continued
        earlier = draw(turns(ids, draw(st.integers(1, 10)), finish_last=True))
        compacted = draw(engines()).compress(earlier, focus=draw(st.sampled_from([None, "db"])))
        assert not validate(compacted), validate(compacted)
        return compacted + draw(turns(ids, draw(st.integers(1, 10)), finish_last=False))
    return draw(turns(ids, draw(st.integers(1, 20)), finish_last=False))


# --- checks --------------------------------------------------------------------------------------


def latest_request(messages: list[dict[str, Any]]) -> Any:
    for message in reversed(messages):
        if message["role"] != "user" or message.get(summaries.SUMMARY_FLAG):
            continue
        if summaries.is_summary(message):
            merged = summaries.split_summary(message)[1]
            return merged["content"] if merged is not None else None
        return message["content"]
    return None


def holds(message: dict[str, Any], request: Any) -> bool:
    content = message.get("content")
    if message["role"] != "user":
        return False
    if isinstance(request, str) and isinstance(content, str):
        return content == request or content.endswith(request)
    if isinstance(request, list) and isinstance(content, list):
        return content[-len(request) :] == request
    return False


def open_chain(messages: list[dict[str, Any]]) -> list[tuple[str, Any]]:
    """The roles and call ids of the trailing tool group, if the transcript ends in one."""
    if not messages or messages[-1]["role"] != "tool":
        return []
    start = max(i for i, m in enumerate(messages) if m["role"] == "assistant")
    return [(m["role"], m.get("tool_call_id")) for m in messages[start:]]


def request_for(messages: list[dict[str, Any]], tools: bool = True) -> ModelRequest:
    wire = [{"role": "system", "content": "You are a test."}]
    wire += [strip_internal(m) for m in messages]
    return ModelRequest(
        model="m", messages=wire, tools=TOOLS if tools else [], source_messages=messages
    )


def check_anthropic(messages: list[dict[str, Any]], tools: bool = True) -> None:
    params = build_params(request_for(messages, tools), {})
    sent = params["messages"]
    assert sent and sent[0]["role"] == "user"
    for first, second in zip(sent, sent[1:], strict=False):
        assert first["role"] != second["role"], "roles do not alternate"
    for index, message in enumerate(sent):
        assert message["content"], f"empty content in message {index}"
        kinds = [block["type"] for block in message["content"]]
        results = [b["tool_use_id"] for b in message["content"] if b["type"] == "tool_result"]
        if results:
            assert kinds[: len(results)] == ["tool_result"] * len(results), "results not first"
            previous = sent[index - 1]
            uses = [b["id"] for b in previous["content"] if b["type"] == "tool_use"]
            assert sorted(results) == sorted(uses), "tool_use without tool_result or the reverse"
        if message["role"] == "assistant" and index + 1 < len(sent):
            uses = [b["id"] for b in message["content"] if b["type"] == "tool_use"]
            following = [
                b["tool_use_id"] for b in sent[index + 1]["content"] if b["type"] == "tool_result"
            ]
            assert sorted(uses) == sorted(following)


def check_responses(messages: list[dict[str, Any]]) -> None:
    instructions, items = build_input(request_for(messages))
    assert instructions == "You are a test."
    calls: list[str] = []
    for item in items:
        if item.get("type") == "function_call":
            calls.append(item["call_id"])
        elif item.get("type") == "function_call_output":
            assert item["call_id"] in calls, "an output before (or without) its call"
            calls.remove(item["call_id"])
    assert calls == [], f"calls without output: {calls}"


@settings(
    max_examples=int(os.environ.get("HYPOTHESIS_EXAMPLES", "150")),
    database=None,  # leave no .hypothesis folder behind
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(conversation=conversations(), engine=engines(), focus=st.sampled_from([None, "tests"]))
def test_compression_output_is_always_sendable(
    conversation: list[dict[str, Any]], engine: Compressor, focus: str | None
) -> None:
    assert validate(conversation) == [], "the generator made an invalid conversation"
    request = latest_request(conversation)
    chain = open_chain(conversation)

    out = engine.compress([dict(m) for m in conversation], None, focus)

    assert validate(out) == []
    assert len(out) <= len(conversation) + 1
    if request is not None:
        assert any(holds(m, request) for m in out), "the latest request was lost"
    if chain:
        assert open_chain(out) == chain, "the open tool chain was cut"
    assert sum(1 for m in out if summaries.is_summary(m)) <= 1
    check_anthropic(out)
    check_anthropic(out, tools=False)  # a request without tools sends calls as text
    check_responses(out)
