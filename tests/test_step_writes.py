"""A step's session store writes go in one transaction: a turn costs a transaction per step,
not one per message, counter and title; a process killed mid-turn loses nothing that
completed, and what it wrote resumes."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hermes_core.session_store import MemorySessionStore, SessionStoreError, SQLiteSessionStore
from hermes_core.testing import make_agent, text, tool_call, tool_calls, toolset_plugin
from hermes_hookspecs import SessionInfo, Tool


class _Traced(SQLiteSessionStore):
    """A store whose connections report every statement they run."""

    statements: list[str]

    def _connect(self):  # type: ignore[no-untyped-def]
        conn = super()._connect()
        conn.set_trace_callback(self.statements.append)
        return conn


@pytest.fixture
def traced(tmp_path: Path):
    _Traced.statements = []
    with _Traced(tmp_path / "sessions.db") as store:
        yield store


def _writes(statements: list[str]) -> tuple[int, int]:
    """Transactions and statements written (reads outside a transaction left out)."""
    transactions = sum(s.startswith("BEGIN IMMEDIATE") for s in statements)
    written = [s for s in statements if not s.startswith("SELECT")]
    return transactions, len(written)


ECHO = Tool(
    name="echo",
    description="echo",
    parameters={"type": "object", "properties": {}},
    handler=lambda args, ctx: "echoed",
)


def test_a_one_message_turn_is_two_transactions(traced) -> None:
    agent = make_agent(text("one"), text("two"), session_store=traced)
    with agent:
        agent.chat("first")
        traced.statements.clear()
        agent.chat("second")
        # the user's message before the model call; the answer with the turn's usage (and the
        # call's usage record, which the spend caps read) after it
        assert _writes(traced.statements) == (2, 10)  # before: 4 transactions, 14 statements
    session = traced.get_session(agent.session_id)
    assert session is not None
    assert session.metadata["message_count"] == 4
    assert session.metadata["input_tokens"] > 0 and session.metadata["output_tokens"] > 0
    assert session.title == "first"
    assert [m["content"] for m in traced.get_messages(agent.session_id)] == [
        "first",
        "one",
        "second",
        "two",
    ]


def test_a_tool_step_is_one_transaction_per_step(traced) -> None:
    agent = make_agent(
        tool_call("echo", id="c1"),
        text("done"),
        session_store=traced,
        plugins=[toolset_plugin(ECHO, name="echo")],
        toolsets=["echo"],
    )
    with agent:
        agent.chat("first")
        traced.statements.clear()
        agent.client.add(tool_calls(("echo", {}), ("echo", {}), ("echo", {})), text("done"))
        agent.chat("again")
        # the user's message | the model's three calls | their three results | the answer
        # and the turn's usage (before: 8 transactions)
        assert _writes(traced.statements)[0] == 4
    stored = traced.get_messages(agent.session_id)
    assert [m["role"] for m in stored[4:]] == [
        "user",
        "assistant",
        "tool",
        "tool",
        "tool",
        "assistant",
    ]
    session = traced.get_session(agent.session_id)
    assert session is not None
    assert session.metadata["message_count"] == len(stored) == 10
    assert session.metadata["tool_call_count"] == 4


def test_a_batch_is_all_or_nothing(traced) -> None:
    traced.create_session(SessionInfo(id="s1"))
    with pytest.raises(SessionStoreError, match="no session 'nope'"):
        with traced.batch():
            traced.append_message("s1", {"role": "user", "content": "kept?"})
            traced.add_usage("s1", {"input_tokens": 3})
            traced.append_message("nope", {"role": "user", "content": "no such session"})
    assert traced.get_messages("s1") == []
    session = traced.get_session("s1")
    assert session is not None and session.metadata["message_count"] == 0
    assert session.metadata["input_tokens"] == 0
    with traced.batch():
        traced.append_message("s1", {"role": "user", "content": "kept"})
        with traced.batch():  # joins the outer one
            traced.add_usage("s1", {"input_tokens": 3})
        assert traced.get_messages("s1") == []  # not before the block ends
    assert traced.get_messages("s1") == [{"role": "user", "content": "kept"}]
    session = traced.get_session("s1")
    assert session is not None and session.metadata["input_tokens"] == 3
    assert session.title == "kept"


def test_a_store_without_batches_gets_the_same_writes() -> None:
    store = MemorySessionStore()
    agent = make_agent(text("one"), session_store=store)
    with agent:
        agent.chat("first")
    stored = store.get_messages(agent.session_id)
    assert [(m["role"], m["content"]) for m in stored] == [("user", "first"), ("assistant", "one")]


KILLED_TURN = textwrap.dedent(
    """
    import sys, time
    from hermes_core.session_store import SQLiteSessionStore
    from hermes_core.testing import make_agent, text, tool_call, tool_calls, toolset_plugin
    from hermes_hookspecs import Tool, Toolset, hookimpl

    def stuck(args, ctx):
        print("tool running", flush=True)
        time.sleep(600)

    class Stuck:
        @hookimpl
        def hermes_register_toolsets(self, register):
            register(Toolset(name="stuck", description="stuck", tools=[Tool(
                name="stuck", description="never returns",
                parameters={"type": "object", "properties": {}}, handler=stuck)]))

    store = SQLiteSessionStore(sys.argv[1])
    agent = make_agent(tool_call("stuck", id="c1", text="let me look"),
                       session_store=store, session_id="killed",
                       plugins=[Stuck()], toolsets=["stuck"])
    agent.chat("look it up")
    """
)


def test_a_process_killed_mid_turn_keeps_its_completed_steps(tmp_path: Path) -> None:
    db = tmp_path / "sessions.db"
    proc = subprocess.Popen(
        [sys.executable, "-c", KILLED_TURN, str(db)], stdout=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        assert proc.stdout.readline().strip() == "tool running"
    finally:
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=30)
        if proc.stdout is not None:
            proc.stdout.close()
    assert proc.returncode == -signal.SIGKILL
    with SQLiteSessionStore(db) as store:
        stored = store.get_messages("killed")
        # the user's message and the model's step are in; the tool's step never completed
        assert [m["role"] for m in stored] == ["user", "assistant"]
        assert stored[1]["tool_calls"][0]["id"] == "c1"
        session = store.get_session("killed")
        assert session is not None and session.metadata["message_count"] == 2
        agent = make_agent(text("resumed"), session_store=store, session_id="killed")
        with agent:
            assert agent.chat("still there?") == "resumed"
        roles = [m["role"] for m in store.get_messages("killed")]
        assert roles == ["user", "assistant", "tool", "user", "assistant"]
