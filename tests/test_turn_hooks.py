"""The hooks a tracer needs: ``hermes_turn_start`` / ``hermes_turn_end`` around every turn (with
the trace context of an ``AgentTask``), ``hermes_after_response`` handed the request it answers,
``hermes_request_failed`` for every failed attempt, and the tool call that started a subagent in
``hermes_subagent_start``."""

from __future__ import annotations

import threading
from typing import Any

from hermes_core.testing import make_agent, make_runner, text, tool_call, toolset_plugin
from hermes_hookspecs import AgentTask, ModelRequest, ProviderError, Tool, hookimpl

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


class Recorder:
    """Records the hook calls, in order, from any thread."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, dict[str, Any]]] = []
        self.lock = threading.Lock()

    def _add(self, name: str, **kwargs: Any) -> None:
        with self.lock:
            self.calls.append((name, kwargs))

    def named(self, name: str) -> list[dict[str, Any]]:
        return [kwargs for hook, kwargs in self.calls if hook == name]

    @hookimpl
    def hermes_turn_start(
        self,
        session_id: str,
        task_id: str,
        source: str,
        model: str,
        provider: str,
        config: Any,
        trace_context: Any,
    ) -> None:
        self._add(
            "turn_start",
            session_id=session_id,
            task_id=task_id,
            source=source,
            model=model,
            provider=provider,
            config=config,
            trace_context=dict(trace_context),
        )

    @hookimpl
    def hermes_turn_end(self, session_id: str, task_id: str, result: Any) -> None:
        self._add("turn_end", session_id=session_id, task_id=task_id, result=result)

    @hookimpl
    def hermes_before_request(self, request: ModelRequest) -> None:
        self._add("before_request", request=request)

    @hookimpl
    def hermes_after_response(self, response: Any, request: ModelRequest) -> None:
        self._add("after_response", response=response, request=request)

    @hookimpl
    def hermes_request_failed(self, request: ModelRequest, error: BaseException) -> None:
        self._add("request_failed", request=request, error=error)

    @hookimpl
    def hermes_subagent_start(
        self, parent_session_id: str, child_session_id: str, parent_call_id: str
    ) -> None:
        self._add("subagent_start", parent=parent_session_id, child=child_session_id,
                  call=parent_call_id)  # fmt: skip


def test_a_turn_is_announced_and_closed_with_its_result() -> None:
    seen = Recorder()
    bot = make_agent("hello there", plugins=[seen], config={"agent": {"platform": "cli"}})
    result = bot.run_conversation(
        "hi", task_id="task-1", trace_context={"traceparent": TRACEPARENT}
    )
    bot.close()
    assert [name for name, _ in seen.calls] == [
        "turn_start",
        "before_request",
        "after_response",
        "turn_end",
    ]
    [start] = seen.named("turn_start")
    assert start["session_id"] == result["session_id"] and start["task_id"] == "task-1"
    assert start["source"] == "cli" and start["model"] == result["model"]
    assert start["trace_context"] == {"traceparent": TRACEPARENT}
    assert start["config"]["agent"]["platform"] == "cli"
    [end] = seen.named("turn_end")
    assert end["task_id"] == "task-1" and end["result"] is not None
    assert end["result"]["final_response"] == "hello there"
    [before] = seen.named("before_request")
    [after] = seen.named("after_response")
    assert after["request"] is before["request"]
    assert after["request"].task_id == "task-1"


def test_a_failed_attempt_is_reported_with_its_request_and_the_turn_still_ends() -> None:
    seen = Recorder()
    error = ProviderError("overloaded", status=529, kind="overloaded", retryable=True)
    bot = make_agent(
        error,
        "recovered",
        plugins=[seen],
        config={"agent": {"retry_base_delay": 0.001, "api_max_retries": 1}},
    )
    assert bot.chat("hi") == "recovered"
    bot.close()
    first, second = seen.named("before_request")
    [failed] = seen.named("request_failed")
    assert failed["request"] is first["request"] and failed["error"] is error
    [after] = seen.named("after_response")
    assert after["request"] is second["request"]
    assert len(seen.named("turn_end")) == 1


def test_a_turn_that_fails_ends_once_with_its_error() -> None:
    seen = Recorder()
    bot = make_agent(ProviderError("bad key", status=401, kind="auth"), plugins=[seen])
    result = bot.run_conversation("hi")
    bot.close()
    assert result["exit_reason"] == "provider_error"
    [end] = seen.named("turn_end")
    assert end["result"]["exit_reason"] == "provider_error"
    assert len(seen.named("request_failed")) == 1


def test_an_agent_task_hands_its_trace_context_to_the_turn() -> None:
    seen = Recorder()
    runner = make_runner("ok", plugins=[seen])
    outcome = runner.run(
        AgentTask(prompt="hi", source="cron", trace_context={"traceparent": TRACEPARENT})
    )
    assert outcome.status == "completed"
    [start] = seen.named("turn_start")
    assert start["source"] == "cron"
    assert start["trace_context"] == {"traceparent": TRACEPARENT}


def test_a_subagent_names_the_tool_call_that_started_it() -> None:
    seen = Recorder()

    def delegate(args: dict[str, Any], ctx: Any) -> str:
        return ctx.agents.run(AgentTask(prompt="child goal", source="subagent")).text

    tools = toolset_plugin(
        Tool("spawn", "start a child", {"type": "object", "properties": {}}, delegate)
    )
    bot = make_agent(
        tool_call("spawn", {}, id="call_spawn"),
        "child answer",
        text("parent answer"),
        plugins=[seen, tools],
    )
    assert bot.chat("go") == "parent answer"
    bot.close()
    [started] = seen.named("subagent_start")
    assert started["call"] == "call_spawn" and started["parent"] == bot.session_id
    starts = seen.named("turn_start")
    assert [s["session_id"] for s in starts] == [bot.session_id, started["child"]]
    assert starts[1]["source"] == "subagent"
