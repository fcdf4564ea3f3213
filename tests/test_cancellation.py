"""One cancellation type (``hermes_hookspecs.Cancelled``) for every interrupt: of a model call, of
a context summary and of a tool call. An interrupt answers quickly, leaves nothing partial, and is
never a provider failure: never retried, never moved to a fallback provider."""

from __future__ import annotations

import threading
import time
import types
from typing import Any

import pytest

from hermes_core.testing import (
    ScriptedModel,
    assert_valid_transcript,
    make_agent,
    plugin_manager,
    text,
    tool_call,
    toolset_plugin,
    wait_until,
)
from hermes_core.testing.kit import scripted_provider_plugin
from hermes_hookspecs import (
    Cancelled,
    ContextEngine,
    ModelRequest,
    ProviderError,
    Tool,
    ToolCancelled,
    hookimpl,
)

OBJ = {"type": "object", "properties": {}}


def run_in_thread(agent: Any, message: str) -> tuple[threading.Thread, dict[str, Any]]:
    box: dict[str, Any] = {}
    worker = threading.Thread(target=lambda: box.update(r=agent.run_conversation(message)))
    worker.start()
    return worker, box


# --- model calls -----------------------------------------------------------------------------


def test_an_interrupted_model_call_raises_cancelled_at_once():
    agent = make_agent(text("too late", delay=10))
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()

    def make_request(model: str, request_cancel: threading.Event) -> ModelRequest:
        return ModelRequest(model=model, messages=[{"role": "user", "content": "hi"}])

    started = time.monotonic()
    with pytest.raises(Cancelled):
        agent.connection.call(make_request, cancel)
    assert time.monotonic() - started < 1.0


def test_an_interrupted_turn_ends_interrupted_and_leaves_no_trace():
    agent = make_agent(text("too late", delay=10))
    worker, box = run_in_thread(agent, "q")
    assert wait_until(lambda: len(agent.client.requests) == 1)
    started = time.monotonic()
    agent.interrupt()
    worker.join(timeout=3)
    assert time.monotonic() - started < 1.0
    result = box["r"]
    assert result["exit_reason"] == "interrupted" and result["error"] is None
    assert [m["role"] for m in agent.messages] == ["user"]


def with_backup(primary: ScriptedModel, backup: ScriptedModel) -> Any:
    return make_agent(
        model=primary,
        plugin_manager=plugin_manager([scripted_provider_plugin(backup)]),
        config={
            "agent": {"api_max_retries": 3, "retry_base_delay": 0.01},
            "fallback_providers": [{"provider": "scripted", "model": "backup"}],
        },
    )


def test_a_provider_that_cancels_is_neither_retried_nor_moved_to_a_fallback():
    primary = ScriptedModel()
    primary.add(Cancelled("the provider cancelled the call"))
    backup = ScriptedModel()
    backup.add(text("from the backup"))
    agent = with_backup(primary, backup)
    result = agent.run_conversation("q")
    assert result["exit_reason"] == "interrupted" and result["error"] is None
    assert len(primary.requests) == 1 and backup.requests == []
    assert agent.connection.switches == []


def test_the_same_set_up_does_fall_back_on_a_provider_failure():
    primary = ScriptedModel()
    primary.add(ProviderError("upstream down", kind="billing"))
    backup = ScriptedModel()
    backup.add(text("from the backup"))
    agent = with_backup(primary, backup)
    assert agent.chat("q") == "from the backup"
    assert len(agent.connection.switches) == 1


def test_an_interrupt_while_waiting_to_retry_is_not_retried():
    primary = ScriptedModel()
    primary.add(ProviderError("busy", kind="overloaded", retry_after=10), text("retried"))
    agent = make_agent(model=primary, config={"agent": {"api_max_retries": 3}})
    worker, box = run_in_thread(agent, "q")
    assert wait_until(lambda: len(primary.requests) == 1)
    agent.interrupt()
    worker.join(timeout=3)
    assert box["r"]["exit_reason"] == "interrupted"
    assert len(primary.requests) == 1


def test_a_side_request_of_an_interrupted_agent_raises_cancelled():
    agent = make_agent(text("a summary"))
    agent.interrupt()
    with pytest.raises(Cancelled):
        agent.side_request("compression", [{"role": "user", "content": "summarise"}])


# --- summaries -------------------------------------------------------------------------------


class SummaryWatcher(ContextEngine):
    """Summarises on every request, with a fallback for any failure of the model, as engines do;
    records what reached it."""

    name = "watcher"
    seen: list[str] = []

    def should_compress(self, prompt_tokens=None):
        return True

    def should_compress_preflight(self, messages):
        return True

    def compress(self, messages, current_tokens=None, focus=None):
        try:
            self.summarize([{"role": "user", "content": "summarise"}], 50)
        except Cancelled as exc:
            self.seen.append(f"cancelled: {type(exc).__name__}")
            raise
        except Exception as exc:  # the engine's fallback: must not see an interrupt
            self.seen.append(f"failure: {exc}")
        return messages[-1:]


def test_an_interrupt_during_a_summary_passes_through_the_engine_as_cancelled():
    SummaryWatcher.seen = []
    plugin = types.ModuleType("engine_watcher")
    plugin.hermes_register_context_engines = hookimpl(lambda register: register(SummaryWatcher))
    agent = make_agent(
        text("the summary", delay=10),
        plugins=[plugin],
        config={"context": {"engine": "watcher"}},
    )
    first = agent.session_id
    worker, box = run_in_thread(agent, "q")
    assert wait_until(lambda: len(agent.client.requests) == 1)  # the summary request
    started = time.monotonic()
    agent.interrupt()
    worker.join(timeout=3)
    assert time.monotonic() - started < 1.0
    assert box["r"]["exit_reason"] == "interrupted"
    assert SummaryWatcher.seen == ["cancelled: Cancelled"]
    assert agent.session_id == first  # nothing was committed
    assert [m["role"] for m in agent.messages] == ["user"]


# --- tools -----------------------------------------------------------------------------------


def test_an_interrupted_tool_raises_the_one_cancellation_type():
    raised: list[BaseException] = []
    started = threading.Event()

    def slow(args, ctx):
        started.set()
        ctx.cancel_event.wait(10)
        try:
            ctx.check_cancelled()
        except Cancelled as exc:
            raised.append(exc)
            raise
        return "finished"

    agent = make_agent(tool_call("slow"), plugins=[toolset(Tool("slow", "", OBJ, slow))])
    worker, box = run_in_thread(agent, "q")
    assert started.wait(3)
    begun = time.monotonic()
    agent.interrupt()
    worker.join(timeout=3)
    assert time.monotonic() - begun < 1.5
    assert box["r"]["exit_reason"] == "interrupted"
    assert len(raised) == 1 and isinstance(raised[0], ToolCancelled)
    (answer,) = [m for m in agent.messages if m["role"] == "tool"]
    assert "interrupted by the user" in answer["content"]
    assert_valid_transcript(agent.messages)


def test_a_tool_that_raises_cancelled_itself_is_answered_as_interrupted():
    def gives_up(args, ctx):
        raise Cancelled("the upstream job was cancelled")

    agent = make_agent(
        tool_call("gives_up"), text("ok"), plugins=[toolset(Tool("gives_up", "", OBJ, gives_up))]
    )
    assert agent.chat("q") == "ok"
    (answer,) = [m for m in agent.messages if m["role"] == "tool"]
    assert answer["content"] == "Error: interrupted by the user while this tool was running."


def toolset(*tools: Tool) -> object:
    return toolset_plugin(*tools, name="slow")
