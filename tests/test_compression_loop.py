"""Context compression in the agent loop: a long scripted conversation driven past the threshold
again and again, overflow errors, the context window, child sessions, ``/compress`` and
``hermes sessions compress``."""

from __future__ import annotations

import dataclasses
import json
import types
from typing import Any

import pytest

from hermes_core.cli.slash import handle_slash as _slash
from hermes_core.context.windows import DEFAULT_CONTEXT_WINDOW
from hermes_core.loop.agent import Agent
from hermes_core.session_store import MemorySessionStore, SQLiteSessionStore
from hermes_core.testing import (
    Call,
    ScriptedModel,
    Turn,
    assert_request_valid,
    make_agent,
    plugin_manager,
    text,
    tool_call,
)
from hermes_hookspecs import (
    CONTEXT_SUMMARY_FLAG,
    CONTEXT_SUMMARY_MARKER,
    ContextEngine,
    ContextOverflowError,
    HermesError,
    ModelRequest,
    PromptLayer,
    Provider,
    RateLimitError,
    SessionInfo,
    Tool,
    Toolset,
    Usage,
    hookimpl,
    is_context_summary,
)

SUMMARY = "## Goal\nAudit the modules.\n## Done\nRead the early modules.\n## In progress\nThe rest."


def is_summary_request(request: ModelRequest) -> bool:
    first = request.messages[0]
    return first["role"] == "system" and "compact the middle of a conversation" in str(
        first["content"]
    )


class Files:
    """A toolset plugin whose tool returns a long, distinct text for every path."""

    @hookimpl
    def hermes_register_toolsets(self, register):
        register(
            Toolset(
                name="files",
                tools=[
                    Tool(
                        name="read_file",
                        description="Read a file",
                        parameters={
                            "type": "object",
                            "properties": {"path": {"type": "string"}},
                            "required": ["path"],
                        },
                        handler=lambda args, ctx: f"# {args['path']}\n" + "data line\n" * 240,
                    )
                ],
            )
        )


class PromptCounter:
    """A prompt layer that counts how often the system prompt is built."""

    def __init__(self) -> None:
        self.builds = 0

    @hookimpl
    def hermes_prompt_layers(self, context):
        self.builds += 1
        return PromptLayer(name="identity", text="You audit code.")


class Script:
    """The model: answers summary requests with a summary, and plays ``steps`` for the rest,
    remembering each main request with the step that answered it."""

    def __init__(self, *steps: Any) -> None:
        self.steps = list(steps)
        self.main: list[tuple[ModelRequest, Any]] = []
        self.summaries: list[ModelRequest] = []

    def __call__(self, request: ModelRequest) -> Any:
        if is_summary_request(request):
            self.summaries.append(request)
            return SUMMARY
        step = self.steps.pop(0)
        self.main.append((request, step))
        return step


def audit_turn(turn: int, steps: int = 3) -> list[Any]:
    """One user turn: ``steps`` batches of two parallel reads, then an answer."""
    script: list[Any] = []
    for step in range(steps):
        script.append(
            Turn(
                calls=[
                    Call("read_file", {"path": f"mod{turn}/a{step}.py"}, id=f"t{turn}s{step}a"),
                    Call("read_file", {"path": f"mod{turn}/b{step}.py"}, id=f"t{turn}s{step}b"),
                ]
            )
        )
    script.append(text(f"module {turn} looks fine"))
    return script


def long_agent(store, script: Script, counter: PromptCounter | None = None, **config) -> Agent:
    settings = {"model": {"context_length": 6_000}, **config}
    plugins: list[Any] = ["compressor", Files()]
    if counter is not None:
        plugins.append(counter)
    statuses: list[str] = []
    agent = make_agent(
        model=ScriptedModel(fn=script),
        plugins=plugins,
        config=settings,
        session_store=store,
        status_callback=statuses.append,
    )
    agent.statuses = statuses
    return agent


def lineage(store, session_id: str) -> list[str]:
    """Session ids from ``session_id`` up to the root."""
    ids = []
    session = store.get_session(session_id)
    while session is not None:
        ids.append(session.id)
        session = session.parent_session_id and store.get_session(session.parent_session_id)
    return ids


# --- the long conversation ----------------------------------------------------------------------


def test_a_long_conversation_is_compressed_again_and_again(tmp_path):
    store = SQLiteSessionStore(tmp_path / "state.db")
    turns = 5
    script = Script(*[step for turn in range(turns) for step in audit_turn(turn)])
    counter = PromptCounter()
    agent = long_agent(store, script, counter)
    first_session = agent.session_id

    for turn in range(turns):
        request_text = f"Audit module {turn}, file by file."
        start = len(script.main)
        assert agent.chat(request_text) == f"module {turn} looks fine"
        open_calls: list[str] = []
        for request, step in script.main[start:]:
            assert_request_valid(request)
            users = [m["content"] for m in request.messages if m["role"] == "user"]
            assert any(u.endswith(request_text) for u in users), "the request was lost"
            if open_calls:  # the tool chain still open arrives whole, in call order
                chain = request.messages[-1 - len(open_calls) :]
                assert [c["id"] for c in chain[0]["tool_calls"]] == open_calls
                assert [m["tool_call_id"] for m in chain[1:]] == open_calls
            open_calls = [call.id for call in step.calls] if isinstance(step, Turn) else []

    # Compressed several times, each time into a child session of the one before.
    chain = lineage(store, agent.session_id)
    compressions = len(chain) - 1
    assert compressions >= 3, agent.statuses
    assert chain[-1] == first_session
    assert store.newest_in_lineage(first_session) == agent.session_id
    for parent in chain[1:]:
        assert store.get_session(parent).end_reason == "compressed"
    assert sum("context compressed" in s for s in agent.statuses) == compressions
    # The system prompt was built once for the session and once per compression.
    assert counter.builds == 1 + compressions
    assert store.get_session(agent.session_id).system_prompt == agent.system_prompt
    # Every summary after the first updates the one before.
    assert len(script.summaries) >= 2
    for request in script.summaries[1:]:
        assert "<earlier-summary>\n## Goal\nAudit the modules." in request.messages[1]["content"]
    # The newest child holds exactly the transcript the agent works with.
    assert store.get_messages(agent.session_id) == agent.messages
    agent.close()

    # Resuming the first id continues in the newest child, summary included.
    script.steps.append(text("resumed"))
    again = make_agent(
        model=ScriptedModel(fn=script),
        plugins=["compressor", Files()],
        config={"model": {"context_length": 6_000}},
        session_store=store,
        session_id=first_session,
    )
    assert again.session_id == agent.session_id
    assert again.chat("Anything left?") == "resumed"
    sent = script.main[-1][0].messages
    assert any("[CONTEXT SUMMARY - REFERENCE ONLY]" in str(m["content"]) for m in sent)
    again.close()
    store.close()


# --- overflow -------------------------------------------------------------------------------------


def overflow_agent(*steps: Any, engine: str = "compressor") -> Agent:
    script = Script(*steps)
    agent = make_agent(
        model=ScriptedModel(fn=script),
        plugins=["compressor", Files()],
        config={"model": {"context_length": 200_000}},
    )
    agent.script = script
    return agent


def test_an_overflow_compresses_and_retries_once():
    history = [step for turn in range(2) for step in audit_turn(turn)]
    agent = overflow_agent(*history, ContextOverflowError("prompt is too long"), text("fits now"))
    agent.chat("Audit module 0, file by file.")
    agent.chat("Audit module 1, file by file.")
    first = agent.session_id
    result = agent.run_conversation("And the summary?")
    assert result["final_response"] == "fits now" and result["completed"]
    assert result["session_id"] != first  # compressed into a child session
    main = [r for r in agent.client.requests if not is_summary_request(r)]
    refused, retried = main[-2:]
    assert_request_valid(retried)
    assert size(retried) < size(refused) / 3
    assert retried.messages[-1] == {"role": "user", "content": "And the summary?"}
    # The provider proved the window smaller than assumed: the engine now works with less.
    assert agent.engine.context_window < size(refused) // 4


def size(request: ModelRequest) -> int:
    return sum(len(str(m.get("content") or "")) for m in request.messages)


def test_a_second_overflow_is_an_error():
    agent = overflow_agent(
        *audit_turn(0),
        ContextOverflowError("prompt is too long"),
        ContextOverflowError("still too long"),
    )
    agent.chat("Audit module 0, file by file.")
    result = agent.run_conversation("again")
    assert result["exit_reason"] == "provider_error"
    assert "still too long" in result["error"]


def test_the_window_an_overflow_error_states_is_used():
    agent = overflow_agent(
        *audit_turn(0),
        ContextOverflowError("maximum context length is 4,096 tokens; you sent 7000"),
        text("ok"),
    )
    agent.chat("Audit module 0, file by file.")
    assert agent.chat("next") == "ok"
    assert agent.engine.context_window == 4_096


def test_an_overflow_without_an_engine_is_an_error():
    agent = make_agent(ContextOverflowError("prompt is too long"))
    assert agent.engine is None
    result = agent.run_conversation("hi")
    assert result["exit_reason"] == "provider_error" and "too long" in result["error"]


# --- the context window ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "model_config, window",
    [
        ({"context_length": 32_000}, 32_000),
        ({"default": "claude-sonnet-4-5"}, 200_000),
        ({"default": "openrouter/openai/gpt-4o-mini"}, 128_000),
        ({"default": "gpt-4.1"}, 1_047_576),
        ({"default": "gpt-4.1", "context_length": 50_000}, 50_000),
        ({"default": "some-local-model"}, DEFAULT_CONTEXT_WINDOW),
        ({}, DEFAULT_CONTEXT_WINDOW),
    ],
)
def test_the_engine_gets_the_models_window(model_config, window):
    agent = make_agent(plugins=["compressor"], config={"model": model_config})
    assert agent.engine.context_window == window
    assert agent.engine.status()["threshold_tokens"] == window // 2


def test_the_window_follows_a_fallback_model():
    primary = ScriptedModel(RateLimitError("slow down"))
    fallback = ScriptedModel(text("from the fallback"))

    def providers(register):
        register(Provider("first", "chat_completions", lambda s: primary, default_model="x"))
        register(Provider("second", "chat_completions", lambda s: fallback, default_model="y"))

    plugin = types.ModuleType("two_providers")
    plugin.hermes_register_providers = hookimpl(providers)
    agent = Agent.from_config(
        plugins=plugin_manager(["compressor", plugin]),
        config={
            "model": {"provider": "first", "default": "gpt-4o", "api_key": "k"},
            "fallback_providers": [
                {"provider": "second", "model": "claude-opus-4", "api_key": "k"}
            ],
            "agent": {"api_max_retries": 0},
        },
    )
    assert agent.engine.context_window == 128_000
    assert agent.chat("hi") == "from the fallback"
    assert agent.engine.context_window == 200_000
    agent.close()


# --- choosing the engine --------------------------------------------------------------------------


def test_the_compressor_is_the_default_when_installed():
    agent = Agent.from_config(client=ScriptedModel(), config={"toolsets": []})
    try:
        assert agent.engine is not None and agent.engine.name == "compressor"
        assert agent.engine.summarize is not None and agent.engine.notify is not None
    finally:
        agent.close()


def test_an_unknown_engine_is_an_error_naming_the_installed_ones():
    with pytest.raises(HermesError, match=r"unknown context engine 'nope' \(installed: .*"):
        make_agent(plugins=["compressor", "keep_last"], config={"context": {"engine": "nope"}})
    with pytest.raises(HermesError, match="compressor, keep-last"):
        make_agent(plugins=["compressor", "keep_last"], config={"context": {"engine": "nope"}})


# --- engines that misbehave -----------------------------------------------------------------------


def engine_plugin(engine_class: type[ContextEngine]) -> types.ModuleType:
    plugin = types.ModuleType(f"engine_{engine_class.name}")
    plugin.hermes_register_context_engines = hookimpl(lambda register: register(engine_class))
    return plugin


class Broken(ContextEngine):
    name = "broken"

    def should_compress(self, prompt_tokens=None):
        return True

    def compress(self, messages, current_tokens=None, focus=None):
        raise RuntimeError("engine bug")


class Scrambler(ContextEngine):
    """Returns results before their calls, a system message, and drops the request."""

    name = "scrambler"

    def should_compress(self, prompt_tokens=None):
        return True

    def compress(self, messages, current_tokens=None, focus=None):
        results = [m for m in messages if m["role"] == "tool"]
        others = [m for m in messages if m["role"] not in ("tool", "user")]
        return [{"role": "system", "content": "mine"}, *results, *others]


def test_a_failing_engine_is_reported_and_the_turn_goes_on():
    statuses: list[str] = []
    agent = make_agent(
        tool_call("read_file", {"path": "a"}),
        text("done"),
        plugins=[engine_plugin(Broken), Files()],
        config={"context": {"engine": "broken"}},
        status_callback=statuses.append,
    )
    first = agent.session_id
    assert agent.chat("go") == "done"
    assert agent.session_id == first
    assert any("'broken' failed (RuntimeError: engine bug)" in s for s in statuses)
    with pytest.raises(HermesError, match="engine bug"):
        agent.compress()


def test_whatever_an_engine_returns_is_repaired_before_it_is_sent():
    agent = make_agent(
        tool_call("read_file", {"path": "a"}),
        tool_call("read_file", {"path": "b"}),
        text("done"),
        plugins=[engine_plugin(Scrambler), Files()],
        config={"context": {"engine": "scrambler"}},
    )
    assert agent.chat("read two files") == "done"
    for request in agent.client.requests:
        assert_request_valid(request)
        assert request.messages[0] == {"role": "user", "content": "read two files"}
    assert all(m["role"] != "system" for m in agent.messages)


# --- asking for it: /compress and `hermes sessions compress` -------------------------------------


def test_slash_compress_with_a_focus(tmp_path, capsys):
    store = SQLiteSessionStore(tmp_path / "state.db")
    script = Script(*[step for turn in range(3) for step in audit_turn(turn)])
    agent = long_agent(store, script, **{"model": {"context_length": 1_000_000}})
    for turn in range(3):
        agent.chat(f"Audit module {turn}, file by file.")
    parent = agent.session_id
    assert _slash("/compress the module 1 findings", agent, store) is False
    printed = capsys.readouterr().out
    assert f"continues {parent}" in printed and agent.session_id in printed
    assert store.get_session(agent.session_id).parent_session_id == parent
    [summary_request] = script.summaries
    assert "everything about: the module 1 findings" in summary_request.messages[1]["content"]
    assert _slash("/context", agent, store) is False
    rows = dict(line.split(None, 1) for line in capsys.readouterr().out.strip().splitlines())
    assert rows["engine"].strip() == "compressor" and rows["compressions"].strip() == "1"
    agent.close()
    store.close()


def test_slash_compress_reports_once(tmp_path, capsys):
    from hermes_core.cli.display import Display

    store = SQLiteSessionStore(tmp_path / "state.db")
    display = Display(interactive=True, stream=False)
    script = Script(*[step for turn in range(3) for step in audit_turn(turn)])
    agent = make_agent(
        model=ScriptedModel(fn=script),
        plugins=["compressor", Files()],
        config={"model": {"context_length": 1_000_000}},
        session_store=store,
        status_callback=display.status,
    )
    for turn in range(3):
        agent.chat(f"Audit module {turn}, file by file.")
    capsys.readouterr()
    assert _slash("/compress", agent, store, display) is False
    shown = capsys.readouterr()
    lines = [line for line in (shown.out + shown.err).splitlines() if "compress" in line]
    assert len(lines) == 1, lines
    assert agent.session_id in lines[0]
    agent.close()
    store.close()


def test_slash_compress_without_an_engine(capsys):
    agent = make_agent(text("hi"))
    agent.chat("hello")
    _slash("/compress", agent, None)
    assert "cannot compress: no context engine is active" in capsys.readouterr().out


def test_hermes_sessions_compress(hermes_cli, hermes_home):
    script = Script(*[text(f"answer {n}: " + "detail " * 300) for n in range(6)])
    model = ScriptedModel(fn=script)
    (hermes_home / "config.yaml").write_text(
        "model:\n  provider: scripted\ncompression:\n  protect_last_n: 2\n"
    )
    for turn in range(6):
        ran = hermes_cli(
            "--plugins", "compressor", "chat", "-q", f"question {turn}", "--json",
            *(("--continue",) if turn else ()),
            model=model,
        )  # fmt: skip
        assert ran.exit_code == 0, ran.stderr
    session_id = json.loads(ran.stdout)["session_id"]

    done = hermes_cli(
        "--plugins", "compressor", "sessions", "compress", session_id, "--focus", "question 4",
        "--json", model=model,
    )  # fmt: skip
    assert done.exit_code == 0, done.stderr
    figures = json.loads(done.stdout)
    assert figures["parent_session_id"] == session_id
    assert figures["messages_after"] < figures["messages_before"] == 12
    assert "everything about: question 4" in script.summaries[-1].messages[1]["content"]

    shown = hermes_cli("--plugins", "", "sessions", "show", figures["session_id"])
    assert f"continues {session_id}" in shown.stdout
    assert "CONTEXT SUMMARY" in shown.stdout
    # The next chat with --continue picks up the child.
    script.steps.append(text("still here"))
    more = hermes_cli(
        "--plugins", "compressor", "chat", "-q", "more", "--continue", "--json", model=model
    )
    assert json.loads(more.stdout)["session_id"] == figures["session_id"]
    missing = hermes_cli("--plugins", "compressor", "sessions", "compress", "session_nope")
    assert missing.exit_code == 1 and "no session 'session_nope'" in missing.stderr


def test_the_child_keeps_the_session_metadata(tmp_path):
    store = SQLiteSessionStore(tmp_path / "state.db")
    script = Script(*audit_turn(0))
    agent = long_agent(
        store,
        script,
        model={"context_length": 1_000_000},
        compression={"protect_last_n": 2},
    )
    agent.run_conversation("Audit module 0", system_message="Be terse.")
    store.update_session(agent.session_id, todo=[{"id": "1", "content": "x", "status": "pending"}])
    parent = store.get_session(agent.session_id)
    agent.compress()
    child = store.get_session(agent.session_id)
    assert child.metadata["todo"] == parent.metadata["todo"]
    assert child.metadata["system_message"] == "Be terse."
    assert child.title == parent.title
    assert child.metadata["message_count"] == len(agent.messages)  # counted afresh
    assert "Be terse." in agent.system_prompt
    assert dataclasses.asdict(child)["parent_session_id"] == parent.id
    agent.close()
    store.close()


def test_a_reported_prompt_over_the_threshold_compresses_before_the_next_request():
    agent = make_agent(
        Turn(text="a", usage=Usage(input_tokens=900_000)),
        text("b"),
        plugins=["compressor"],
        config={"model": {"context_length": 1_000_000}},
    )
    agent.chat("one")
    assert agent.engine.status()["prompt_tokens"] == 900_000
    assert agent.engine.status()["compressions"] == 0
    agent.chat("two")  # 900k >= 500k: compressed before this request
    assert agent.engine.status()["compressions"] == 1


def test_nothing_to_compress_changes_nothing(capsys):
    agent = make_agent(text("a"), plugins=["compressor"])
    agent.chat("one")
    first = agent.session_id
    figures = agent.compress()
    assert figures["session_id"] == first and figures["messages_after"] == 2
    assert agent.session_id == first
    _slash("/compress", agent, None)
    assert "nothing to compress" in capsys.readouterr().out
    assert agent.session_id == first


class Interrupting(ContextEngine):
    """Keeps the last message; the user interrupts while it works: before its summary request
    or after the summary came back. Like many engines it swallows a failed summary."""

    name = "interrupting"
    automatic = True
    when = "before summary"
    interrupt: Any = None

    def should_compress(self, prompt_tokens=None):
        return self.automatic

    def compress(self, messages, current_tokens=None, focus=None):
        if self.when == "before summary":
            self.interrupt()
        try:
            self.summarize([{"role": "user", "content": "summarise"}], 100)
        except Exception:
            pass  # an engine's fallback must not swallow the interrupt
        if self.when == "after summary":
            self.interrupt()
        return messages[-1:]


def interrupting_agent(*turns: Any, when: str, automatic: bool) -> Agent:
    agent = make_agent(
        *turns,
        plugins=[engine_plugin(Interrupting), Files()],
        config={"context": {"engine": "interrupting"}},
    )
    agent.engine.when = when
    agent.engine.automatic = automatic
    agent.engine.interrupt = agent.interrupt
    return agent


@pytest.mark.parametrize("when", ["before summary", "after summary"])
def test_an_interrupt_while_the_loop_compresses_ends_the_turn_and_changes_nothing(when):
    agent = interrupting_agent(
        tool_call("read_file", {"path": "a"}),
        text("the summary"),
        text("done"),
        when=when,
        automatic=True,
    )
    first = agent.session_id
    result = agent.run_conversation("go")
    assert result["interrupted"] and result["final_response"] is None
    assert agent.session_id == first
    roles = [m["role"] for m in agent.messages]
    assert roles == ["user", "assistant", "tool"]  # the transcript the engine was given
    assert agent.session_store.get_messages(first) == agent.messages


@pytest.mark.parametrize("when", ["before summary", "after summary"])
def test_an_interrupt_during_compress_changes_nothing(when):
    agent = interrupting_agent(text("a"), text("the summary"), when=when, automatic=False)
    agent.chat("one")
    first = agent.session_id
    before = list(agent.messages)
    with pytest.raises(HermesError, match="compression interrupted; nothing changed"):
        agent.compress()
    assert agent.session_id == first and agent.messages == before
    assert agent.session_store.get_messages(first) == before


# --- the context-summary marker of the contract ----------------------------------------------


class SummaryKeeper(ContextEngine):
    """Another engine: keeps every context summary (recognised through the contract) and the
    last message, drops the rest."""

    name = "summary-keeper"

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus=None):
        return [m for m in messages[:-1] if is_context_summary(m)] + messages[-1:]


def test_a_summary_is_recognised_by_the_core_and_by_another_engine(tmp_path):
    store = SQLiteSessionStore(tmp_path / "state.db")
    script = Script(*[step for turn in range(3) for step in audit_turn(turn)])
    agent = long_agent(store, script)  # a small window: the compressor summarises
    for turn in range(3):
        agent.chat(f"Audit module {turn}, file by file.")
    [summary] = [m for m in agent.messages if is_context_summary(m)]
    assert summary[CONTEXT_SUMMARY_FLAG] is True
    assert str(summary["content"]).startswith(CONTEXT_SUMMARY_MARKER)
    session = agent.session_id
    agent.close()

    # The session goes on with another engine, which keeps the compressor's summary.
    again = make_agent(
        model=ScriptedModel(fn=script),
        plugins=[engine_plugin(SummaryKeeper), Files()],
        config={"context": {"engine": "summary-keeper"}},
        session_store=store,
        session_id=session,
    )
    again.compress()
    # The core does not take the summary for the user's request: the request the engine
    # dropped is put back after it (in the same message, as roles must alternate), and the
    # result is no longer marked as nothing but a summary.
    (first, last) = again.messages
    assert is_context_summary(first) and CONTEXT_SUMMARY_FLAG not in first
    assert first["content"].startswith(summary["content"])
    assert first["content"].endswith("Audit module 2, file by file.")
    assert last["content"] == "module 2 looks fine"
    again.close()
    store.close()


class LastOnly(ContextEngine):
    """Keeps only the last message."""

    name = "last-only"

    def should_compress(self, prompt_tokens=None):
        return False

    def compress(self, messages, current_tokens=None, focus=None):
        return messages[-1:]


def test_the_core_never_takes_a_flagged_summary_for_the_users_request():
    store = MemorySessionStore()
    store.create_session(SessionInfo(id="s1", started_at=1.0))
    for message in [
        {"role": "user", "content": "Fix the login bug."},
        {"role": "assistant", "content": "Which file?"},
        {
            "role": "user",
            "content": f"{CONTEXT_SUMMARY_MARKER}\nThe user wants the login bug fixed.",
            CONTEXT_SUMMARY_FLAG: True,
        },
        {"role": "assistant", "content": "Noted; looking at auth.py."},
    ]:
        store.append_message("s1", message)
    agent = make_agent(
        plugins=[engine_plugin(LastOnly)],
        config={"context": {"engine": "last-only"}},
        session_store=store,
        session_id="s1",
    )
    agent.compress()
    assert [m["content"] for m in agent.messages] == [
        "Fix the login bug.",
        "Noted; looking at auth.py.",
    ]
