"""The tool boundary of the loop: refusals, redaction, unencodable text, malformed calls,
handler timeouts and interrupts, invalid steps, and calls a crash left unanswered."""

from __future__ import annotations

import asyncio
import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from hermes_core.config.loading import ConfigError
from hermes_core.loop.agent import Agent
from hermes_core.loop.dispatch import PLACEHOLDER_NAME, cap
from hermes_core.loop.transcript import INTERRUPTED_RESULT
from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import (
    Call,
    FakeLLM,
    Turn,
    assert_request_valid,
    assert_valid_transcript,
    make_agent,
    plugin_manager,
    text,
    tool_call,
    tool_calls,
    toolset_plugin,
    wait_until,
)
from hermes_hookspecs import (
    ApprovalRequest,
    Block,
    SessionInfo,
    Tool,
    ToolError,
    Toolset,
    blocked,
    hookimpl,
)
from hermes_runtime.secrets import REDACTED, forget_secrets, mark_secret

OBJ = {"type": "object", "properties": {}}
STR_ARG = {"type": "object", "properties": {"q": {"type": "string"}}}


def tool(name: str, handler: Any, parameters: dict[str, Any] | None = None, **kw: Any) -> Tool:
    return Tool(name, f"the {name} tool", parameters or OBJ, handler, **kw)


def results(messages: list[dict[str, Any]]) -> list[str]:
    return [m["content"] for m in messages if m["role"] == "tool"]


def encodable(messages: list[dict[str, Any]]) -> bool:
    json.dumps(messages, ensure_ascii=False).encode("utf-8")  # raises on a lone surrogate
    return True


@pytest.fixture(autouse=True)
def no_marked_secrets() -> Iterator[None]:
    forget_secrets()
    yield
    forget_secrets()


# --- refusals ---------------------------------------------------------------------------------


def test_every_core_refusal_starts_with_blocked_names_its_rule_and_says_not_to_retry():
    ran: list[str] = []

    def needs(args: dict[str, Any]) -> ApprovalRequest | None:
        if args["q"] == "broken":
            raise ValueError("cannot tell")
        return ApprovalRequest(action=f"run {args['q']}", reason="runs things", tool="act")

    def act(args: dict[str, Any], ctx: Any) -> str:
        ran.append(args["q"])
        return "done"

    def refuse(args: dict[str, Any], ctx: Any) -> str:
        raise ToolError(blocked("house-rule", "this is never allowed", "here"))

    class Guard:
        @hookimpl
        def hermes_pre_tool_call(self, call: Any) -> Block | None:
            return Block("the guard says no") if call.arguments.get("q") == "guarded" else None

    plugins = [
        toolset_plugin(tool("act", act, STR_ARG, needs_approval=needs), tool("refuse", refuse)),
        Guard(),
    ]
    agent = make_agent(
        tool_calls(("act", {"q": "user"}), ("act", {"q": "guarded"}), ("act", {"q": "broken"})),
        tool_call("refuse"),
        text("ok"),
        plugins=plugins,
        approval_callback=lambda request: "deny",
    )
    agent.chat("go")
    denied, guarded, broken, refused = results(agent.messages)
    assert ran == []
    assert denied == blocked("user-denied", "not approved by the user: runs things", "run user")
    assert guarded == blocked("plugin:Guard", "the guard says no")
    assert broken.startswith("BLOCKED: the approval check of 'act' failed (ValueError")
    assert "(rule approval-check-failed)" in broken
    assert refused == blocked("house-rule", "this is never allowed", "here")  # not "Error: ..."
    for refusal in (denied, guarded, broken, refused):
        assert refusal.startswith("BLOCKED: ") and "Do not retry this call" in refusal

    no_one = make_agent(
        tool_call("act", {"q": "x"}),
        text("ok"),
        plugins=[toolset_plugin(tool("act", act, STR_ARG, needs_approval=needs))],
    )
    no_one.chat("go")
    assert results(no_one.messages) == [
        blocked(
            "no-approver",
            "not approved, as no one was available to approve it: runs things",
            "run x",
        )
    ]
    assert ran == []


# --- redaction --------------------------------------------------------------------------------


def test_a_secret_in_a_tool_result_reaches_no_one(tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    env_key = "sk-env-0123456789abcdef"
    marked = "marked-secret-value-42"
    monkeypatch.setenv("OPENAI_API_KEY", env_key)
    mark_secret("ACME_TOKEN", marked)
    seen_by_hook: list[str] = []
    ended: list[str] = []

    class Observer:
        @hookimpl
        def hermes_post_tool_call(self, result: Any) -> None:
            seen_by_hook.append(result.content)

    leak = tool("leak", lambda a, c: f"key={env_key} token={marked} done")
    store = SQLiteSessionStore(tmp_path / "state.db")
    agent = make_agent(
        tool_call("leak"),
        text("ok"),
        plugins=[toolset_plugin(leak), Observer()],
        session_store=store,
        event_sink=lambda e: ended.append(e.data["result"]) if e.name == "tool_end" else None,
    )
    agent.chat("go")
    expected = f"key={REDACTED} token={REDACTED} done"
    sent = agent.client.last_request.messages
    stored = store.get_messages(agent.session_id)
    assert results(sent) == [expected] and results(stored) == [expected]
    assert seen_by_hook == [expected] and ended == [expected]
    everything = json.dumps([sent, stored, agent.messages])
    assert env_key not in everything and marked not in everything


def test_redaction_comes_before_the_cap_so_a_cut_secret_does_not_leak():
    secret = "cut-here-secret-0123456789"
    mark_secret(value=secret)
    output = "A" * 60 + secret + "B" * 60
    # a limit at which cutting first would keep the start of the secret
    limit = next(n for n in range(70, 200) if secret[:8] in cap(output, n)[0])
    agent = make_agent(
        tool_call("long"),
        text("ok"),
        plugins=[toolset_plugin(tool("long", lambda a, c: output, max_result_chars=limit))],
    )
    agent.chat("go")
    (result,) = results(agent.client.last_request.messages)
    assert "result truncated" in result and secret[:4] not in result.replace("A", "")


# --- unencodable text -------------------------------------------------------------------------


class Broken:
    """Tools that return text UTF-8 cannot carry."""

    @hookimpl
    def hermes_register_toolsets(self, register: Any) -> None:
        register(
            Toolset(
                name="broken",
                description="bad text",
                tools=[
                    tool("bytes", lambda a, c: "name=caf\udce9 half=\ud800 pair=\ud83d\ude00"),
                    # encoding fails on a lone surrogate: the handler gets clean arguments
                    tool("echo", lambda a, c: f"got {a.get('q', '').encode().decode()}", STR_ARG),
                ],
            )
        )


def test_unencodable_tool_results_keep_the_session_usable_with_the_openai_sdk(tmp_path: Path):
    db = tmp_path / "state.db"
    with FakeLLM() as fake:
        fake.add(
            {
                "calls": [
                    {"name": "bytes", "arguments": {}},
                    # the model escapes a lone surrogate inside its JSON arguments
                    {"name": "echo", "arguments": '{"q": "x\\ud800y"}'},
                ]
            },
            "first answer",
            "second answer",
            "after resume",
        )

        def agent(session_id: str | None = None) -> Agent:
            return Agent.from_config(
                provider="custom",
                base_url=fake.openai_base_url,
                model="m",
                plugins=plugin_manager(["openai", Broken()]),
                toolsets=["broken"],
                config={},
                session_store=SQLiteSessionStore(db),
                session_id=session_id,
            )

        with agent() as first:
            assert first.chat("go") == "first answer"
            assert first.chat("again") == "second answer"
            session_id = first.session_id
        with agent(session_id) as resumed:
            assert resumed.chat("and now?") == "after resume"
        assert not fake.errors, fake.errors
        bodies = [json.loads(r.body) for r in fake.model_requests]
    assert len(bodies) == 4
    tool_messages = [m for m in bodies[1]["messages"] if m["role"] == "tool"]
    assert [m["content"] for m in tool_messages] == [
        "name=caf\ufffd half=\ufffd pair=\U0001f600",
        "got x\ufffdy",
    ]
    assert bodies[3]["messages"][: len(bodies[2]["messages"])] == bodies[2]["messages"]
    stored = SQLiteSessionStore(db).get_messages(session_id)
    assert encodable(stored)
    assert_valid_transcript(stored)
    assert [m["role"] for m in stored].count("user") == 3


def test_unencodable_model_output_and_user_text_are_cleaned_before_the_store(tmp_path: Path):
    store = SQLiteSessionStore(tmp_path / "state.db")
    agent = make_agent(
        Turn(text="thinking \udcff", calls=[Call("echo", '{"q": "a\ud800"}')]),
        text("done \ud800"),
        text("again"),
        plugins=[Broken()],
        session_store=store,
    )
    assert agent.chat("user \udcfe text") == "done \ufffd"
    assert agent.chat("more") == "again"
    for request in agent.client.requests:
        assert encodable(request.messages)
        assert_request_valid(request)
    stored = store.get_messages(agent.session_id)
    assert encodable(stored) and stored[0]["content"] == "user \ufffd text"
    assert stored[1]["tool_calls"][0]["function"]["arguments"] == '{"q": "a\ufffd"}'
    assert results(stored) == ["got a\ufffd"]


# --- malformed calls --------------------------------------------------------------------------


def test_empty_and_unknown_tool_names_are_explained_in_the_next_request():
    agent = make_agent(
        tool_calls(("", {}), ("no_such_tool", {"a": 1}), ("bad name!", {})),
        text("sorry"),
        plugins=[toolset_plugin(tool("echo", lambda a, c: "e", STR_ARG))],
    )
    assert agent.chat("go") == "sorry"
    request = agent.client.last_request
    assert_request_valid(request)
    echoed = [c["function"]["name"] for c in request.messages[1]["tool_calls"]]
    assert echoed == [PLACEHOLDER_NAME, "no_such_tool", PLACEHOLDER_NAME]
    empty, unknown, bad = results(request.messages)
    assert empty == (
        "Error: this tool call has no tool name. Call a tool by its exact name. "
        "Available tools: echo."
    )
    assert unknown == "Error: unknown tool 'no_such_tool'. Available tools: echo."
    assert bad == "Error: unknown tool 'bad name!'. Available tools: echo."
    stored = agent.session_store.get_messages(agent.session_id)
    assert_valid_transcript(stored)
    assert len(results(stored)) == 3


def test_calls_without_ids_or_with_repeated_ids_are_each_answered():
    seen: list[str] = []
    agent = make_agent(
        tool_calls(Call("echo", {"q": "1"}, id="dup"), Call("echo", {"q": "2"}, id="dup")),
        text("ok"),
        plugins=[toolset_plugin(tool("echo", lambda a, c: seen.append(a["q"]) or a["q"], STR_ARG))],
    )
    agent.chat("go")
    request = agent.client.last_request
    assert_request_valid(request)
    ids = [c["id"] for c in request.messages[1]["tool_calls"]]
    assert ids[0] == "dup" and ids[1] != "dup"
    assert results(request.messages) == ["1", "2"] and sorted(seen) == ["1", "2"]


def test_several_invalid_calls_in_one_response_get_another_step():
    agent = make_agent(
        tool_calls(("nope", {}), ("", {}), ("echo", "{broken"), ("echo", {"q": 5})),
        text("fixed it"),
        plugins=[toolset_plugin(tool("echo", lambda a, c: "e", STR_ARG))],
    )
    result = agent.run_conversation("go")
    assert result["exit_reason"] == "completed" and result["final_response"] == "fixed it"
    assert len(results(agent.client.last_request.messages)) == 4
    assert all(r.startswith("Error: ") for r in results(agent.messages))


def test_only_steps_of_nothing_but_invalid_calls_count_towards_the_limit():
    echo = tool("echo", lambda a, c: "e", STR_ARG)
    mixed = tool_calls(("nope", {}), ("echo", {"q": "fine"}))
    agent = make_agent(
        tool_call("nope"),
        tool_call("nope"),
        mixed,
        tool_call("nope"),
        tool_call("nope"),
        text("done"),
        plugins=[toolset_plugin(echo)],
    )
    assert agent.run_conversation("go")["exit_reason"] == "completed"

    agent = make_agent(
        *[tool_calls(("nope", {}), ("nada", {})) for _ in range(4)], plugins=[toolset_plugin(echo)]
    )
    result = agent.run_conversation("go")
    assert result["exit_reason"] == "invalid_tool_calls" and result["api_calls"] == 3
    assert_valid_transcript(agent.messages)


# --- timeouts and interrupts ------------------------------------------------------------------


def sleeper(seconds: float, finished: list[str]) -> Any:
    def handler(args: dict[str, Any], ctx: Any) -> str:
        time.sleep(seconds)
        finished.append("sync")
        return "slept"

    return handler


def test_a_handler_that_runs_too_long_is_answered_with_a_timeout_and_the_loop_goes_on():
    finished: list[str] = []
    cancelled: list[bool] = []

    async def async_sleeper(args: dict[str, Any], ctx: Any) -> str:
        try:
            await asyncio.sleep(30)
        except asyncio.CancelledError:
            cancelled.append(True)
            raise
        return "never"

    plugins = [
        toolset_plugin(
            tool("slow", sleeper(5.0, finished)),
            tool("aslow", async_sleeper),
            tool("quick", lambda a, c: "q"),
        )
    ]
    agent = make_agent(
        tool_call("slow"),
        tool_call("aslow"),
        tool_call("quick"),
        text("carried on"),
        plugins=plugins,
        config={"tools": {"timeout": 0.2}},
    )
    started = time.monotonic()
    result = agent.run_conversation("go")
    elapsed = time.monotonic() - started
    assert result["final_response"] == "carried on"
    slow, aslow, quick = results(agent.messages)
    assert slow.startswith("Error: tool 'slow' did not finish within 0.2 seconds (tools.timeout)")
    assert aslow.startswith("Error: tool 'aslow' did not finish within 0.2 seconds")
    assert quick == "q"
    assert elapsed < 3.0, elapsed  # the 5 s handler was not waited for
    assert wait_until(lambda: cancelled == [True])  # cancelled on the event loop, soon after
    assert finished == []
    assert_valid_transcript(agent.messages)


def test_time_spent_waiting_for_approval_does_not_count_and_timeouts_can_be_set_per_tool():
    def asks(args: dict[str, Any], ctx: Any) -> str:
        return "approved" if ctx.approve("deploy", "deploys") else "denied"

    def slow_user(request: ApprovalRequest) -> str:
        time.sleep(0.5)
        return "once"

    finished: list[str] = []
    plugins = [toolset_plugin(tool("asks", asks), tool("slow", sleeper(0.4, finished)))]
    agent = make_agent(
        tool_call("asks"),
        tool_call("slow"),
        text("ok"),
        plugins=plugins,
        approval_callback=slow_user,
        config={"tools": {"timeout": 0.2, "timeouts": {"slow": 0}}},
    )
    agent.chat("go")
    assert results(agent.messages) == ["approved", "slept"]

    agent = make_agent(
        tool_call("slow"),
        text("ok"),
        plugins=plugins,
        config={"tools": {"timeout": 0, "timeouts": {"slow": 0.1}}},
    )
    agent.chat("go")
    (timed_out,) = results(agent.messages)
    assert timed_out.startswith(
        "Error: tool 'slow' did not finish within 0.1 seconds (tools.timeouts.slow)"
    )


def test_invalid_timeout_settings_are_configuration_errors():
    with pytest.raises(ConfigError, match="tools.timeout: expected a number"):
        make_agent(config={"tools": {"timeout": "soon"}})
    with pytest.raises(ConfigError, match="tools.timeouts.slow: expected a number"):
        make_agent(config={"tools": {"timeouts": {"slow": -1}}})


def interrupt_when(ready: Any, agent: Agent) -> list[float]:
    """Interrupt ``agent`` once ``ready()`` returns; the list receives the time it did."""
    when: list[float] = []

    def go() -> None:
        ready()
        when.append(time.monotonic())
        agent.interrupt()

    threading.Thread(target=go, daemon=True).start()
    return when


def test_an_interrupt_during_a_long_handler_ends_the_turn_at_once(tmp_path: Path):
    finished: list[str] = []
    started_handler = threading.Event()

    def long(args: dict[str, Any], ctx: Any) -> str:
        started_handler.set()
        time.sleep(30)
        finished.append("long")
        return "never seen"

    store = SQLiteSessionStore(tmp_path / "state.db")
    agent = make_agent(
        tool_call("long"),
        text("unused"),
        plugins=[toolset_plugin(tool("long", long))],
        session_store=store,
    )
    interrupted_at = interrupt_when(lambda: started_handler.wait(5), agent)
    result = agent.run_conversation("go")
    elapsed = time.monotonic() - interrupted_at[0]
    assert result["interrupted"] and elapsed < 0.8, elapsed
    assert results(agent.messages) == [
        "Error: interrupted by the user while this tool was running."
    ]
    stored = store.get_messages(agent.session_id)
    assert_valid_transcript(stored)
    assert results(stored) == results(agent.messages) and finished == []


# --- resume after a crash ---------------------------------------------------------------------


def crashed_session(store: SQLiteSessionStore, answered: int) -> str:
    """A session as a process killed during a tool batch leaves it: two calls, ``answered`` of
    them with a result."""
    session_id = "session_crashed"
    store.create_session(SessionInfo(id=session_id, source="cli", started_at=time.time()))
    store.append_message(session_id, {"role": "user", "content": "run both"})
    calls = [
        {"id": f"c{i}", "type": "function", "function": {"name": "echo", "arguments": "{}"}}
        for i in (1, 2)
    ]
    store.append_message(session_id, {"role": "assistant", "content": None, "tool_calls": calls})
    for i in range(1, answered + 1):
        store.append_message(session_id, {"role": "tool", "tool_call_id": f"c{i}", "content": "r"})
    return session_id


@pytest.mark.parametrize("answered", [0, 1])
def test_resume_answers_calls_a_crash_left_open_once_in_the_store(tmp_path: Path, answered: int):
    db = tmp_path / "state.db"
    session_id = crashed_session(SQLiteSessionStore(db), answered)
    for turn in ("continue", "and again"):
        agent = make_agent(
            text("resumed"),
            plugins=[toolset_plugin(tool("echo", lambda a, c: "e"))],
            session_store=SQLiteSessionStore(db),
            session_id=session_id,
        )
        assert agent.chat(turn) == "resumed"
        assert_request_valid(agent.client.last_request)
        agent.close()
        stored = SQLiteSessionStore(db).get_messages(session_id)
        assert_valid_transcript(stored)
        tool_results = [m for m in stored if m["role"] == "tool"]
        assert [m["tool_call_id"] for m in tool_results] == ["c1", "c2"]
        synthetic = [m for m in tool_results if m["content"] == INTERRUPTED_RESULT]
        assert len(synthetic) == 2 - answered
        assert [m["role"] for m in stored[:3]] == ["user", "assistant", "tool"]


def test_an_interrupt_during_a_parallel_batch_answers_every_call_and_signals_handlers():
    signalled: list[str] = []
    both_started = threading.Barrier(3)

    def cooperative(args: dict[str, Any], ctx: Any) -> str:
        both_started.wait(5)
        if ctx.cancel_event.wait(30):
            signalled.append("cooperative")
        return "stopped early"

    def stubborn(args: dict[str, Any], ctx: Any) -> str:
        both_started.wait(5)
        time.sleep(30)
        return "never seen"

    agent = make_agent(
        tool_calls(("cooperative", {}), ("stubborn", {})),
        text("unused"),
        plugins=[toolset_plugin(tool("cooperative", cooperative), tool("stubborn", stubborn))],
    )
    interrupted_at = interrupt_when(lambda: both_started.wait(5), agent)
    result = agent.run_conversation("go")
    elapsed = time.monotonic() - interrupted_at[0]
    assert result["interrupted"] and elapsed < 0.8, elapsed
    assert (
        results(agent.messages)
        == ["Error: interrupted by the user while this tool was running."] * 2
    )
    assert signalled == ["cooperative"]
    assert_valid_transcript(agent.messages)


def test_a_session_stored_with_unencodable_text_resumes_with_the_openai_sdk(tmp_path: Path):
    db = tmp_path / "state.db"
    store = SQLiteSessionStore(db)
    session_id = crashed_session(store, answered=0)
    store.append_message(
        session_id, {"role": "tool", "tool_call_id": "c1", "content": "old \udcff text"}
    )
    store.append_message(session_id, {"role": "tool", "tool_call_id": "c2", "content": "fine"})
    store.append_message(session_id, {"role": "assistant", "content": "done \ud800"})
    with FakeLLM("resumed") as fake:
        agent = Agent.from_config(
            provider="custom",
            base_url=fake.openai_base_url,
            model="m",
            plugins=plugin_manager(["openai", Broken()]),
            toolsets=["broken"],
            config={},
            session_store=SQLiteSessionStore(db),
            session_id=session_id,
        )
        with agent:
            assert agent.chat("still there?") == "resumed"
        (request,) = fake.model_requests
    sent = json.loads(request.body)["messages"]
    assert [m.get("content") for m in sent if m["role"] == "tool"] == ["old \ufffd text", "fine"]


def test_a_handler_stuck_past_its_timeout_delays_no_later_call():
    release = threading.Event()
    threads: list[str] = []

    def stuck(args: dict[str, Any], ctx: Any) -> str:
        release.wait(30)  # ignores its cancel event, as a badly written handler would
        return "late"

    def quick(args: dict[str, Any], ctx: Any) -> str:
        threads.append(threading.current_thread().name)
        return "q"

    agent = make_agent(
        tool_call("stuck"),
        *[tool_call("quick") for _ in range(3)],
        text("done"),
        plugins=[toolset_plugin(tool("stuck", stuck), tool("quick", quick))],
        config={"tools": {"timeout": 0.2}},
    )
    started = time.monotonic()
    try:
        assert agent.chat("go") == "done"
        elapsed = time.monotonic() - started
    finally:
        release.set()
    answers = results(agent.messages)
    assert "did not finish within 0.2 seconds" in answers[0] and answers[1:] == ["q", "q", "q"]
    assert elapsed < 5  # the stuck thread still runs; the quick calls ran beside it
    assert len(threads) == 3 and threading.current_thread().name not in threads


def test_a_tool_declares_its_own_limit_and_the_user_overrides_it():
    finished: list[str] = []
    own = tool("own", sleeper(0.5, finished), timeout=0)  # bounds its own work: no host limit
    short = tool("short", sleeper(0.5, finished), timeout=0.1)
    agent = make_agent(
        tool_call("own"),
        tool_call("short"),
        text("ok"),
        plugins=[toolset_plugin(own, short)],
        config={"tools": {"timeout": 0.2}},
    )
    agent.chat("go")
    first, second = results(agent.messages)
    assert first == "slept"
    assert "within 0.1 seconds (the tool's own limit; tools.timeouts.short changes it)" in second
    agent = make_agent(
        tool_call("own"),
        text("ok"),
        plugins=[toolset_plugin(own)],
        config={"tools": {"timeouts": {"own": 0.1}}},
    )
    agent.chat("go")
    assert "within 0.1 seconds (tools.timeouts.own)" in results(agent.messages)[0]


def test_the_terminal_is_not_cut_at_the_host_default():
    from hermes_toolset_terminal import PROCESS_TOOL, TERMINAL_TOOL

    assert TERMINAL_TOOL.timeout == 0 and PROCESS_TOOL.timeout == 0
    agent = make_agent(
        tool_call("terminal", {"command": "sleep 0.5; echo done"}),
        text("ok"),
        plugins=["terminal", "local"],
        config={"tools": {"timeout": 0.2}},
    )
    agent.chat("go")
    assert results(agent.messages)[0].startswith("done")
