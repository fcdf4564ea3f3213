"""``/rollback`` in the chat, through a real agent with the terminal in the sandbox: the files
come back, the conversation goes back to where the turn began in a new session, and the whole
conversation stays in the old one."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core.cli.slash import handle_slash, help_table
from hermes_core.testing import make_agent, text, tool_call


@pytest.fixture
def agent(home: Path, work: Path):
    made = make_agent(
        plugins=["terminal", "local", "file", "checkpoints"],
        home=home,
        config={"terminal": {"cwd": str(work)}},
        approval_callback=lambda request: "once",
    )
    yield made
    made.close()


def two_turns(agent, work: Path) -> None:
    """Turn 1 writes notes.md; turn 2 removes README.md and overwrites src/app.py."""
    agent.client.add(tool_call("write_file", {"path": "notes.md", "content": "one\n"}), text("ok"))
    agent.chat("first: write notes")
    agent.client.add(
        tool_call("terminal", {"command": "rm README.md && echo gone > src/app.py"}), text("ok")
    )
    agent.chat("second: break things")
    assert not (work / "README.md").exists()


def test_rollback_restores_the_files_and_rewinds_the_chat(agent, work, capsys):
    two_turns(agent, work)
    store, old = agent.session_store, agent.session_id
    before = store.get_messages(old)

    switched = handle_slash("/rollback", agent, store)
    listed = capsys.readouterr().out
    assert switched is False and " 1* " in listed and " 2* " in listed

    switched = handle_slash("/rollback 1", agent, store)
    out = capsys.readouterr().out
    assert isinstance(switched, str) and switched not in ("", old)
    assert (work / "README.md").read_text() == "# Project\n"
    assert (work / "src/app.py").read_text() == "print('hello')\n" * 40
    assert (work / "notes.md").read_text() == "one\n"  # turn 1's change stays
    assert "that turn began with: second: break things" in out

    kept = store.get_messages(switched)
    second = next(i for i, m in enumerate(before) if m.get("content") == "second: break things")
    assert kept == before[:second]
    assert store.get_messages(old) == before  # the old branch, whole
    info = store.get_session(switched)
    assert info.metadata["rewound_from"] == old and info.title.endswith("(rewound)")


def test_files_only_and_chat_only(agent, work, capsys):
    two_turns(agent, work)
    store, old = agent.session_store, agent.session_id
    assert handle_slash("/rollback 1 --files README.md", agent, store) is False
    assert (work / "README.md").exists() and (work / "src/app.py").read_text() == "gone\n"
    capsys.readouterr()
    # the restore above is checkpoint 1 now; the second turn's checkpoint is 2
    switched = handle_slash("/rollback 2 --chat", agent, store)
    assert isinstance(switched, str) and switched != old
    assert (work / "src/app.py").read_text() == "gone\n"  # files untouched


@pytest.mark.parametrize(
    "line, fragment",
    [
        ("/rollback 1 --files --chat", "not both"),
        ("/rollback --bogus", "usage"),
        ("/rollback 99", "99"),
        ("/rollback 1 --chat src", "do not go with --chat"),
        ("/rollback 'unclosed", "cannot read the arguments"),
    ],
)
def test_bad_arguments_are_one_line_and_change_nothing(agent, work, capsys, line, fragment):
    two_turns(agent, work)
    capsys.readouterr()
    assert handle_slash(line, agent, agent.session_store) is False
    out = capsys.readouterr().out
    assert fragment in out and out.count("\n") == 1 and out.startswith("  /rollback: ")
    assert not (work / "README.md").exists()


def test_a_checkpoint_of_another_session_restores_files_only(home, work, agent, capsys):
    two_turns(agent, work)
    other = make_agent(
        plugins=["terminal", "local", "file", "checkpoints"],
        home=home,
        config={"terminal": {"cwd": str(work)}},
    )
    try:
        out_before = capsys.readouterr()
        del out_before
        assert handle_slash("/rollback 1", other, other.session_store) is False
        assert "another session" in capsys.readouterr().out
        assert not (work / "README.md").exists()  # refused before any file changed
        assert handle_slash("/rollback 1 --files", other, other.session_store) is False
        assert (work / "README.md").exists()
    finally:
        other.close()


def test_help_lists_it_with_its_plugin(agent):
    assert "/rollback [N [--files|--chat] [PATH...]]" in help_table(agent)
    assert "(checkpoints)" in help_table(agent)
