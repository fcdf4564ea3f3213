"""The todo list of a person's session: kept in their session, through the view of the session
store the host gives a person, and out of reach of every other person, even one whose tool asks
for another session by id."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

from hermes_toolset_todo import METADATA_KEY, TODO_TOOL, todo

from hermes_core.testing import (
    SQLiteSessionStore,
    check_keeps_people_apart,
    make_agent,
    make_host,
    text,
    tool_call,
)
from hermes_hookspecs import Tool, ToolContext, hookimpl

CANARY = "alice-canary-2d9f41"
PLAN = [{"id": "1", "content": CANARY, "status": "in_progress"}]


class Forger:
    """A toolset whose ``forge`` tool calls the todo handler on the session named in its
    arguments instead of its own: what a buggy or hostile tool could try."""

    @staticmethod
    def forge(args: dict[str, Any], ctx: ToolContext) -> str:
        forged = dataclasses.replace(ctx, session_id=args["session"])
        return todo(args.get("todo") or {}, forged)

    @hookimpl
    def hermes_register_toolsets(self, register: Any) -> None:
        from hermes_hookspecs import Toolset

        register(
            Toolset(
                name="forger",
                tools=[
                    Tool(
                        name="forge",
                        description="todo on another session",
                        parameters={"type": "object", "properties": {}},
                        handler=self.forge,
                    )
                ],
            )
        )


def alice_session(home: Path) -> str:
    """Alice's session with her todo list in it; its id."""
    agent = make_agent(
        tool_call("todo", {"todos": PLAN}),
        text("planned"),
        plugins=["todo"],
        config={},
        home=home,
        person="alice",
    )
    agent.chat("plan it")
    agent.close()
    return agent.session_id


def stored(home: Path, session_id: str) -> Any:
    store = SQLiteSessionStore(home / "sessions.db")
    try:
        session = store.get_session(session_id)
        assert session is not None
        return session.person, session.metadata.get(METADATA_KEY)
    finally:
        store.close()


def test_a_persons_list_is_kept_in_their_own_session(tmp_path):
    home = tmp_path / "home"
    session_id = alice_session(home)
    assert stored(home, session_id) == ("alice", PLAN)


def test_a_person_can_read_back_their_list_when_the_session_resumes(tmp_path):
    home = tmp_path / "home"
    session_id = alice_session(home)
    agent = make_agent(
        tool_call("todo", {}),
        text("ok"),
        plugins=["todo"],
        config={},
        home=home,
        person="alice",
        session_id=session_id,
    )
    agent.chat("where was I")
    agent.close()
    assert agent.messages[-2]["content"].endswith(f"[>] 1: {CANARY}")


def forge(home: Path, person: str, target: str, **agent: Any) -> str:
    """``person``'s agent runs ``forge`` against session ``target``: reads, then overwrites."""
    host = make_host(
        tool_call("forge", {"session": target}),
        tool_call("forge", {"session": target, "todo": {"todos": []}}),
        text("done"),
        plugins=["todo", Forger()],
        config={},
        home=home,
    )
    try:
        bob = host.agent(person=person, **agent)
        bob.chat("look")
        bob.close()
        results = [m["content"] for m in bob.messages if m["role"] == "tool"]
    finally:
        host.close()
    return "\n".join(results)


def test_another_person_can_neither_read_nor_change_the_list(tmp_path):
    home = tmp_path / "home"
    session_id = alice_session(home)
    results = forge(home, "bob", session_id)
    assert CANARY not in results
    assert results.count(f"Error: session {session_id!r} is not one of your sessions") == 2
    assert stored(home, session_id) == ("alice", PLAN)


def test_a_session_shared_with_a_person_is_still_not_theirs_to_change(tmp_path):
    home = tmp_path / "home"
    session_id = alice_session(home)
    results = forge(home, "bob", session_id, shared_people=["alice"])
    assert CANARY not in results
    assert "is not one of your sessions" in results
    assert stored(home, session_id) == ("alice", PLAN)


def test_without_a_store_each_person_has_their_own_list_in_the_process():
    alice = ToolContext(task_id="t", session_id="people-same-id", person="alice")
    bob = ToolContext(task_id="t", session_id="people-same-id", person="bob")
    owner = ToolContext(task_id="t", session_id="people-same-id")
    todo({"todos": PLAN}, alice)
    assert todo({}, bob) == "Todo list is empty."
    assert todo({}, owner) == "Todo list is empty."
    assert CANARY in todo({}, alice)


def test_the_todo_tool_keeps_people_apart(tmp_path):
    reads = check_keeps_people_apart(
        TODO_TOOL,
        write_args={"todos": PLAN},
        read_args={},
        secret=CANARY,
        home=tmp_path / "home",
        owner=True,
    )
    assert reads["bob"].startswith("Todo list, 1 item")  # his own list, with his own canary
    assert reads["guest"] == reads[None] == "Todo list is empty."
