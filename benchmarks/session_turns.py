"""The session store's writes per turn: transactions and statements (traced with SQLite's
trace callback) of a one-message turn and of a turn with one batch of three tool calls, an
agent on the test kit's scripted model; run as ``python benchmarks/sessions.py --only turns``."""

from __future__ import annotations

import tempfile
from pathlib import Path

from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import make_agent, text, tool_call, tool_calls, toolset_plugin
from hermes_hookspecs import Tool


class _Traced(SQLiteSessionStore):
    """A store whose connections append every statement they run to ``statements``."""

    statements: list[str] = []

    def _connect(self):  # type: ignore[no-untyped-def]
        conn = super()._connect()
        conn.set_trace_callback(self.statements.append)
        return conn


ECHO = Tool(
    name="echo",
    description="echo",
    parameters={"type": "object", "properties": {}},
    handler=lambda args, ctx: "echoed",
)


def _counted(statements: list[str]) -> str:
    transactions = sum(s.startswith("BEGIN IMMEDIATE") for s in statements)
    written = sum(not s.startswith("SELECT") for s in statements)
    reads = len(statements) - written
    return f"{transactions} transactions, {written} statements written, {reads} read"


def bench_turn_writes() -> None:
    """Print the store's writes of a one-message turn and of a three-call turn."""
    with tempfile.TemporaryDirectory() as home, _Traced(Path(home, "sessions.db")) as store:
        agent = make_agent(
            tool_call("echo"),
            text("done"),
            session_store=store,
            plugins=[toolset_plugin(ECHO, name="echo")],
            toolsets=["echo"],
        )
        with agent:
            agent.chat("first")  # the session's creation and title are not per turn
            agent.client.add(text("two"))
            store.statements.clear()
            agent.chat("second")
            one = _counted(store.statements)
            agent.client.add(tool_calls(("echo", {}), ("echo", {}), ("echo", {})), text("done"))
            store.statements.clear()
            agent.chat("third")
            calls = _counted(store.statements)
    print("session store writes per turn (an agent on a scripted model):")
    print(f"  one-message turn        {one}")
    print(f"  turn with 3 tool calls  {calls}")
