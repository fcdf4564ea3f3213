"""delegate_task through the real tool path: the loop, the dispatcher, the host's runner."""

from __future__ import annotations

import json
import re
import threading
import time
from typing import Any

import pytest

from hermes_core.testing import (
    Agent,
    FakeLLM,
    ScriptedModel,
    Turn,
    load_plugin,
    make_agent,
    plugin_manager,
    text,
    tool_call,
)
from hermes_hookspecs import (
    ApprovalRequest,
    ModelRequest,
    ProviderError,
    Tool,
    ToolError,
    Toolset,
    Usage,
    hookimpl,
)


def _system(request: ModelRequest) -> str:
    first = request.messages[0]
    return first["content"] if first["role"] == "system" else ""


def _task_of(request: ModelRequest) -> str | None:
    """The goal of a subagent's request; None for the parent's."""
    match = re.search(r"^Your task: (.*)$", _system(request), re.M)
    return match.group(1) if match else None


def _tool_results(request: ModelRequest) -> list[str]:
    return [m["content"] for m in request.messages if m["role"] == "tool"]


class Risky:
    """A toolset whose tool asks for approval; ``ran`` counts the runs that were allowed."""

    def __init__(self) -> None:
        self.ran = 0

    def risky(self, args: dict[str, Any], ctx: Any) -> str:
        if not ctx.approve("rm -rf build", "recursive delete", key="rm"):
            return "denied"
        self.ran += 1
        return "done"

    @hookimpl
    def hermes_register_toolsets(self, register: Any) -> None:
        register(
            Toolset(
                name="risky",
                tools=[
                    Tool(
                        name="risky",
                        description="deletes things",
                        parameters={"type": "object", "properties": {}},
                        handler=self.risky,
                    )
                ],
            )
        )


class Observer:
    """Records the subagent hooks."""

    def __init__(self) -> None:
        self.events: list[tuple[str, dict[str, Any]]] = []

    @hookimpl
    def hermes_subagent_start(self, parent_session_id, child_session_id, goal, source):
        self.events.append(
            (
                "start",
                dict(parent=parent_session_id, child=child_session_id, goal=goal, source=source),
            )
        )

    @hookimpl
    def hermes_subagent_stop(
        self, parent_session_id, child_session_id, goal, status, duration, outcome
    ):
        self.events.append(
            (
                "stop",
                dict(
                    parent=parent_session_id,
                    child=child_session_id,
                    goal=goal,
                    status=status,
                    duration=duration,
                    text=outcome.text,
                ),
            )
        )


def _agent(
    model: ScriptedModel,
    *extra: object,
    delegation: dict | None = None,
    toolsets=("delegation", "todo", "clarify"),
    **kwargs: Any,
) -> Agent:
    config = {"delegation": delegation or {}, "toolsets": list(toolsets)}
    return make_agent(
        model=model, plugins=["delegation", "todo", "clarify", *extra], config=config, **kwargs
    )


def _report(agent: Agent) -> dict[str, Any]:
    (result,) = [m["content"] for m in agent.messages if m["role"] == "tool"][-1:]
    return json.loads(result)


def test_loads_through_its_entry_point():
    record = load_plugin("delegation")
    assert record.dist == "hermes-toolset-delegation"
    assert set(record.hooks) == {
        "hermes_register_config",
        "hermes_register_toolsets",
        "hermes_pre_tool_call",
    }


def test_a_child_has_its_own_transcript_budget_and_linked_session():
    def model(request: ModelRequest) -> Any:
        if _task_of(request) == "count the files":
            return Turn(text="There are 3 files.", usage=Usage(input_tokens=50, output_tokens=5))
        if not _tool_results(request):
            return Turn(
                calls=tool_call(
                    "delegate_task",
                    {"goal": "count the files", "context": "The folder is /srv/data."},
                ).calls,
                usage=Usage(input_tokens=10, output_tokens=2),
            )
        return Turn(text="The child says 3.", usage=Usage(input_tokens=20, output_tokens=3))

    scripted = ScriptedModel(fn=model)
    agent = _agent(scripted)
    agent.chat("My secret parent-only detail is PLUM. How many files?")
    report = _report(agent)
    (child,) = report["results"]
    assert child["status"] == "completed" and child["summary"] == "There are 3 files."
    assert child["usage"] == {"input_tokens": 50, "output_tokens": 5}
    # the parent's usage includes the child's
    assert agent.usage.input_tokens == 80 and agent.usage.output_tokens == 10

    (child_request,) = [r for r in scripted.requests if _task_of(r)]
    assert "The folder is /srv/data." in _system(child_request)
    assert not any("PLUM" in str(m.get("content")) for m in child_request.messages)
    assert [m["content"] for m in child_request.messages[1:]] == ["count the files"]
    # restricted: no clarify, no delegation at depth 1; the other toolsets stay
    assert child_request.tool_names == ["todo"]

    stored = agent.session_store.get_session(child["session_id"])
    assert stored.parent_session_id == agent.session_id and stored.source == "subagent"
    assert stored.end_reason == "completed"


def test_parallel_tasks_respect_the_limit_and_keep_the_given_order():
    in_flight = 0
    peak = 0
    lock = threading.Lock()

    def model(request: ModelRequest) -> Any:
        nonlocal in_flight, peak
        goal = _task_of(request)
        if goal is None:
            if _tool_results(request):
                return "all done"
            tasks = [{"goal": f"job {n}"} for n in range(5)]
            return tool_call("delegate_task", {"tasks": tasks})
        with lock:
            in_flight += 1
            peak = max(peak, in_flight)
        time.sleep(0.3 if goal == "job 0" else 0.05)  # the first finishes last
        with lock:
            in_flight -= 1
        return f"result of {goal}"

    agent = _agent(ScriptedModel(fn=model), delegation={"max_concurrent_children": 2})
    assert agent.chat("do five jobs") == "all done"
    report = _report(agent)
    assert [r["summary"] for r in report["results"]] == [f"result of job {n}" for n in range(5)]
    assert [r["task"] for r in report["results"]] == [1, 2, 3, 4, 5]
    assert peak == 2
    assert report["completed"] == 5


def test_a_child_failure_is_a_tool_result_and_the_parent_goes_on():
    def model(request: ModelRequest) -> Any:
        goal = _task_of(request)
        if goal == "bad":
            return ProviderError("upstream exploded", kind="server", status=500)
        if goal == "good":
            return "fine"
        if _tool_results(request):
            return "one of them failed"
        return tool_call("delegate_task", {"tasks": [{"goal": "bad"}, {"goal": "good"}]})

    agent = make_agent(
        model=ScriptedModel(fn=model),
        plugins=["delegation", "todo"],
        config={"agent": {"api_max_retries": 0}, "toolsets": ["delegation", "todo"]},
    )
    assert agent.chat("try both") == "one of them failed"
    bad, good = _report(agent)["results"]
    assert bad["status"] == "error" and "upstream exploded" in bad["error"]
    assert good["status"] == "completed"


def test_interrupting_the_parent_stops_every_child():
    def model(request: ModelRequest) -> Any:
        if _task_of(request):
            return text("never", delay=10.0)
        return tool_call("delegate_task", {"tasks": [{"goal": "a"}, {"goal": "b"}]})

    observer = Observer()
    agent = _agent(ScriptedModel(fn=model), observer)
    threading.Timer(0.5, agent.interrupt).start()
    started = time.monotonic()
    result = agent.run_conversation("go")
    assert result["interrupted"]
    assert time.monotonic() - started < 5
    stops = [e for kind, e in observer.events if kind == "stop"]
    assert sorted(e["status"] for e in stops) == ["interrupted", "interrupted"]


def _spin(stop: Any) -> None:
    while not stop.is_set():
        pass


def test_a_queued_child_never_starts_after_an_interrupt_even_on_a_busy_machine():
    """Four tasks, three at a time, the parent interrupted while three wait on the model: the
    fourth is never started (two processes keep both cores busy, as the race needs)."""
    import multiprocessing

    stop = multiprocessing.Event()
    spinners = [multiprocessing.Process(target=_spin, args=(stop,)) for _ in range(2)]
    for spinner in spinners:
        spinner.start()
    try:
        for _ in range(3):
            asked: list[str] = []

            def model(request: ModelRequest, asked: list[str] = asked) -> Any:
                goal = _task_of(request)
                if goal:
                    asked.append(goal)
                    return text("never", delay=2.0)
                return tool_call("delegate_task", {"tasks": [{"goal": g} for g in "abcd"]})

            observer = Observer()
            agent = _agent(ScriptedModel(fn=model), observer)

            def interrupt_when_three_wait(agent: Agent = agent, asked: list[str] = asked) -> None:
                while len(asked) < 3:
                    time.sleep(0.002)
                agent.interrupt()

            threading.Thread(target=interrupt_when_three_wait, daemon=True).start()
            assert agent.run_conversation("go")["interrupted"]
            time.sleep(0.5)  # a child started late would ask the model meanwhile
            assert "d" not in asked and len(asked) == 3
            started = [e["goal"] for kind, e in observer.events if kind == "start"]
            assert "d" not in started
    finally:
        stop.set()
        for spinner in spinners:
            spinner.join()


def test_depth_limit_and_deeper_spawning():
    seen_tools: dict[str, list[str]] = {}

    def model(request: ModelRequest) -> Any:
        goal = _task_of(request)
        seen_tools.setdefault(goal or "parent", request.tool_names)
        if goal == "outer":
            if _tool_results(request):
                return "outer done: " + _tool_results(request)[-1][:40]
            return tool_call("delegate_task", {"goal": "inner"})
        if goal == "inner":
            return "inner done"
        if _tool_results(request):
            return "top done"
        return tool_call("delegate_task", {"goal": "outer"})

    agent = _agent(ScriptedModel(fn=model), delegation={"max_spawn_depth": 2})
    assert agent.chat("nest") == "top done"
    assert "delegate_task" in seen_tools["outer"]  # depth 1 < 2: may delegate
    assert "delegate_task" not in seen_tools["inner"]  # depth 2: may not
    (outer,) = _report(agent)["results"]
    assert outer["summary"].startswith("outer done")


def test_a_child_calling_delegate_beyond_the_depth_is_refused():
    # a child asking for the delegation toolset explicitly still cannot delegate
    def model(request: ModelRequest) -> Any:
        goal = _task_of(request)
        if goal == "child":
            if _tool_results(request):
                return "child saw: " + _tool_results(request)[-1]
            return tool_call("delegate_task", {"goal": "grandchild"})
        if _tool_results(request):
            return "ok"
        return tool_call("delegate_task", {"goal": "child", "toolsets": ["delegation"]})

    agent = _agent(ScriptedModel(fn=model))
    agent.chat("x")
    (child,) = _report(agent)["results"]
    # delegation is excluded at depth 1, so the child has no such tool at all
    assert "unknown tool" in child["summary"] or "BLOCKED" in child["summary"]


def test_children_get_no_toolset_the_parent_lacks():
    def model(request: ModelRequest) -> Any:
        if _tool_results(request):
            return "ok"
        return tool_call("delegate_task", {"goal": "escalate", "toolsets": ["risky"]})

    agent = make_agent(
        model=ScriptedModel(fn=model),
        plugins=["delegation", Risky()],
        config={"toolsets": ["delegation"]},
    )
    agent.chat("x")
    (child,) = _report(agent)["results"]
    assert child["status"] == "error" and "not available to the calling agent" in child["error"]


def test_a_toolset_the_configuration_disables_is_an_error_entry_for_the_child():
    def model(request: ModelRequest) -> Any:
        if _tool_results(request):
            return "ok"
        if _task_of(request) == "escalate":
            return "the child ran anyway"
        return tool_call("delegate_task", {"goal": "escalate", "toolsets": ["risky"]})

    agent = make_agent(
        model=ScriptedModel(fn=model),
        plugins=["delegation", Risky()],
        config={"disabled_toolsets": ["risky"]},
    )
    agent.chat("x")
    report = _report(agent)
    (child,) = report["results"]
    assert child["status"] == "error", child
    assert "risky" in child["error"] and "disabled_toolsets" in child["error"]
    assert child["summary"] == ""


def _approval_model(request: ModelRequest) -> Any:
    goal = _task_of(request)
    if goal == "clean up":
        if _tool_results(request):
            return "cleanup: " + _tool_results(request)[-1]
        return tool_call("risky")
    if _tool_results(request):
        return "ok"
    return tool_call("delegate_task", {"goal": "clean up"})


def test_child_approvals_reach_the_parents_approver():
    risky = Risky()
    asked: list[ApprovalRequest] = []
    agent = make_agent(
        model=ScriptedModel(fn=_approval_model),
        plugins=["delegation", risky],
        config={"toolsets": ["delegation", "risky"]},
        approval_callback=lambda r: asked.append(r) or "once",
    )
    agent.chat("x")
    assert risky.ran == 1
    assert asked[0].action == "rm -rf build" and "subagent 1 (clean up)" in asked[0].reason
    assert _report(agent)["results"][0]["summary"] == "cleanup: done"


def test_child_approvals_fail_closed_without_an_approver():
    risky = Risky()
    agent = make_agent(
        model=ScriptedModel(fn=_approval_model),
        plugins=["delegation", risky],
        config={"toolsets": ["delegation", "risky"]},
    )
    agent.chat("x")
    assert risky.ran == 0
    assert _report(agent)["results"][0]["summary"] == "cleanup: denied"


def test_subagent_auto_approve():
    risky = Risky()
    agent = make_agent(
        model=ScriptedModel(fn=_approval_model),
        plugins=["delegation", risky],
        config={"toolsets": ["delegation", "risky"], "delegation": {"subagent_auto_approve": True}},
    )
    agent.chat("x")
    assert risky.ran == 1


def test_memory_is_read_only_for_children(tmp_path):
    def model(request: ModelRequest) -> Any:
        goal = _task_of(request)
        add = {"action": "add", "target": "memory", "content": f"note from {goal or 'parent'}"}
        if goal:
            if _tool_results(request):
                return "child: " + _tool_results(request)[-1]
            return tool_call("memory", add)
        results = _tool_results(request)
        if not results:
            return tool_call("memory", add)
        if len(results) == 1:
            return tool_call("delegate_task", {"goal": "remember"})
        return "ok"

    agent = make_agent(
        model=ScriptedModel(fn=model),
        plugins=["delegation", "memory"],
        config={"toolsets": ["delegation", "memory"]},
        home=tmp_path,
    )
    agent.chat("x")
    (child,) = _report(agent)["results"]
    assert "blocked" in child["summary"].lower()
    assert "subagents can read memory" in child["summary"]
    saved = (tmp_path / "memories" / "MEMORY.md").read_text()
    assert "note from parent" in saved and "note from remember" not in saved


def test_budget_and_model_from_config():
    def model(request: ModelRequest) -> Any:
        if _task_of(request):
            if "steps allowed" in str(request.messages[-1]["content"]):
                return "stopped early"
            return tool_call("todo", {"todos": [{"id": "1", "content": "x", "status": "pending"}]})
        if _tool_results(request):
            return "ok"
        return tool_call("delegate_task", {"goal": "loop forever"})

    scripted = ScriptedModel(fn=model)
    agent = _agent(scripted, delegation={"max_iterations": 2, "model": "child-model"})
    agent.chat("x")
    (child,) = _report(agent)["results"]
    assert child["status"] == "max_iterations" and child["summary"] == "stopped early"
    child_models = {r.model for r in scripted.requests if _task_of(r)}
    assert child_models == {"child-model"}
    assert len([r for r in scripted.requests if _task_of(r)]) == 3  # 2 steps + the summary


def test_hooks_report_start_and_stop():
    def model(request: ModelRequest) -> Any:
        if _task_of(request):
            return "fine"
        if _tool_results(request):
            return "ok"
        return tool_call("delegate_task", {"goal": "observe me"})

    observer = Observer()
    agent = _agent(ScriptedModel(fn=model), observer)
    agent.chat("x")
    (start, stop) = observer.events
    assert start[0] == "start" and stop[0] == "stop"
    assert start[1]["parent"] == agent.session_id == stop[1]["parent"]
    assert start[1]["child"] == stop[1]["child"] == _report(agent)["results"][0]["session_id"]
    assert start[1]["goal"] == "observe me" and start[1]["source"] == "subagent"
    assert stop[1]["status"] == "completed" and stop[1]["duration"] > 0


@pytest.mark.parametrize(
    "args, expected",
    [
        ({}, "'goal' is required"),
        ({"goal": "a", "tasks": [{"goal": "b"}]}, "not both"),
        ({"tasks": [{"goal": "b"}], "context": "c"}, "inside the task"),
        ({"tasks": [{"goal": f"t{n}"} for n in range(11)]}, "delegation.max_tasks"),
    ],
)
def test_bad_calls_are_explained_to_the_model(args, expected):
    model = ScriptedModel(tool_call("delegate_task", args), "sorry")
    agent = _agent(model)
    agent.chat("x")
    result = [m for m in agent.messages if m["role"] == "tool"][-1]["content"]
    assert expected in result


def test_bad_config_is_explained():
    from hermes_core.testing import ConfigError

    model = ScriptedModel(tool_call("delegate_task", {"goal": "a"}), "sorry")
    # the declared keys are checked when the agent is made, before any model call
    with pytest.raises(ConfigError, match=r"^delegation\.max_concurrent_children: expected an"):
        _agent(model, delegation={"max_concurrent_children": 0})


def test_bad_setting_reaching_the_tool_is_explained():
    from hermes_toolset_delegation.settings import Settings

    with pytest.raises(ToolError, match="delegation.max_concurrent_children"):
        Settings.from_config({"delegation": {"max_concurrent_children": 0}})


def test_with_the_openai_sdk_against_the_fake_server():
    """The whole path on the wire: parent and child both talk to a real HTTP endpoint."""

    def answer(recorded: Any) -> Any:
        body = recorded.json
        system = body["messages"][0]["content"] if body["messages"][0]["role"] == "system" else ""
        if "Your task: say hi" in system:
            return {"text": "hi from the child", "usage": {"input_tokens": 40, "output_tokens": 4}}
        if any(m["role"] == "tool" for m in body["messages"]):
            return {"text": "relayed", "usage": {"input_tokens": 60, "output_tokens": 2}}
        return {
            "calls": [{"name": "delegate_task", "arguments": {"goal": "say hi"}}],
            "usage": {"input_tokens": 30, "output_tokens": 6},
        }

    with FakeLLM() as server:
        server.add(answer, answer, answer)
        agent = Agent.from_config(
            provider="custom",
            base_url=server.openai_base_url,
            model="m",
            api_key="test",
            plugins=plugin_manager(["openai", "delegation"]),
            config={"toolsets": ["delegation"]},
        )
        with agent:
            assert agent.chat("greet via a helper") == "relayed"
            assert agent.usage.input_tokens == 130 and agent.usage.output_tokens == 12
        assert len(server.model_requests) == 3
        assert not server.errors
