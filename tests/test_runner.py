"""The agent runner plugins use (``ToolContext.agents``, ``CommandContext.agent_runner()``)."""

from __future__ import annotations

import threading
import time
from typing import Any

import click

from hermes_core.host import Host
from hermes_core.loop.runner import HostRunner
from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import ScriptedModel, Turn, make_agent, plugin_manager, text, tool_call
from hermes_hookspecs import (
    AgentOutcome,
    AgentRunner,
    AgentTask,
    ApprovalRequest,
    CommandContext,
    Tool,
    Toolset,
    Usage,
    hookimpl,
)


class _Plugin:
    """Registers ``spawn`` (runs a child through ``ctx.agents``) and ``risky`` (needs approval)."""

    def __init__(self) -> None:
        self.outcomes: list[AgentOutcome] = []

    def spawn(self, args: dict[str, Any], ctx: Any) -> str:
        assert isinstance(ctx.agents, AgentRunner)
        outcome = ctx.agents.run(
            AgentTask(
                prompt=args["prompt"],
                parent_session_id=ctx.session_id,
                source="subagent",
                toolsets=["runner-test"],
                cancel_event=ctx.cancel_event,
            )
        )
        self.outcomes.append(outcome)
        return f"{outcome.status}: {outcome.text}"

    @staticmethod
    def risky(args: dict[str, Any], ctx: Any) -> str:
        return "ran" if ctx.approve("rm -rf /tmp/x", "recursive delete") else "denied"

    @hookimpl
    def hermes_register_toolsets(self, register: Any) -> None:
        params = {"type": "object", "properties": {"prompt": {"type": "string"}}}
        register(
            Toolset(
                name="runner-test",
                tools=[
                    Tool(
                        name="spawn",
                        description="run a child",
                        parameters=params,
                        handler=self.spawn,
                    ),
                    Tool(
                        name="risky",
                        description="needs approval",
                        parameters={"type": "object", "properties": {}},
                        handler=self.risky,
                    ),
                ],
            )
        )


def _runner(model: ScriptedModel, plugin: object, tmp_path: Any, **config: Any) -> HostRunner:
    agent = make_agent(model=model, plugins=[plugin], config=config or {})
    store = SQLiteSessionStore(tmp_path / "state.db")
    return HostRunner(
        Host(config=agent.config, plugins=agent.plugins, session_store=store, client=model)
    )


def test_a_run_stores_its_own_session_with_source_and_parent(tmp_path):
    model = ScriptedModel(Turn(text="hello", usage=Usage(input_tokens=7, output_tokens=3)))
    runner = _runner(model, _Plugin(), tmp_path)
    outcome = runner.run(
        AgentTask(
            prompt="hi",
            source="cron",
            parent_session_id="p1",
            system_context="You run on a schedule.",
        )
    )
    assert (outcome.status, outcome.text, outcome.error) == ("completed", "hello", "")
    assert outcome.usage.input_tokens == 7 and outcome.usage.output_tokens == 3
    assert outcome.duration > 0
    stored = runner.session_store.get_session(outcome.session_id)
    assert stored.source == "cron" and stored.parent_session_id == "p1"
    assert stored.end_reason == "completed"
    assert "You run on a schedule." in model.last_request.messages[0]["content"]
    assert [m["role"] for m in runner.session_store.get_messages(outcome.session_id)] == [
        "user",
        "assistant",
    ]


def test_continuing_a_session_replays_its_transcript(tmp_path):
    model = ScriptedModel("first", "second")
    runner = _runner(model, _Plugin(), tmp_path)
    first = runner.run(AgentTask(prompt="one", source="api-server"))
    second = runner.run(AgentTask(prompt="two", session_id=first.session_id))
    assert second.session_id == first.session_id and second.text == "second"
    contents = [m["content"] for m in model.last_request.messages if m["role"] != "system"]
    assert contents == ["one", "first", "two"]


def test_failures_are_outcomes_not_exceptions(tmp_path):
    runner = _runner(ScriptedModel(), _Plugin(), tmp_path)
    unknown = runner.run(AgentTask(prompt="x", toolsets=["no-such-toolset"]))
    assert unknown.status == "error" and "no-such-toolset" in unknown.error
    exhausted = runner.run(AgentTask(prompt="x"))  # the model has nothing to say
    assert exhausted.status == "error" and exhausted.error


def test_budget_and_overrides(tmp_path):
    model = ScriptedModel(tool_call("risky"), "summary of where I stopped")
    runner = _runner(model, _Plugin(), tmp_path)
    outcome = runner.run(
        AgentTask(
            prompt="go",
            max_iterations=1,
            toolsets=["runner-test"],
            config_overrides={"tools.max_result_chars": 500},
        )
    )
    assert outcome.status == "max_iterations"
    assert outcome.text == "summary of where I stopped"


def test_no_approver_denies_and_an_approver_decides(tmp_path):
    model = ScriptedModel(tool_call("risky"), "done", tool_call("risky"), "done")
    runner = _runner(model, _Plugin(), tmp_path)
    runner.run(AgentTask(prompt="a", toolsets=["runner-test"]))
    assert model.requests[1].messages[-1]["content"] == "denied"
    asked: list[ApprovalRequest] = []
    runner.run(
        AgentTask(
            prompt="b", toolsets=["runner-test"], approval=lambda r: asked.append(r) or "once"
        )
    )
    assert model.requests[3].messages[-1]["content"] == "ran"
    assert asked[0].action == "rm -rf /tmp/x"


def test_cancel_event_interrupts_a_run(tmp_path):
    model = ScriptedModel(text("too late", delay=5.0))
    runner = _runner(model, _Plugin(), tmp_path)
    cancel = threading.Event()
    threading.Timer(0.2, cancel.set).start()
    started = time.monotonic()
    outcome = runner.run(AgentTask(prompt="slow", cancel_event=cancel))
    assert outcome.status == "interrupted" and outcome.text == ""
    assert time.monotonic() - started < 3


def test_parallel_runs_do_not_cross(tmp_path):
    def echo(request: Any) -> Any:
        time.sleep(0.05)
        return text("echo " + request.messages[-1]["content"])

    runner = _runner(ScriptedModel(fn=echo), _Plugin(), tmp_path)
    results: dict[int, AgentOutcome] = {}

    def work(n: int) -> None:
        results[n] = runner.run(AgentTask(prompt=f"n{n}", source="api-server"))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert {n: o.text for n, o in results.items()} == {n: f"echo n{n}" for n in range(6)}
    assert len({o.session_id for o in results.values()}) == 6


def test_tool_context_runner_links_child_and_adds_usage_to_parent():
    plugin = _Plugin()
    model = ScriptedModel(
        Turn(
            calls=[tool_call("spawn", {"prompt": "sub job"}).calls[0]],
            usage=Usage(input_tokens=10, output_tokens=1),
        ),
        Turn(text="child answer", usage=Usage(input_tokens=100, output_tokens=20)),
        Turn(text="parent answer", usage=Usage(input_tokens=30, output_tokens=2)),
    )
    agent = make_agent(model=model, plugins=[plugin], toolsets=["runner-test"])
    result = agent.run_conversation("delegate it")
    assert result["final_response"] == "parent answer"
    (child,) = plugin.outcomes
    assert child.text == "child answer"
    assert result["usage"]["input_tokens"] == 140 and result["usage"]["output_tokens"] == 23
    stored = agent.session_store.get_session(child.session_id)
    assert stored.parent_session_id == agent.session_id and stored.source == "subagent"
    # the child's transcript is its own: only its prompt, not the parent's history
    child_request = model.requests[1]
    assert [m["content"] for m in child_request.messages if m["role"] != "system"] == ["sub job"]


def test_interrupting_the_parent_stops_the_child():
    plugin = _Plugin()
    model = ScriptedModel(tool_call("spawn", {"prompt": "long"}), text("never", delay=10.0))
    agent = make_agent(model=model, plugins=[plugin], toolsets=["runner-test"])
    threading.Timer(0.3, agent.interrupt).start()
    started = time.monotonic()
    result = agent.run_conversation("go")
    assert result["interrupted"]
    assert plugin.outcomes[0].status == "interrupted"
    assert time.monotonic() - started < 5


def test_subagent_sessions_are_not_a_continuation_of_their_parent(tmp_path):
    store = SQLiteSessionStore(tmp_path / "state.db")
    from hermes_hookspecs import SessionInfo

    store.create_session(SessionInfo(id="parent", source="cli", started_at=1.0))
    store.create_session(
        SessionInfo(id="child", source="subagent", parent_session_id="parent", started_at=2.0)
    )
    assert store.newest_in_lineage("parent") == "parent"


def test_cli_state_is_a_command_context_with_a_runner(tmp_path, monkeypatch):
    from hermes_core.cli.app import main

    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    seen: dict[str, Any] = {}

    class Commands:
        @hookimpl
        def hermes_register_commands(self, cli: click.Group) -> None:
            @cli.command("probe")
            def probe() -> None:
                obj = click.get_current_context().obj
                seen["is_context"] = isinstance(obj, CommandContext)
                seen["home"] = obj.home
                seen["max_turns"] = obj.config["agent"]["max_turns"]
                seen["runner"] = isinstance(obj.agent_runner(), AgentRunner)

    assert main(["probe"], extra_plugins=[("probe", Commands())]) == 0
    assert seen == {"is_context": True, "home": tmp_path, "max_turns": 90, "runner": True}


def test_plugin_manager_shared_between_runs(tmp_path):
    # building agents in parallel threads must not register toolsets twice
    manager = plugin_manager([_Plugin()])
    agent = make_agent(model=ScriptedModel(fn=lambda r: "ok"), plugin_manager=manager)
    runner = HostRunner(
        Host(
            config=agent.config,
            plugins=manager,
            session_store=SQLiteSessionStore(tmp_path / "s.db"),
            client=agent.client,
        )
    )
    outs: list[AgentOutcome] = []
    threads = [
        threading.Thread(target=lambda: outs.append(runner.run(AgentTask(prompt="x"))))
        for _ in range(4)
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert [o.status for o in outs] == ["completed"] * 4
    assert not manager.failures()


def test_excluded_toolsets_are_never_offered_and_unknown_names_ignored(tmp_path):
    model = ScriptedModel("ok")
    runner = _runner(model, _Plugin(), tmp_path)
    outcome = runner.run(
        AgentTask(prompt="x", toolsets=["runner-test"], exclude_toolsets=["runner-test", "nope"])
    )
    assert outcome.status == "completed"
    assert model.last_request.tool_names == []


def test_runs_with_different_fields_never_share_them(tmp_path):
    # the runner keeps one configuration per distinct set of task fields: a task's toolsets,
    # budget, source and overrides apply to its own run only, however the runs alternate
    def answer(request: Any) -> Any:
        if "risky" in request.tool_names and request.messages[-1]["role"] == "user":
            return tool_call("risky")
        return "ok"

    model = ScriptedModel(fn=answer)
    runner = _runner(model, _Plugin(), tmp_path)
    store = runner.session_store
    tasks = [
        AgentTask(prompt="a", toolsets=["runner-test"], source="one", max_iterations=1),
        AgentTask(prompt="b", toolsets=[], source="two"),
        AgentTask(prompt="c", toolsets=["runner-test"], source="one", max_iterations=1),
        AgentTask(prompt="d", config_overrides={"toolsets": []}),
        AgentTask(prompt="e", source="two"),
        AgentTask(prompt="f", source="two", exclude_toolsets=["runner-test"]),
        AgentTask(prompt="g", toolsets=["runner-test"], source="two"),
    ]
    outcomes = [runner.run(task) for task in tasks]
    statuses = [o.status for o in outcomes]
    assert statuses == ["max_iterations", "completed"] * 2 + ["completed"] * 3
    offered = [bool(request.tool_names) for request in model.requests]
    # a, c: a tool call, then the budget summary (no tools); e, g: a tool call, then the answer
    assert offered == [True, False, False, True, False, False, True, True, False, True, True]
    sources = [store.get_session(o.session_id).source for o in outcomes]
    assert sources == ["one", "two", "one", "library", "two", "two", "two"]


def test_on_event_follows_the_run_and_images_join_the_prompt(tmp_path):
    model = ScriptedModel(tool_call("risky"), "a red dot")
    runner = _runner(model, _Plugin(), tmp_path)
    events: list[tuple[str, dict[str, Any]]] = []
    image = tmp_path / "dot.png"
    image.write_bytes(b"\x89PNG\r\n\x1a\n" + b"\0" * 32)
    outcome = runner.run(
        AgentTask(
            prompt="what is this?",
            toolsets=["runner-test"],
            images=[str(image)],
            on_event=lambda name, data: events.append((name, dict(data))),
        )
    )
    assert outcome.status == "completed"
    names = [name for name, _ in events]
    assert names.index("tool_start") < names.index("tool_end")
    assert [d["name"] for n, d in events if n == "tool_start"] == ["risky"]
    [user] = [
        m for m in runner.session_store.get_messages(outcome.session_id) if m["role"] == "user"
    ]
    kinds = [part["type"] for part in user["content"]]
    assert kinds == ["text", "image_url"]


def test_an_image_that_is_not_one_is_an_error_outcome(tmp_path):
    runner = _runner(ScriptedModel("never asked"), _Plugin(), tmp_path)
    bogus = tmp_path / "notes.png"
    bogus.write_text("plain text", encoding="utf-8")
    outcome = runner.run(AgentTask(prompt="look", images=[str(bogus)]))
    assert outcome.status == "error" and outcome.error


def test_extra_tools_are_offered_in_their_run_only(tmp_path):
    calls: list[str] = []
    echo = Tool(
        name="echo",
        description="say it back",
        parameters={"type": "object", "properties": {"text": {"type": "string"}}},
        handler=lambda args, ctx: calls.append(args["text"]) or f"echo {args['text']}",
    )
    model = ScriptedModel(tool_call("echo", {"text": "hi"}), "said", "plain")
    runner = _runner(model, _Plugin(), tmp_path)
    outcome = runner.run(AgentTask(prompt="go", extra_tools=[echo]))
    assert (outcome.status, calls) == ("completed", ["hi"])
    assert "echo" in [t["function"]["name"] for t in model.requests[0].tools]
    runner.run(AgentTask(prompt="again"))
    assert "echo" not in [t["function"]["name"] for t in model.last_request.tools]
    taken = Tool(name="risky", description="a clash", parameters={}, handler=echo.handler)
    clash = runner.run(AgentTask(prompt="x", extra_tools=[taken]))
    assert clash.status == "error" and "risky" in clash.error
