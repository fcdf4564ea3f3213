"""Memory is per person: a gateway's users each keep their own MEMORY.md and USER.md, the owner
keeps the files they always had, and nothing one writes reaches another's prompt."""

from __future__ import annotations

from pathlib import Path

import pytest
from hermes_toolset_memory import hermes_register_toolsets

from hermes_core.testing import check_keeps_people_apart, make_agent, run_as, text, tool_call
from hermes_hookspecs import Tool, Toolset

CANARY = "alice-canary-7f3a9e"


def memory_tool() -> Tool:
    """The ``memory`` tool as the plugin registers it."""
    found: list[Toolset] = []
    hermes_register_toolsets(found.append)
    return found[0].tools[0]


def add(content: str, target: str = "memory") -> dict:
    return {"action": "add", "target": target, "content": content}


def remember(home: Path, person: str | None, *calls: dict) -> list[str]:
    """One turn of ``person``'s agent making the memory ``calls``; the tool results."""
    agent = make_agent(
        *(tool_call("memory", args) for args in calls),
        text("done"),
        plugins=["memory"],
        config={},
        home=home,
        person=person,
    )
    agent.chat("remember")
    agent.close()
    return [m["content"] for m in agent.messages if m["role"] == "tool"]


def prompt_of(home: Path, person: str | None) -> str:
    agent = make_agent(text("hi"), plugins=["memory"], config={}, home=home, person=person)
    agent.chat("hello")
    agent.close()
    return agent.client.last_request.system_prompt or ""


def test_a_persons_memory_lives_in_their_own_folder(tmp_path):
    home = tmp_path / "home"
    results = remember(home, "alice", add(CANARY), add("Name: Alice", target="user"))
    assert [r.split(".")[0] for r in results] == ["Entry added (memory)", "Entry added (user)"]
    mine = home / "people" / "alice" / "memories"
    assert (mine / "MEMORY.md").read_text() == f"{CANARY}\n"
    assert (mine / "USER.md").read_text() == "Name: Alice\n"
    assert not (home / "memories").exists()  # the owner's files are untouched


def test_the_owners_files_stay_where_they_were(tmp_path):
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True)
    (home / "memories" / "MEMORY.md").write_text("the owner's old note\n")
    remember(home, None, add("a new owner note"))
    assert (home / "memories" / "MEMORY.md").read_text() == (
        "the owner's old note\n§\na new owner note\n"
    )
    assert not (home / "people").exists()


def test_each_prompt_shows_its_own_persons_memory_only(tmp_path):
    home = tmp_path / "home"
    (home / "memories").mkdir(parents=True)
    (home / "memories" / "USER.md").write_text("owner-canary-11b2\n")
    remember(home, "alice", add(CANARY, target="user"))
    remember(home, "bob", add("bob-canary-0c4d"))

    alice, bob, owner = (prompt_of(home, p) for p in ("alice", "bob", None))
    assert CANARY in alice
    assert "owner-canary-11b2" not in alice and "bob-canary-0c4d" not in alice
    assert "bob-canary-0c4d" in bob
    assert CANARY not in bob and "owner-canary-11b2" not in bob
    assert "owner-canary-11b2" in owner
    assert CANARY not in owner and "bob-canary-0c4d" not in owner


def test_the_memory_tool_keeps_people_apart(tmp_path):
    reads = check_keeps_people_apart(
        memory_tool(),
        write_args=add(CANARY),
        # a remove that matches nothing changes nothing and answers with the person's entries
        read_args={"action": "remove", "target": "memory", "old_text": "no-such-entry"},
        secret=CANARY,
        home=tmp_path / "home",
        owner=True,
    )
    assert "no entry of MEMORY.md contains" in reads["guest"]


def test_a_person_id_that_could_leave_the_people_folder_is_refused(tmp_path):
    home = tmp_path / "home"
    result = run_as(memory_tool(), add(CANARY), home=home, person="../alice")
    assert result.startswith("Error: '../alice' is not a person id")
    assert not list(tmp_path.rglob("MEMORY.md"))


# --- hermes memory --person ------------------------------------------------------------------


@pytest.fixture
def cli(hermes_cli, hermes_home, monkeypatch):
    monkeypatch.setenv("HERMES_PLUGINS", "memory")
    return hermes_cli


def test_show_edit_and_clear_a_persons_memory(cli, hermes_home, tmp_path, monkeypatch):
    remember(hermes_home, "alice", add(CANARY))
    (hermes_home / "memories").mkdir()
    (hermes_home / "memories" / "MEMORY.md").write_text("owner note\n")

    shown = cli("memory", "show", "--person", "alice", "--target", "memory")
    assert shown.exit_code == 0, shown.stderr
    assert str(hermes_home / "people" / "alice" / "memories" / "MEMORY.md") in shown.stdout
    assert CANARY in shown.stdout and "owner note" not in shown.stdout
    owners = cli("memory", "show", "--target", "memory")
    assert "owner note" in owners.stdout and CANARY not in owners.stdout

    script = tmp_path / "editor.py"
    script.write_text(
        "import sys, pathlib\np = pathlib.Path(sys.argv[1])\n"
        "p.write_text(p.read_text() + '§\\nadded by hand\\n')\n"
    )
    monkeypatch.setenv("EDITOR", f"python {script}")
    monkeypatch.delenv("VISUAL", raising=False)
    edited = cli("memory", "edit", "--person", "alice")
    assert edited.exit_code == 0, edited.stderr
    mine = hermes_home / "people" / "alice" / "memories" / "MEMORY.md"
    assert mine.read_text() == f"{CANARY}\n§\nadded by hand\n"

    cleared = cli("memory", "clear", "--person", "alice", "--yes")
    assert cleared.exit_code == 0
    assert not mine.exists()
    assert (hermes_home / "memories" / "MEMORY.md").read_text() == "owner note\n"
    again = cli("memory", "clear", "--person", "alice")
    assert again.stdout.strip() == "Memory (alice) is already empty."


@pytest.mark.parametrize("bad", ["../alice", "Alice", "a/b", ""])
def test_an_invalid_person_is_a_one_line_error(cli, hermes_home, bad):
    result = cli("memory", "show", "--person", bad)
    assert result.exit_code == 1
    assert "is not a person id" in result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not (hermes_home / "people").exists()
