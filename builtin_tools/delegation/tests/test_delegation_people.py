"""A subagent acts for its caller's person: its session is theirs, and its session_search finds
their conversations and never another person's."""

from __future__ import annotations

from pathlib import Path

from hermes_core.testing import ScriptedModel, SQLiteSessionStore, make_runner, text, tool_call
from hermes_hookspecs import AgentTask

BOBS_WORD = "quokkabob"
ALICES_WORD = "wombatalice"


def test_a_subagents_session_is_its_callers_persons_and_searches_only_theirs(tmp_path: Path):
    model = ScriptedModel(
        text("noted, bob"),  # bob's run
        text("noted, alice"),  # alice's earlier run
        tool_call(  # alice's run delegates a search
            "delegate_task",
            {"goal": "Find what we said before.", "toolsets": ["session_search"]},
        ),
        tool_call("session_search", {"query": BOBS_WORD}),  # the subagent
        tool_call("session_search", {"query": ALICES_WORD}),
        text("child done"),
        text("done"),  # alice's run again
    )
    runner = make_runner(
        model=model,
        plugins=["delegation", "session_search"],
        home=tmp_path,
        config={"toolsets": ["delegation", "session_search"]},
    )
    try:
        bob = runner.run(AgentTask(prompt=f"Remember the word {BOBS_WORD}.", person="bob"))
        earlier = runner.run(AgentTask(prompt=f"Remember {ALICES_WORD}.", person="alice"))
        alice = runner.run(AgentTask(prompt="What did we say?", person="alice"))
    finally:
        runner.host.close()
    assert [o.status for o in (bob, earlier, alice)] == ["completed"] * 3

    store = SQLiteSessionStore(tmp_path / "sessions.db")
    try:
        (child,) = [s for s in store.list_sessions() if s.parent_session_id == alice.session_id]
        assert (child.person, child.source) == ("alice", "subagent")
        assert store.get_session(bob.session_id).person == "bob"
    finally:
        store.close()

    child_request = model.requests[-2]  # the subagent's last request
    not_bobs, alices = [m["content"] for m in child_request.messages if m["role"] == "tool"]
    assert not_bobs == f"No past sessions match '{BOBS_WORD}'."
    assert bob.session_id not in not_bobs
    assert earlier.session_id in alices and ALICES_WORD in alices  # the search works
