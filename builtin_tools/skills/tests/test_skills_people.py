"""Skills per person: a person reads the home's shared skills and writes their own, never a
shared skill nor another person's; the owner's skills folder works as it always did."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hermes_toolset_skills import hermes_register_toolsets

from hermes_core.testing import check_keeps_people_apart, make_agent, text, tool_call
from hermes_hookspecs import Tool, Toolset

CANARY = "alice-canary-5e71c0"


def skill_md(name: str, body: str = "Step one.", description: str = "Does a thing.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n\n{body}\n"


def shared(home: Path, ref: str, body: str = "Shared steps.") -> Path:
    """Install a skill for everyone in the home, by hand."""
    folder = home / "skills" / ref
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(skill_md(folder.name, body))
    return folder


def skills_tool(name: str) -> Tool:
    """A tool of the skills toolset as the plugin registers it."""
    found: list[Toolset] = []
    hermes_register_toolsets(found.append)
    return next(t for t in found[0].tools if t.name == name)


def run(home: Path, person: str | None, *calls: tuple[str, dict]) -> list[str]:
    """One turn of ``person``'s agent making ``calls``; the tool results."""
    agent = make_agent(
        *(tool_call(name, args) for name, args in calls),
        text("done"),
        plugins=["skills"],
        config={},
        home=home,
        person=person,
    )
    agent.chat("go")
    agent.close()
    return [m["content"] for m in agent.messages if m["role"] == "tool"]


def create(
    name: str, body: str = "Step one.", description: str = "Does a thing."
) -> tuple[str, dict]:
    content = skill_md(name, body, description)
    return ("skill_manage", {"action": "create", "name": name, "content": content})


def prompt_of(home: Path, person: str | None) -> str:
    agent = make_agent(text("hi"), plugins=["skills"], config={}, home=home, person=person)
    agent.chat("hello")
    agent.close()
    return agent.client.last_request.system_prompt or ""


@pytest.fixture
def home(tmp_path: Path) -> Path:
    folder = tmp_path / "home"
    shared(folder, "deploy", "Shared deploy steps.")
    shared(folder, "devops/rollback", "Shared rollback steps.")
    return folder


def test_a_persons_skills_go_in_their_own_folder(home):
    [created] = run(home, "alice", create("notes", CANARY))
    assert created.startswith("Created skill notes in ")
    mine = home / "people" / "alice" / "skills" / "notes" / "SKILL.md"
    assert CANARY in mine.read_text()
    assert not (home / "skills" / "notes").exists()


def test_a_person_sees_the_shared_skills_and_their_own_marked(home):
    run(home, "alice", create("notes", CANARY))
    [listed] = run(home, "alice", ("skills_list", {}))
    data = json.loads(listed)
    assert data["skills"] == [
        {"name": "deploy", "category": None, "description": "Does a thing.", "shared": True},
        {"name": "notes", "category": None, "description": "Does a thing.", "shared": False},
        {"name": "rollback", "category": "devops", "description": "Does a thing.", "shared": True},
    ]
    [viewed] = run(home, "alice", ("skill_view", {"name": "devops/rollback"}))
    assert "Shared rollback steps." in viewed


def test_the_owner_sees_neither_marks_nor_a_persons_skills(home):
    run(home, "alice", create("notes", CANARY, description=f"Notes about {CANARY}."))
    assert CANARY in prompt_of(home, "alice")
    [listed] = run(home, None, ("skills_list", {}))
    assert json.loads(listed)["skills"] == [
        {"name": "deploy", "category": None, "description": "Does a thing."},
        {"name": "rollback", "category": "devops", "description": "Does a thing."},
    ]
    [viewed] = run(home, None, ("skill_view", {"name": "notes"}))
    assert viewed.startswith("Error: no skill named 'notes'")
    assert CANARY not in prompt_of(home, None)


@pytest.mark.parametrize(
    "args",
    [
        {"action": "edit", "name": "deploy", "content": skill_md("deploy", "mine now")},
        {"action": "patch", "name": "deploy", "old_text": "Shared", "new_text": "Mine"},
        {"action": "delete", "name": "deploy"},
        {"action": "delete", "name": "devops/rollback"},
        {"action": "create", "name": "deploy", "file": "extra.md", "content": "more"},
        {"action": "delete", "name": "deploy", "file": "SKILL.md"},
    ],
)
def test_a_person_can_never_change_a_shared_skill(home, args):
    before = {p: p.read_bytes() for p in (home / "skills").rglob("*") if p.is_file()}
    [result] = run(home, "alice", ("skill_manage", args))
    assert result.startswith("Error: cannot ")
    assert "it is a shared skill installed for everyone in this home" in result
    assert "create your own skill with the same name" in result
    after = {p: p.read_bytes() for p in (home / "skills").rglob("*") if p.is_file()}
    assert after == before
    assert not (home / "people" / "alice" / "skills").exists()


def test_a_persons_own_skill_takes_the_place_of_a_shared_one_for_them_only(home):
    [created] = run(home, "alice", create("deploy", "Alice's own deploy."))
    assert "It takes the place of the shared skill 'deploy' for you." in created
    [viewed] = run(home, "alice", ("skill_view", {"name": "deploy"}))
    assert "Alice's own deploy." in viewed and "Shared deploy steps." not in viewed
    [patched] = run(
        home,
        "alice",
        ("skill_manage", {"action": "patch", "name": "deploy", "old_text": "own", "new_text": "X"}),
    )
    assert patched.startswith("Patched SKILL.md of skill deploy.")
    [bobs] = run(home, "bob", ("skill_view", {"name": "deploy"}))
    assert "Shared deploy steps." in bobs
    assert (home / "skills" / "deploy" / "SKILL.md").read_text() == skill_md(
        "deploy", "Shared deploy steps."
    )


def test_a_person_can_never_reach_another_persons_skill(home):
    run(home, "alice", create("notes", CANARY, description=f"Notes about {CANARY}."))
    alice_skill = home / "people" / "alice" / "skills" / "notes" / "SKILL.md"
    before = alice_skill.read_text()
    results = run(
        home,
        "bob",
        ("skill_view", {"name": "notes"}),
        ("skill_manage", {"action": "patch", "name": "notes", "old_text": "a", "new_text": "b"}),
        ("skill_manage", {"action": "delete", "name": "notes"}),
        ("skills_list", {}),
    )
    assert all(r.startswith("Error: no skill named 'notes'") for r in results[:3]), results
    assert CANARY not in "".join(results)
    assert alice_skill.read_text() == before
    assert f"notes: Notes about {CANARY}." in prompt_of(home, "alice")
    assert CANARY not in prompt_of(home, "bob")


def test_the_index_in_a_persons_prompt_lists_shared_and_own(home):
    run(home, "alice", create("notes", CANARY))
    prompt = prompt_of(home, "alice")
    index = prompt[prompt.index("Skills index") :]
    assert "deploy: Does a thing." in index
    assert "devops/rollback: Does a thing." in index
    assert "notes: Does a thing." in index


def test_skill_manage_keeps_people_apart(tmp_path):
    reads = check_keeps_people_apart(
        skills_tool("skill_manage"),
        write_args={"action": "create", "name": "notes", "content": skill_md("notes", CANARY)},
        read_tool=skills_tool("skill_view"),
        read_args={"name": "notes"},
        secret=CANARY,
        home=tmp_path / "home",
        owner=True,
    )
    assert reads["guest"].startswith("Error: no skill named 'notes'")
    assert reads[None].startswith("Error: no skill named 'notes'")


def test_a_broken_shared_skill_is_reported_as_not_the_persons_to_fix(home):
    broken = home / "skills" / "broken"
    broken.mkdir()
    (broken / "SKILL.md").write_text("no front matter\n")
    [listed] = run(home, "alice", ("skills_list", {}))
    data = json.loads(listed)
    assert data["skipped"] == [
        {"skill": "broken", "problem": data["skipped"][0]["problem"], "shared": True}
    ]
    assert "hint" not in data
    [owners] = run(home, None, ("skills_list", {}))
    assert "shared" not in json.loads(owners)["skipped"][0]
    assert json.loads(owners)["hint"].startswith("skipped skills can be fixed")
