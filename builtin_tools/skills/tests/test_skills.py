"""The skills toolset, tested through its real entry point with the hermes test kit."""

from __future__ import annotations

import json
import logging
import sys
from pathlib import Path

import pytest

from hermes_core.testing import load_plugin, make_agent, text, tool_call


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(folder))
    return folder


def skill_md(name: str, description: str = "Does a thing. Use it when a thing is needed.") -> str:
    return f"---\nname: {name}\ndescription: {description}\n---\n# {name}\n\nStep one.\n"


def put(home: Path, ref: str, content: str | None = None, **files: str) -> Path:
    """Write a skill folder by hand."""
    folder = home / "skills" / ref
    folder.mkdir(parents=True)
    (folder / "SKILL.md").write_text(content if content is not None else skill_md(folder.name))
    for name, body in files.items():
        path = folder / name.replace("__", "/")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(body)
    return folder


def run(home: Path, *calls: tuple[str, dict], config: dict | None = None) -> list[str]:
    """Run the calls one per model turn; return the tool results."""
    agent = make_agent(
        *(tool_call(name, args) for name, args in calls),
        text("done"),
        plugins=["skills"],
        config=config or {},
        home=home,
    )
    agent.chat("go")
    return [m["content"] for m in agent.messages if m["role"] == "tool"]


def manage(**args) -> tuple[str, dict]:
    return ("skill_manage", args)


def view(**args) -> tuple[str, dict]:
    return ("skill_view", args)


def listing(**args) -> tuple[str, dict]:
    return ("skills_list", args)


def prompt_of(home: Path, config: dict | None = None) -> str:
    agent = make_agent(text("hi"), plugins=["skills"], config=config or {}, home=home)
    agent.chat("hello")
    return agent.client.last_request.system_prompt or ""


def test_loads_through_its_entry_point():
    record = load_plugin("skills")
    assert record.dist == "hermes-toolset-skills"
    assert {"hermes_register_toolsets", "hermes_prompt_layers", "hermes_register_commands"} <= set(
        record.hooks
    )


# --- skills_list and skill_view -------------------------------------------------------------


def test_list_gives_name_category_and_description(home):
    put(home, "pdf-tools")
    put(home, "devops/deploy-k8s", skill_md("deploy-k8s", "Deploy to the cluster."))
    [result] = run(home, listing())
    data = json.loads(result)
    assert data["skills"] == [
        {
            "name": "pdf-tools",
            "category": None,
            "description": "Does a thing. Use it when a thing is needed.",
        },
        {"name": "deploy-k8s", "category": "devops", "description": "Deploy to the cluster."},
    ]
    assert data["count"] == 2 and data["categories"] == ["devops"]
    assert "skipped" not in data


def test_list_filters_by_category(home):
    put(home, "pdf-tools")
    put(home, "devops/deploy-k8s")
    first, second = run(home, listing(category="devops"), listing(category="art"))
    assert [s["name"] for s in json.loads(first)["skills"]] == ["deploy-k8s"]
    assert json.loads(second)["note"] == "no skill in category 'art'"


def test_list_reports_skipped_skills_and_why(home):
    put(home, "good")
    put(home, "broken", "no front matter here\n")
    [result] = run(home, listing())
    data = json.loads(result)
    assert [s["name"] for s in data["skills"]] == ["good"]
    assert data["skipped"] == [
        {
            "skill": "broken",
            "problem": "no YAML front matter (the file must start with a line '---')",
        }
    ]


def test_list_when_there_are_no_skills(home):
    [result] = run(home, listing())
    data = json.loads(result)
    assert data["count"] == 0 and data["note"].startswith("no skills yet in ")


def test_skills_for_another_platform_are_not_offered(home):
    other = "windows" if sys.platform != "win32" else "linux"
    put(
        home,
        "elsewhere",
        "---\nname: elsewhere\ndescription: d\nplatforms: [" + other + "]\n---\nx\n",
    )
    put(home, "here")
    [result] = run(home, listing())
    assert [s["name"] for s in json.loads(result)["skills"]] == ["here"]
    assert "elsewhere" not in prompt_of(home)


def test_view_shows_skill_md_and_its_files(home):
    put(home, "devops/deploy-k8s", references__checklist_md="- check pods\n", run_sh="echo\n")
    [result] = run(home, view(name="deploy-k8s"))
    first_line, files_line, blank, *rest = result.split("\n")
    assert first_line.startswith("Skill devops/deploy-k8s (")
    assert files_line == (
        "Files: references/checklist_md, run_sh (open one with skill_view and file)"
    )
    assert "\n".join(rest) == skill_md("deploy-k8s")


def test_view_one_file_by_category_and_name(home):
    put(home, "devops/deploy-k8s", notes="remember the namespace\n")
    [result] = run(home, view(name="devops/deploy-k8s", file="notes"))
    assert result == "remember the namespace\n"


def test_view_unknown_skill_suggests_similar_names(home):
    put(home, "deploy-k8s")
    [result] = run(home, view(name="deploy"))
    assert result == "Error: no skill named 'deploy'. Similar: deploy-k8s."


def test_view_a_name_in_two_categories_is_ambiguous(home):
    put(home, "a/notes")
    put(home, "b/notes")
    [result, ok] = run(home, view(name="notes"), view(name="b/notes"))
    assert result == "Error: 'notes' is ambiguous: a/notes, b/notes; use category/name"
    assert ok.startswith("Skill b/notes")


def test_view_missing_file_lists_the_files(home):
    put(home, "tool", readme="x")
    [result] = run(home, view(name="tool", file="nope.md"))
    assert result == "Error: skill 'tool' has no file 'nope.md'; its files: SKILL.md, readme"


def test_view_binary_file_is_refused(home):
    folder = put(home, "tool")
    (folder / "logo.png").write_bytes(b"\x89PNG\r\n\x1a\n\xff\xfe")
    [result] = run(home, view(name="tool", file="logo.png"))
    assert result == "Error: logo.png is a binary file (10 bytes); it is not shown"


def test_view_a_malformed_skill_says_why_and_how_to_fix(home):
    put(home, "broken", "---\nname: broken\n---\nbody\n")
    results = run(home, view(name="broken"), view(name="broken", file="SKILL.md"))
    assert results[0].startswith(
        "Error: skill 'broken' is malformed and was skipped: the front matter has no description."
    )
    assert results[1].startswith("Skill broken")
    assert "name: broken" in results[1]


# --- path refusal ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("file", "message"),
    [
        ("../other/SKILL.md", "goes up with '..'"),
        ("refs/../../other/SKILL.md", "goes up with '..'"),
        ("/etc/passwd", "is an absolute path"),
        ("~/.bashrc", "is an absolute path"),
        ("C:\\Windows\\win.ini", "is an absolute path"),
    ],
)
def test_paths_outside_the_skill_are_refused(home, file, message):
    put(home, "tool")
    put(home, "other")
    results = run(
        home,
        view(name="tool", file=file),
        manage(action="create", name="tool", file=file, content="x"),
        manage(action="edit", name="tool", file=file, content="x"),
        manage(action="patch", name="tool", file=file, old_text="Step", new_text="x"),
        manage(action="delete", name="tool", file=file),
    )
    for result in results:
        assert result.startswith("Error: ") and message in result, result
    assert (home / "skills" / "other" / "SKILL.md").read_text() == skill_md("other")


def test_symbolic_links_leading_out_are_refused(home, tmp_path):
    secret = tmp_path / "secret.txt"
    secret.write_text("top secret\n")
    outside = tmp_path / "outside"
    outside.mkdir()
    folder = put(home, "tool")
    (folder / "leak.txt").symlink_to(secret)
    (folder / "dir").symlink_to(outside)
    results = run(
        home,
        view(name="tool", file="leak.txt"),
        manage(action="edit", name="tool", file="leak.txt", content="overwritten"),
        manage(action="create", name="tool", file="dir/new.txt", content="x"),
        view(name="tool"),
    )
    for result in results[:3]:
        assert result.startswith("Error: ") and "leads outside the skill folder" in result
    assert secret.read_text() == "top secret\n"
    assert not (outside / "new.txt").exists()
    assert "Files: none besides SKILL.md" in results[3]


def test_a_symbolic_link_inside_the_skill_is_fine(home):
    folder = put(home, "tool", real_md="real\n")
    (folder / "alias.md").symlink_to(folder / "real_md")
    [result] = run(home, view(name="tool", file="alias.md"))
    assert result == "real\n"


# --- skill_manage --------------------------------------------------------------------------


def test_create_edit_patch_and_delete(home):
    folder = home / "skills" / "devops" / "deploy-k8s"
    results = run(
        home,
        manage(
            action="create", name="deploy-k8s", category="devops", content=skill_md("deploy-k8s")
        ),
        manage(action="create", name="deploy-k8s", file="references/api.md", content="# API"),
        manage(action="patch", name="deploy-k8s", old_text="Step one.", new_text="Step 1."),
        manage(action="edit", name="deploy-k8s", file="references/api.md", content="# API v2\n"),
        manage(
            action="patch",
            name="deploy-k8s",
            file="references/api.md",
            old_text="v2",
            new_text="v3",
        ),
        view(name="deploy-k8s"),
        manage(action="delete", name="deploy-k8s", file="references/api.md"),
        manage(action="delete", name="devops/deploy-k8s"),
    )
    assert results[0] == (
        f"Created skill devops/deploy-k8s in {folder}. The skills index in the system prompt "
        "shows the change from the next session."
    )
    assert results[1] == "Created references/api.md in skill devops/deploy-k8s (6 chars)."
    assert results[2].startswith("Patched SKILL.md of skill devops/deploy-k8s.")
    assert results[3] == "Updated references/api.md of skill devops/deploy-k8s (9 chars)."
    assert results[4] == "Patched references/api.md of skill devops/deploy-k8s."
    assert "Files: references/api.md" in results[5] and "Step 1." in results[5]
    assert results[6] == "Deleted references/api.md from skill devops/deploy-k8s."
    assert results[7].startswith("Deleted skill devops/deploy-k8s.")
    assert not folder.exists()
    assert not folder.parent.exists()  # the emptied category goes too


def test_create_with_category_in_the_name(home):
    [result] = run(
        home, manage(action="create", name="art/ascii-art", content=skill_md("ascii-art"))
    )
    assert result.startswith("Created skill art/ascii-art")
    assert (home / "skills" / "art" / "ascii-art" / "SKILL.md").read_text() == skill_md("ascii-art")


def test_edit_replaces_skill_md(home):
    folder = put(home, "tool")
    new = skill_md("tool", "A better description.")
    [result] = run(home, manage(action="edit", name="tool", content=new))
    assert result.startswith("Updated skill tool (")
    assert (folder / "SKILL.md").read_text() == new


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("Deploy", "name 'Deploy' is not valid: use lowercase letters, digits and single hyphens"),
        ("deploy_k8s", "name 'deploy_k8s' is not valid"),
        ("-deploy", "name '-deploy' is not valid"),
        ("deploy--k8s", "name 'deploy--k8s' is not valid"),
        ("a" * 65, "is 65 characters; at most 64"),
        ("../escape", "category '..' is not valid"),
    ],
)
def test_create_validates_the_name(home, name, message):
    [result] = run(home, manage(action="create", name=name, content=skill_md(name)))
    assert result.startswith("Error: ") and message in result
    assert not (home / "skills").exists() or not any((home / "skills").rglob("SKILL.md"))


def test_a_64_character_name_is_fine(home):
    name = "a" * 64
    [result] = run(home, manage(action="create", name=name, content=skill_md(name)))
    assert result.startswith("Created skill " + name)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("# just markdown\n", "no YAML front matter"),
        ("---\nname: tool\ndescription: d\n", "not closed by a line '---'"),
        ("---\nname: [unclosed\n---\nbody\n", "invalid YAML in the front matter (line 3)"),
        ("---\n- a list\n---\nbody\n", "must be a mapping"),
        ("---\nname: tool\n---\nbody\n", "the front matter has no description"),
        ("---\ndescription: d\n---\nbody\n", "the front matter has no name (expected name: tool)"),
        ("---\nname: other\ndescription: d\n---\nbody\n", "name 'other' does not match the folder"),
        (skill_md("tool", "x" * 1025), "the description is 1,025 characters; at most 1,024"),
        ("---\nname: tool\ndescription: d\nmetadata: 3\n---\nbody\n", "metadata must be a mapping"),
        ("---\nname: tool\ndescription: d\n---\n\n", "SKILL.md has no body"),
    ],
)
def test_create_validates_the_front_matter(home, content, message):
    [result] = run(home, manage(action="create", name="tool", content=content))
    assert result.startswith("Error: ") and message in result, result
    assert not (home / "skills" / "tool").exists()


def test_create_refuses_an_existing_name_in_any_category(home):
    put(home, "devops/tool")
    [result] = run(home, manage(action="create", name="tool", content=skill_md("tool")))
    assert result == (
        "Error: a skill named 'tool' already exists (devops/tool); use action edit or patch, "
        "or choose another name"
    )


def test_create_file_refuses_to_overwrite_and_edit_file_needs_one(home):
    put(home, "tool", notes="keep\n")
    results = run(
        home,
        manage(action="create", name="tool", file="notes", content="x"),
        manage(action="edit", name="tool", file="missing", content="x"),
        manage(action="create", name="nothing", file="notes", content="x"),
    )
    assert results[0] == "Error: skill 'tool' already has 'notes'; use action edit or patch"
    assert results[1] == "Error: skill 'tool' has no file 'missing'; use action create"
    assert results[2].startswith("Error: no skill named 'nothing'; create its SKILL.md first")
    assert (home / "skills" / "tool" / "notes").read_text() == "keep\n"


def test_a_patch_must_match_once_and_keep_skill_md_valid(home):
    folder = put(home, "tool", "---\nname: tool\ndescription: d\n---\nstep\nstep\n")
    before = (folder / "SKILL.md").read_text()
    results = run(
        home,
        manage(action="patch", name="tool", old_text="missing", new_text="x"),
        manage(action="patch", name="tool", old_text="step", new_text="x"),
        manage(action="patch", name="tool", old_text="description: d\n", new_text=""),
        manage(action="patch", name="tool", old_text="d\n---", new_text="d\n---\n"),
    )
    assert results[0] == "Error: old_text was not found in SKILL.md of skill 'tool'"
    assert results[1].startswith("Error: old_text occurs 2 times in SKILL.md;")
    assert results[2].startswith(
        "Error: SKILL.md is not valid: the front matter has no description"
    )
    assert results[3].startswith("Patched SKILL.md of skill tool.")
    assert (folder / "SKILL.md").read_text() == before.replace("d\n---", "d\n---\n")


def test_a_malformed_skill_can_be_repaired_with_edit(home):
    folder = put(home, "broken", "oops\n")
    [result] = run(home, manage(action="edit", name="broken", content=skill_md("broken")))
    assert result.startswith("Updated skill broken")
    assert (folder / "SKILL.md").read_text() == skill_md("broken")


def test_delete_a_linked_skill_removes_only_the_link(home, tmp_path):
    elsewhere = tmp_path / "shared" / "linked"
    elsewhere.mkdir(parents=True)
    (elsewhere / "SKILL.md").write_text(skill_md("linked"))
    (home / "skills").mkdir()
    (home / "skills" / "linked").symlink_to(elsewhere)
    [listed, deleted] = run(home, listing(), manage(action="delete", name="linked"))
    assert [s["name"] for s in json.loads(listed)["skills"]] == ["linked"]
    assert deleted.startswith("Deleted skill linked.")
    assert not (home / "skills" / "linked").exists()
    assert (elsewhere / "SKILL.md").exists()


def test_writes_are_atomic(home, monkeypatch):
    import os

    folder = put(home, "tool")

    def broken_replace(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken_replace)
    [result] = run(home, manage(action="edit", name="tool", content=skill_md("tool", "New.")))
    assert "No space left on device" in result
    assert (folder / "SKILL.md").read_text() == skill_md("tool")
    assert sorted(p.name for p in folder.iterdir()) == ["SKILL.md"]


# --- the prompt ----------------------------------------------------------------------------


def test_the_index_and_guidance_layers(home):
    put(home, "pdf-tools", skill_md("pdf-tools", "Fill and merge PDF forms."))
    put(home, "devops/deploy-k8s", skill_md("deploy-k8s", "Deploy to the cluster."))
    agent = make_agent(text("hi"), plugins=["skills"], home=home)
    agent.chat("hello")
    layers = {b.layer.name: b.layer for b in agent.prompt_layers}
    assert layers["skills.guidance"].tier == "stable"
    assert "skill_view" in layers["skills.guidance"].text
    assert "skill_manage create" in layers["skills.guidance"].text
    assert layers["skills.index"].tier == "stable"
    assert layers["skills.index"].text.splitlines()[1:] == [
        "pdf-tools: Fill and merge PDF forms.",
        "devops/deploy-k8s: Deploy to the cluster.",
    ]


def test_a_malformed_skill_is_skipped_with_a_warning_and_the_prompt_still_builds(home, caplog):
    put(home, "good")
    put(home, "no-front-matter", "just text\n")
    put(home, "bad-yaml", "---\nname: [oops\n---\nx\n")
    (put(home, "not-utf8") / "SKILL.md").write_bytes(b"---\nname: x\xff\n---\n")
    put(home, "renamed", skill_md("other-name"))
    with caplog.at_level(logging.WARNING, logger="hermes.skills"):
        prompt = prompt_of(home)
    assert "good: Does a thing" in prompt
    assert "renamed: Does a thing" in prompt  # bends a rule: loaded, with a warning
    for skipped in ("no-front-matter", "bad-yaml", "not-utf8"):
        assert f"{skipped}:" not in prompt
    messages = [r.getMessage() for r in caplog.records if r.name == "hermes.skills"]
    assert any(m.startswith("skill no-front-matter/SKILL.md skipped: no YAML") for m in messages)
    assert any(m.startswith("skill bad-yaml/SKILL.md skipped: invalid YAML") for m in messages)
    assert any("not-utf8/SKILL.md skipped: SKILL.md is not valid UTF-8" in m for m in messages)
    assert any("renamed/SKILL.md: the front matter name 'other-name'" in m for m in messages)


def test_the_index_is_capped(home):
    for n in range(30):
        put(home, f"skill-{n:02d}", skill_md(f"skill-{n:02d}", f"Description number {n}."))
    prompt = prompt_of(home, config={"skills": {"index_max_chars": 300}})
    index = prompt[prompt.index("Skills index") :]
    assert len(index) <= 300
    assert index.splitlines()[-1].startswith("… and ")
    assert index.splitlines()[-1].endswith(" more: call skills_list to see them all")
    shown = len(index.splitlines()) - 2
    assert index.splitlines()[-1] == f"… and {30 - shown} more: call skills_list to see them all"


def test_long_descriptions_are_cut_in_the_index(home):
    put(home, "wordy", skill_md("wordy", "word " * 100))
    line = next(x for x in prompt_of(home).splitlines() if x.startswith("wordy:"))
    assert len(line) == 200 and line.endswith("…")


def test_an_agent_skills_file_with_extra_fields_loads(home):
    put(
        home,
        "pdf",
        "---\nname: pdf\ndescription: Work with PDFs.\nlicense: Apache-2.0\n"
        "allowed-tools: [bash]\nmetadata:\n  version: '1.0'\n---\n# PDF\n",
    )
    assert "pdf: Work with PDFs." in prompt_of(home)


def test_no_skills_and_no_manage_tool_means_no_layers(home):
    from hermes_toolset_skills import hermes_prompt_layers

    from hermes_hookspecs import PromptContext

    def layers(*tools: str):
        context = PromptContext(model="m", provider="p", tool_names=tools, hermes_home=str(home))
        return hermes_prompt_layers(context)

    assert layers("memory") is None
    assert layers("skill_view") is None
    [guidance, index] = layers("skill_manage", "skill_view")
    assert "skill_manage" in guidance.text and index.text == ""
    put(home, "tool")
    [guidance, index] = layers("skill_view")
    assert "skill_manage" not in guidance.text
    assert index.text.endswith("tool: Does a thing. Use it when a thing is needed.")


def test_a_skill_created_during_a_session_shows_in_the_next_one(home):
    agent = make_agent(
        tool_call(
            "skill_manage", {"action": "create", "name": "fresh", "content": skill_md("fresh")}
        ),
        text("saved"),
        plugins=["skills"],
        home=home,
    )
    agent.chat("save it")
    assert "fresh:" not in agent.client.last_request.system_prompt
    assert "fresh: Does a thing" in prompt_of(home)


# --- commands --------------------------------------------------------------------------------


@pytest.fixture
def cli(hermes_cli, monkeypatch):
    monkeypatch.setenv("HERMES_PLUGINS", "skills")
    return hermes_cli


def test_list_prints_a_table_and_the_warnings(cli, hermes_home):
    put(hermes_home, "pdf-tools", skill_md("pdf-tools", "Fill PDF forms."))
    put(hermes_home, "devops/deploy-k8s", skill_md("deploy-k8s", "Deploy to the cluster."))
    put(hermes_home, "broken", "nothing\n")
    put(hermes_home, "renamed", skill_md("other"))
    result = cli("skills", "list")
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines() == [
        "NAME        CATEGORY  DESCRIPTION",
        "pdf-tools   -         Fill PDF forms.",
        "renamed     -         Does a thing. Use it when a thing is needed.",
        "deploy-k8s  devops    Deploy to the cluster.",
        f"3 skills in {hermes_home / 'skills'}",
    ]
    assert result.stderr.splitlines() == [
        "warning: broken/SKILL.md: no YAML front matter (the file must start with a line '---') "
        "(skipped)",
        "warning: renamed/SKILL.md: the front matter name 'other' does not match the folder "
        "'renamed'",
    ]


def test_list_one_category_and_json(cli, hermes_home):
    put(hermes_home, "pdf-tools")
    put(hermes_home, "devops/deploy-k8s")
    result = cli("skills", "list", "--category", "devops")
    assert result.stdout.splitlines()[1].startswith("deploy-k8s  devops")
    assert result.stdout.splitlines()[-1].startswith("1 skill in category 'devops' in ")
    rows = json.loads(cli("skills", "list", "--json").stdout)
    assert [(r["name"], r["status"]) for r in rows] == [("pdf-tools", "ok"), ("deploy-k8s", "ok")]


def test_list_with_no_skills_explains_what_a_skill_is(cli, hermes_home):
    result = cli("skills", "list")
    assert result.exit_code == 0
    assert result.stdout.startswith(f"No skills yet: {hermes_home / 'skills'} does not exist.")


def test_list_follows_the_profile(cli, hermes_home):
    put(hermes_home / "profiles" / "work", "work-only")
    result = cli("-p", "work", "skills", "list")
    assert "work-only" in result.stdout


def test_show_prints_a_skill(cli, hermes_home):
    put(hermes_home, "tool", notes="n\n")
    result = cli("skills", "show", "tool")
    assert result.exit_code == 0
    assert result.stdout == skill_md("tool")
    assert result.stderr == "\nFiles: notes\n"
    assert cli("skills", "show", "tool", "--file", "notes").stdout == "n\n"


def test_show_an_unknown_skill_is_an_error(cli, hermes_home):
    put(hermes_home, "tool")
    result = cli("skills", "show", "nope")
    assert result.exit_code == 1
    assert "no skill named 'nope'" in result.stderr
    escape = cli("skills", "show", "tool", "--file", "../../config.yaml")
    assert escape.exit_code == 1 and "goes up with '..'" in escape.stderr
