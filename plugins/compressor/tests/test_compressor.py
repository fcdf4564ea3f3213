"""Unit tests of the compressor engine, on plain transcripts (no agent, no model)."""

from __future__ import annotations

import json

import pytest
from hermes_engine_compressor import summary as summaries
from hermes_engine_compressor.engine import Compressor
from hermes_engine_compressor.prune import PRUNED_PREFIX
from hermes_engine_compressor.tokens import estimate, message_tokens

from hermes_core.testing import assert_valid_transcript, load_plugin
from hermes_hookspecs import (
    CONTEXT_SUMMARY_FLAG,
    Cancelled,
    HermesError,
    Usage,
    is_context_summary,
)

# --- building transcripts ----------------------------------------------------------------------


def user(text):
    return {"role": "user", "content": text}


def answer(text):
    return {"role": "assistant", "content": text}


def calls(*ids, name="read_file", args=None):
    return {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": i,
                "type": "function",
                "function": {"name": name, "arguments": json.dumps(args or {"path": f"{i}.py"})},
            }
            for i in ids
        ],
    }


def result(call_id, text, name="read_file"):
    return {"role": "tool", "tool_call_id": call_id, "content": text, "tool_name": name}


def conversation(turns=6, steps=3, size=2_000):
    """``turns`` user requests, each answered after ``steps`` tool calls with big outputs."""
    messages = []
    n = 0
    for turn in range(turns):
        messages.append(user(f"request {turn}: look at module {turn}"))
        for _ in range(steps):
            n += 1
            messages.append(calls(f"c{n}"))
            messages.append(result(f"c{n}", f"contents of c{n}\n" + "x" * size))
        messages.append(answer(f"module {turn} is fine"))
    return messages


class Recorder:
    """A ``summarize`` that records its requests and answers with a fixed summary."""

    def __init__(self, text="## Goal\nCheck every module.\n## Done\nModules 0-3 checked."):
        self.text = text
        self.requests = []

    def __call__(self, messages, max_tokens):
        self.requests.append((messages, max_tokens))
        if isinstance(self.text, BaseException):
            raise self.text
        return self.text


def engine(window=8_000, summarize=None, **config):
    made = Compressor(config)
    made.set_context_window(window)
    made.summarize = summarize if summarize is not None else Recorder()
    made.notices = []
    made.notify = made.notices.append
    return made


def summary_messages(messages):
    return [m for m in messages if summaries.is_summary(m)]


# --- the plugin and its settings ------------------------------------------------------------------


def test_registered_through_its_entry_point():
    record = load_plugin("compressor")
    assert record.dist == "hermes-engine-compressor"
    assert record.hooks == ["hermes_register_config", "hermes_register_context_engines"]


def test_defaults_and_invalid_settings():
    made = Compressor({})
    assert made.settings["threshold"] == 0.5
    assert made.settings["protect_first_n"] == 3 and made.settings["protect_last_n"] == 20
    for bad in (
        {"threshold": 0},
        {"threshold": 2},
        {"protect_last_n": -1},
        {"protect_first_n": "3"},
        {"enabled": 1},
        {"summary_max_tokens": 10},
        {"min_savings": True},
    ):
        with pytest.raises(HermesError, match="compression."):
            Compressor(bad)


# --- when to compress -----------------------------------------------------------------------------


def test_should_compress_against_the_threshold():
    made = engine(window=10_000, threshold=0.5)
    assert made.threshold_tokens == 5_000
    assert not made.should_compress(4_999)
    assert made.should_compress(5_000)
    assert not made.should_compress(None)
    made.set_context_window(0)
    assert not made.should_compress(10**9)  # an unknown window never triggers
    assert not engine(window=10_000, enabled=False).should_compress(9_000)


def test_preflight_estimates_new_messages_on_top_of_the_real_figure():
    made = engine(window=10_000)  # threshold 5,000 tokens
    messages = [user("hi")]
    assert not made.should_compress_preflight(messages)
    made.update_from_response(Usage(input_tokens=4_900))  # system prompt and tools included
    messages += [calls("a"), result("a", "y" * 400)]  # ~100 tokens more
    assert made.should_compress_preflight(messages)
    # Another list (a transcript replaced by compression) is estimated from scratch.
    assert not made.should_compress_preflight(list(messages))


def test_the_estimate_is_four_characters_a_token_plus_overheads():
    image = {"type": "image_url", "image_url": {"url": "data:image/png;base64," + "A" * 9_000}}
    messages = [
        user("x" * 401),  # 4 + 100
        {"role": "assistant", "content": None, "tool_calls": [
            {"id": "a", "type": "function", "function": {"name": "read", "arguments": "x" * 36}},
            {"id": "b", "type": "function", "function": {"name": "run", "arguments": "{}"}},
        ]},  # 4 + 2 * 8 + (4 + 36 + 3 + 2) // 4
        {"role": "tool", "tool_call_id": "a", "content": ""},  # 4
        user([{"type": "text", "text": "y" * 40}, image]),  # 4 + (40 + 800 * 4) // 4
        "not a message",
    ]  # fmt: skip
    assert [message_tokens(m) for m in messages[:4]] == [104, 31, 4, 814]
    assert estimate(messages) == 104 + 31 + 4 + 814
    assert estimate(iter(messages)) == estimate(messages)  # any iterable
    assert estimate([]) == 0


# --- the first pass: pruning --------------------------------------------------------------------


def test_old_tool_outputs_become_one_line_and_the_tail_is_kept():
    messages = [
        user("run the tests"),
        calls("t1", name="terminal", args={"command": "pytest -x"}),
        result("t1", "FAILED test_a.py::test_one\n" + "." * 3_000 + "\nexit code 1", "terminal"),
        answer("one test fails"),
        user("fix it"),
        calls("t2", name="terminal", args={"command": "pytest -x"}),
        result("t2", "passed\n" + "." * 3_000, "terminal"),
        answer("fixed"),
    ]
    made = engine(window=100_000, protect_last_n=4, protect_first_n=0)
    out = made.compress(messages)
    assert made.summarize.requests == []  # pruning was enough: no model call
    line = out[2]["content"]
    assert line.startswith(PRUNED_PREFIX)
    assert 'terminal({"command": "pytest -x"})' in line
    assert "3,039 characters" in line and "exit code 1" in line
    assert '"FAILED test_a.py::test_one"' in line
    assert out[4:] == messages[4:]  # the protected tail
    assert_valid_transcript(out)
    # A second pass leaves the pruned line alone.
    assert engine(window=100_000, protect_last_n=4).compress(out)[2] == out[2]


def test_repeated_outputs_point_to_the_copy_in_the_tail():
    same = "config: " + "z" * 500
    messages = [
        user("read the config twice"),
        calls("r1"),
        result("r1", same),
        calls("r2"),
        result("r2", same),
        answer("read it twice"),
    ]
    out = engine(window=100_000, protect_last_n=4, protect_first_n=0).compress(messages)
    assert out[2]["content"].startswith(summaries.SUMMARY_MARKER) is False
    assert out[2]["content"].startswith("[identical to the output of the later read_file call r2")
    assert out[4]["content"] == same


def test_small_outputs_are_not_pruned():
    messages = [user("q"), calls("a"), result("a", "ok"), answer("done"), user("next")]
    out = engine(window=100_000, protect_last_n=1, protect_first_n=0).compress(messages)
    assert out[2]["content"] == "ok"


# --- the second pass: head, tail, summary --------------------------------------------------------


def test_head_tail_and_summary_on_the_first_compaction():
    messages = conversation()
    recorder = Recorder()
    made = engine(summarize=recorder, protect_first_n=3, protect_last_n=6)
    out = made.compress(messages)
    assert_valid_transcript(out)
    assert out[:2] == messages[:2] and out[2]["content"].startswith(PRUNED_PREFIX)  # the head
    assert out[-6:] == messages[-6:]  # the tail, untouched
    [summary] = summary_messages(out)
    assert summary["content"].startswith(summaries.SUMMARY_MARKER + "\n" + summaries.SUMMARY_NOTE)
    assert summary["content"].endswith(recorder.text)
    assert summary[summaries.SUMMARY_FLAG] is True
    # The request asks for the structured sections and shows the middle, not head or tail.
    [(request, max_tokens)] = recorder.requests
    system, prompt = request
    assert all(f"## {section}" in system["content"] for section in summaries.SECTIONS)
    assert "request 1: look at module 1" in prompt["content"]
    assert "request 0" not in prompt["content"] and "c18" not in prompt["content"]
    assert 1_024 <= max_tokens <= 4_096
    assert made.status()["compressions"] == 1


def test_a_tool_group_is_never_split():
    messages = [user("go"), calls("a", "b", "c")]
    messages += [result(i, i * 900) for i in "abc"]
    messages += [answer("ok"), user("again"), calls("d", "e")]
    messages += [result(i, i * 900) for i in "de"]
    for last in range(0, 9):
        out = engine(window=4_000, protect_last_n=last, protect_first_n=2).compress(messages)
        assert_valid_transcript(out)
        assert out[-3:] == messages[-3:]  # the open tool chain is always whole


def test_the_tail_respects_its_token_budget():
    messages = conversation(turns=3, steps=4, size=4_000)
    out = engine(window=1_000_000, protect_last_n=20, protect_last_tokens=2_500).compress(
        messages, focus="everything"
    )
    assert_valid_transcript(out)
    kept = [m for m in out if m["role"] == "tool" and not m["content"].startswith("[")]
    assert len(kept) == 2  # two 1,000-token outputs fit in 2,500 tokens, three do not


def test_the_latest_user_message_is_kept_when_its_turn_is_long():
    messages = [user("first task"), answer("done"), user("the long task")]
    for n in range(30):
        messages += [calls(f"k{n}"), result(f"k{n}", f"{n}:" + "w" * 1_500)]
    made = engine(window=4_000, protect_first_n=2, protect_last_n=6, protect_last_tokens=5_000)
    out = made.compress(messages)
    assert_valid_transcript(out)
    # No role fits between "done" and the request, so "done" joins the summary.
    assert out[0] == messages[0]
    assert summaries.is_summary(out[1]) and out[1]["role"] == "assistant"
    assert out[2] == user("the long task")  # kept, right after the summary
    assert out[3:] == messages[-6:]
    prompt = made.summarize.requests[0][0][1]["content"]
    assert "[#1 assistant]\ndone" in prompt
    assert "[#2 user - the latest request, kept word for word after the summary]" in prompt


@pytest.mark.parametrize(
    "head, first_kept, expected",
    [
        ([user("a"), calls("x"), result("x", "r")], answer("b"), "user"),
        ([user("a"), calls("x"), result("x", "r")], user("b"), "assistant"),
        ([user("a"), answer("b")], answer("c"), "user"),
        ([user("a")], user("b"), "assistant"),
    ],
)
def test_the_summary_role_keeps_roles_alternating(head, first_kept, expected):
    assert summaries is not None
    from hermes_engine_compressor.engine import _summary_role

    before = head[-1]["role"]
    assert _summary_role(before, first_kept["role"]) == expected


def test_the_summary_goes_in_front_of_the_request_when_no_role_fits():
    # A later compaction (no head) of one long turn: the request is the first thing to keep.
    earlier = {
        "role": "user",
        "content": summaries.summary_text("## Goal\nold goal"),
        summaries.SUMMARY_FLAG: True,
    }
    messages = [user("the big one"), calls("m"), result("m", "r" * 2_000), earlier]
    for n in range(20):
        messages += [calls(f"m{n}"), result(f"m{n}", f"{n}:" + "q" * 2_000)]
    recorder = Recorder("## Goal\nnew goal")
    made = engine(window=4_000, summarize=recorder, protect_last_n=4, protect_last_tokens=5_000)
    out = made.compress(messages)
    assert_valid_transcript(out)
    first = out[0]
    assert first["role"] == "user" and summaries.is_summary(first)
    assert first["content"].endswith(f"## Goal\nnew goal\n\n{summaries.END_MARKER}\n\nthe big one")
    assert not first.get(summaries.SUMMARY_FLAG)  # it holds the user's request too
    assert out[1:] == messages[-4:]
    # The next compaction splits them again and updates the summary.
    more = out + [answer("step"), user("and another thing")]
    recorder.text = "## Goal\nnewest"
    out2 = engine(window=4_000, summarize=recorder, protect_last_n=2).compress(more, focus="x")
    assert_valid_transcript(out2)
    assert [summaries.split_summary(m)[0] for m in summary_messages(out2)] == ["## Goal\nnewest"]
    assert out2[-2:] == more[-2:]
    request = recorder.requests[-1][0][1]["content"]
    assert "<earlier-summary>\n## Goal\nnew goal\n</earlier-summary>" in request
    assert "[#1 user]\nthe big one" in request  # the request of the earlier turn, summarised


def test_a_later_compaction_updates_the_earlier_summary():
    recorder = Recorder("## Goal\nfirst summary")
    made = engine(summarize=recorder, protect_first_n=3, protect_last_n=6)
    out = made.compress(conversation())
    out += conversation(turns=4)[1:]  # the conversation goes on
    out.insert(len(out) - len(conversation(turns=4)) + 1, user("more please"))
    out = [m for m in out if m]
    recorder.text = "## Goal\nsecond summary"
    out2 = made.compress(out)
    assert_valid_transcript(out2)
    bodies = [summaries.split_summary(m)[0] for m in summary_messages(out2)]
    assert bodies == ["## Goal\nsecond summary"]  # one summary, updated
    request = recorder.requests[-1][0][1]["content"]
    assert "<earlier-summary>\n## Goal\nfirst summary\n</earlier-summary>" in request
    assert summaries.SUMMARY_MARKER not in request  # never a summary of a summary
    assert "request 0" in request  # the old head is folded in: protection is for the first one


def test_a_summary_another_engine_wrote_is_recognised_and_folded_in():
    other = {  # flagged the contract's way, without this engine's marker
        "role": "user",
        "content": "Notes from another engine: the user wants every module checked.",
        CONTEXT_SUMMARY_FLAG: True,
    }
    messages = conversation()
    messages[1:1] = [answer("noted"), other]  # after the first request, roles alternating
    recorder = Recorder()
    out = engine(summarize=recorder, protect_first_n=1, protect_last_n=6).compress(messages)
    assert_valid_transcript(out)
    request = recorder.requests[-1][0][1]["content"]
    assert "<earlier-summary>\nNotes from another engine" in request
    assert other not in out  # replaced by the one updated summary
    assert len([m for m in out if is_context_summary(m)]) == 1


def test_an_interrupted_summary_passes_through_without_a_fallback():
    recorder = Recorder(Cancelled("interrupted by the user"))
    made = engine(summarize=recorder, protect_last_n=6)
    with pytest.raises(Cancelled):
        made.compress(conversation())
    assert made.notices == []  # no "summary failed", no cooldown
    assert made.status()["compressions"] == 0


def test_focus_goes_into_the_request():
    recorder = Recorder()
    engine(summarize=recorder, protect_last_n=4).compress(
        conversation(), focus="the database schema"
    )
    assert "everything about: the database schema" in recorder.requests[0][0][1]["content"]


# --- failures, cooldown, giving up ---------------------------------------------------------------


def test_a_failed_summary_falls_back_and_cools_down():
    recorder = Recorder(RuntimeError("model unavailable"))
    made = engine(summarize=recorder, protect_last_n=6, summary_cooldown_seconds=600)
    now = [1_000.0]
    made.clock = lambda: now[0]
    out = made.compress(conversation())
    assert_valid_transcript(out)
    [summary] = summary_messages(out)
    assert "No model summary was available" in summary["content"]
    assert "model unavailable" in summary["content"]
    assert "request 1: look at module 1" in summary["content"]
    assert "read_file x" in summary["content"] and "c2.py" in summary["content"]
    assert any("no new summary attempt for 600s" in n for n in made.notices)
    assert made.status()["summary_cooldown_seconds"] == 600

    made.compress(conversation())
    assert len(recorder.requests) == 1  # still cooling down: no model call
    now[0] += 601
    recorder.text = "## Goal\nback"
    out = made.compress(conversation())
    assert len(recorder.requests) == 2
    assert summary_messages(out)[0]["content"].endswith("## Goal\nback")


def test_without_a_model_the_fallback_is_used():
    made = engine(protect_last_n=6)
    made.summarize = None
    out = made.compress(conversation())
    assert "No model summary was available" in summary_messages(out)[0]["content"]


@pytest.mark.parametrize("answer_text", ["", "   ", None])
def test_an_empty_summary_counts_as_a_failure(answer_text):
    made = engine(summarize=Recorder(answer_text), protect_last_n=6)
    out = made.compress(conversation())
    assert "the model returned an empty summary" in summary_messages(out)[0]["content"]


def test_two_ineffective_compactions_stop_automatic_compaction():
    made = engine(window=1_000)
    tiny = [user("hi"), answer("hello")]
    made.compress(tiny)
    assert made.status()["automatic"] and made.status()["ineffective_in_a_row"] == 1
    made.compress(tiny)
    status = made.status()
    assert not status["automatic"] and status["ineffective_in_a_row"] == 2
    assert any("automatic compression is off" in n for n in made.notices)
    assert not made.should_compress(10**6)
    assert not made.should_compress_preflight(conversation())
    assert made.compress(conversation())  # asking explicitly still works
    made.on_session_start("another")
    assert made.status()["automatic"] and made.status()["compressions"] == 0


def test_an_effective_compaction_resets_the_count():
    made = engine(window=8_000, protect_last_n=4)
    made.compress([user("hi"), answer("hello")])
    made.compress(conversation())
    assert made.status()["ineffective_in_a_row"] == 0


def test_status_reports_the_figures():
    made = engine(window=10_000)
    made.update_from_response(Usage(input_tokens=1_234))
    made.compress(conversation())
    status = made.status()
    assert status["engine"] == "compressor"
    assert status["context_window"] == 10_000 and status["threshold_tokens"] == 5_000
    assert status["prompt_tokens"] == 1_234 and status["compressions"] == 1
    last = status["last_compression"]
    assert last["messages_before"] == 48 and last["tokens_after"] < last["tokens_before"]
    assert last["summary"] == "model"


def test_the_input_is_not_modified():
    messages = conversation()
    frozen = json.dumps(messages)
    engine(protect_last_n=4).compress(messages)
    assert json.dumps(messages) == frozen


def test_empty_and_tiny_transcripts():
    assert engine().compress([]) == []
    assert engine().compress([user("hi")]) == [user("hi")]
