"""The threads a turn runs on: after its first tool call the turn runs on one worker thread,
handlers and model calls inline, while the calling thread watches; a handler past its timeout,
or a model call that ignores an interrupt, is abandoned with its thread, and the turn goes on
without its late result."""

from __future__ import annotations

import _thread
import threading
import time
from typing import Any

import pytest

from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import (
    ScriptedModel,
    Turn,
    assert_valid_transcript,
    make_agent,
    text,
    tool_call,
    toolset_plugin,
    wait_until,
)
from hermes_hookspecs import ModelRequest, Tool

OBJ = {"type": "object", "properties": {}}


def tool(name: str, handler: Any, **kw: Any) -> Tool:
    return Tool(name, f"the {name} tool", OBJ, handler, **kw)


def results(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


class ThreadNotingModel(ScriptedModel):
    """A scripted model that notes the thread of every call."""

    def __init__(self, *steps: Any) -> None:
        super().__init__(*steps)
        self.threads: list[int] = []

    def complete(self, request: ModelRequest) -> Any:
        self.threads.append(threading.get_ident())
        return super().complete(request)


def test_the_calls_of_a_turn_after_its_first_tool_call_run_on_one_thread_not_the_callers():
    handler_threads: list[int] = []

    def quick(args: dict[str, Any], ctx: Any) -> str:
        handler_threads.append(threading.get_ident())
        return "q"

    model = ThreadNotingModel(*[tool_call("quick") for _ in range(4)], text("done"))
    agent = make_agent(model=model, plugins=[toolset_plugin(tool("quick", quick))])
    assert agent.chat("go") == "done"
    assert results(agent.messages) == ["q"] * 4
    assert len(set(handler_threads)) == 1 and threading.get_ident() not in handler_threads
    assert set(model.threads[1:]) == set(handler_threads)  # no hand-off per call


def test_a_handler_past_its_timeout_is_abandoned_and_its_late_result_never_enters_the_turn(
    tmp_path: Any,
):
    release = threading.Event()
    ended = threading.Event()
    stuck_thread: list[int] = []
    later_threads: list[int] = []

    def stuck(args: dict[str, Any], ctx: Any) -> str:
        stuck_thread.append(threading.get_ident())
        release.wait(30)  # ignores its cancel event, as a badly written handler would
        ended.set()
        return "late result"

    def quick(args: dict[str, Any], ctx: Any) -> str:
        later_threads.append(threading.get_ident())
        return "q"

    store = SQLiteSessionStore(tmp_path / "state.db")
    model = ThreadNotingModel(
        tool_call("quick"), tool_call("stuck"), tool_call("quick"), tool_call("quick"), "done"
    )
    agent = make_agent(
        model=model,
        plugins=[toolset_plugin(tool("stuck", stuck), tool("quick", quick))],
        config={"tools": {"timeout": 0.2}},
        session_store=store,
    )
    started = time.monotonic()
    try:
        assert agent.chat("go") == "done"
        elapsed = time.monotonic() - started
        assert not ended.is_set()  # the turn ended while the handler still ran
    finally:
        release.set()
    assert ended.wait(5)
    time.sleep(0.2)  # time for a late result to (wrongly) land anywhere
    answers = results(agent.messages)
    assert answers[0] == "q" and "did not finish within 0.2 seconds" in answers[1]
    assert answers[2:] == ["q", "q"]
    assert elapsed < 5
    assert stuck_thread[0] not in later_threads[1:]  # the turn went on on another thread
    assert model.threads[-1] != stuck_thread[0]
    stored = store.get_messages(agent.session_id)
    assert not any("late result" in str(m.get("content")) for m in stored)
    assert not any("late result" in str(m.get("content")) for m in agent.messages)
    assert [m["content"] for m in stored] == [m["content"] for m in agent.messages]
    assert_valid_transcript(agent.messages)


def test_a_handler_that_overruns_in_each_of_several_steps_strands_only_its_own_threads():
    release = threading.Event()
    running = []

    def stuck(args: dict[str, Any], ctx: Any) -> str:
        running.append(threading.get_ident())
        release.wait(30)
        return "late"

    agent = make_agent(
        *[tool_call("stuck") for _ in range(3)],
        text("done"),
        plugins=[toolset_plugin(tool("stuck", stuck))],
        config={"tools": {"timeout": 0.1}},
    )
    try:
        assert agent.chat("go") == "done"
    finally:
        release.set()
    assert len(set(running)) == 3
    assert all("did not finish within 0.1 seconds" in r for r in results(agent.messages))


def test_an_interrupt_during_a_model_call_that_ignores_it_ends_the_turn_at_once():
    answered = threading.Event()
    release = threading.Event()

    def deaf(request: ModelRequest) -> Turn:
        release.wait(30)  # a client that never looks at request.cancel
        answered.set()
        return Turn(text="an answer that comes too late")

    model = ThreadNotingModel(tool_call("quick"), deaf)
    agent = make_agent(model=model, plugins=[toolset_plugin(tool("quick", lambda a, c: "q"))])
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.update(r=agent.run_conversation("go")))
    worker.start()
    try:
        assert wait_until(lambda: len(model.requests) == 2)
        started = time.monotonic()
        agent.interrupt()
        worker.join(timeout=5)
        assert time.monotonic() - started < 1.0
    finally:
        release.set()
    assert answered.wait(5)
    time.sleep(0.2)
    result = box["r"]
    assert result["exit_reason"] == "interrupted" and result["final_response"] is None
    assert [m["role"] for m in agent.messages] == ["user", "assistant", "tool"]
    assert not any("too late" in str(m.get("content")) for m in agent.messages)
    assert_valid_transcript(agent.messages)
    # the agent takes its next turn as usual
    model.add(text("fresh"))
    assert agent.chat("again") == "fresh"


def test_a_keyboard_interrupt_of_the_calling_thread_stops_the_turn_it_watched():
    if threading.current_thread() is not threading.main_thread():
        pytest.skip("KeyboardInterrupt reaches the main thread only")

    def interrupting(args: dict[str, Any], ctx: Any) -> str:
        _thread.interrupt_main()  # as Ctrl-C does, while the main thread watches this call
        ctx.cancel_event.wait(5)
        return "x"

    model = ScriptedModel(tool_call("h"), tool_call("h"), text("never"))
    agent = make_agent(model=model, plugins=[toolset_plugin(tool("h", interrupting))])
    with pytest.raises(KeyboardInterrupt):
        agent.run_conversation("go")
    time.sleep(0.5)  # the worker would go on to the next model call meanwhile if it could
    assert len(model.requests) == 1


def test_a_handler_that_stops_when_told_is_answered_with_its_timeout_on_the_same_thread():
    threads: list[int] = []

    def polite(args: dict[str, Any], ctx: Any) -> str:
        threads.append(threading.get_ident())
        ctx.cancel_event.wait(30)  # ends as soon as the host asks it to
        return "finished after all"

    def quick(args: dict[str, Any], ctx: Any) -> str:
        threads.append(threading.get_ident())
        return "q"

    agent = make_agent(
        tool_call("polite"),
        tool_call("quick"),
        text("done"),
        plugins=[toolset_plugin(tool("polite", polite), tool("quick", quick))],
        config={"tools": {"timeout": 0.2}},
    )
    started = time.monotonic()
    assert agent.chat("go") == "done"
    assert time.monotonic() - started < 5
    answers = results(agent.messages)
    assert "did not finish within 0.2 seconds" in answers[0] and answers[1] == "q"
    assert len(set(threads)) == 1  # it ended within its grace: nothing was abandoned
