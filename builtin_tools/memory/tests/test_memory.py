"""The memory toolset, tested through its real entry point with the hermes test kit."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from hermes_core.testing import load_plugin, make_agent, text, tool_call, tool_calls


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    folder = tmp_path / "home"
    folder.mkdir()
    monkeypatch.setenv("HERMES_HOME", str(folder))
    return folder


def memory_file(home: Path, name: str = "MEMORY.md") -> Path:
    return home / "memories" / name


def run_tool(home: Path, *calls: dict, config: dict | None = None) -> list[str]:
    """Run memory calls one per model turn; return the tool results."""
    script = [tool_call("memory", args) for args in calls]
    agent = make_agent(
        *script,
        text("done"),
        plugins=["memory"],
        config=config or {},
        home=home,
    )
    agent.chat("remember")
    return [m["content"] for m in agent.messages if m["role"] == "tool"]


def add(content: str, target: str = "memory") -> dict:
    return {"action": "add", "target": target, "content": content}


# --- loading ----------------------------------------------------------------------------------


def test_loads_through_its_entry_point():
    record = load_plugin("memory")
    assert record.dist == "hermes-toolset-memory"
    assert {"hermes_register_toolsets", "hermes_prompt_layers", "hermes_register_commands"} <= set(
        record.hooks
    )


# --- actions ----------------------------------------------------------------------------------


def test_add_writes_an_entry_and_reports_usage(home):
    [result] = run_tool(home, add("The user's project is a Rust CLI called tern."))
    assert result.startswith("Entry added (memory).")
    assert "MEMORY.md: 1 entry, 45/2,200 chars (2%)" in result
    assert memory_file(home).read_text() == "The user's project is a Rust CLI called tern.\n"


def test_entries_are_separated_by_a_section_line(home):
    run_tool(home, add("first"), add("second\nwith two lines"))
    assert memory_file(home).read_text() == "first\n§\nsecond\nwith two lines\n"


def test_user_target_writes_user_md_with_its_own_limit(home):
    [result] = run_tool(home, add("Name: Sam. Prefers short answers.", target="user"))
    assert "USER.md: 1 entry, 33/1,375 chars" in result
    assert memory_file(home, "USER.md").read_text() == "Name: Sam. Prefers short answers.\n"
    assert not memory_file(home).exists()


def test_adding_an_existing_entry_changes_nothing(home):
    results = run_tool(home, add("likes tea"), add("likes tea"))
    assert results[1].startswith("Already present in MEMORY.md; nothing changed.")
    assert "1 entry" in results[1]
    assert memory_file(home).read_text() == "likes tea\n"


def test_replace_changes_the_one_matching_entry(home):
    results = run_tool(
        home,
        add("editor: vim"),
        add("shell: zsh"),
        {"action": "replace", "target": "memory", "old_text": "vim", "content": "editor: helix"},
    )
    assert results[2].startswith("Entry replaced (memory).")
    assert "2 entries" in results[2]
    assert memory_file(home).read_text() == "editor: helix\n§\nshell: zsh\n"


def test_remove_deletes_the_one_matching_entry(home):
    results = run_tool(
        home,
        add("editor: vim"),
        add("shell: zsh"),
        {"action": "remove", "target": "memory", "old_text": "zsh"},
    )
    assert results[2].startswith("Entry removed (memory).")
    assert "MEMORY.md: 1 entry, 11/2,200 chars" in results[2]
    assert memory_file(home).read_text() == "editor: vim\n"


def test_no_match_is_an_error_listing_the_entries(home):
    results = run_tool(
        home,
        add("editor: vim"),
        {"action": "remove", "target": "memory", "old_text": "emacs"},
    )
    assert results[1].startswith("Error: no entry of MEMORY.md contains 'emacs'. Entries:")
    assert "1. editor: vim" in results[1]
    assert "11/2,200 chars" in results[1]
    assert memory_file(home).read_text() == "editor: vim\n"


def test_several_matches_is_an_error_listing_the_candidates(home):
    results = run_tool(
        home,
        add("editor: vim"),
        add("shell: zsh"),
        add("pager: less (vim keys)"),
        {"action": "replace", "target": "memory", "old_text": "vim", "content": "x"},
    )
    error = results[3]
    assert error.startswith("Error: 'vim' matches 2 entries of MEMORY.md; quote more")
    assert "1. editor: vim" in error and "2. pager: less (vim keys)" in error
    assert "shell" not in error.split("\n", 1)[1].split("(MEMORY.md")[0]
    assert (
        memory_file(home).read_text() == "editor: vim\n§\nshell: zsh\n§\npager: less (vim keys)\n"
    )


def test_an_entry_equal_to_old_text_wins_over_entries_containing_it(home):
    results = run_tool(
        home,
        add("Python"),
        add("Python 3.11 is the minimum"),
        {"action": "remove", "target": "memory", "old_text": "Python"},
    )
    assert results[2].startswith("Entry removed")
    assert memory_file(home).read_text() == "Python 3.11 is the minimum\n"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ({"action": "add", "target": "memory"}, "action 'add' needs content"),
        ({"action": "add", "target": "memory", "content": "   "}, "content is empty"),
        ({"action": "remove", "target": "memory"}, "action 'remove' needs old_text"),
        ({"action": "replace", "target": "memory", "old_text": "a"}, "'replace' needs old_text"),
        ({"action": "add", "target": "memory", "content": "a\n§\nb"}, "must not contain a line"),
    ],
)
def test_incomplete_or_bad_arguments_are_errors(home, args, message):
    [result] = run_tool(home, args)
    assert result.startswith("Error: ")
    assert message in result
    assert "0/2,200 chars" in result
    assert not memory_file(home).exists()


def test_arguments_outside_the_schema_never_reach_the_handler(home):
    [result] = run_tool(home, {"action": "forget", "target": "memory"})
    assert result.startswith("Error: invalid arguments for tool 'memory'")


# --- limits ----------------------------------------------------------------------------------


def test_going_over_the_limit_is_an_error_saying_by_how_much(home):
    config = {"memory": {"memory_char_limit": 30}}
    results = run_tool(home, add("a" * 20), add("b" * 20), config=config)
    assert "20/30 chars (67%)" in results[0]
    error = results[1]
    # 20 + 3 (separator) + 20 = 43 chars, 13 over
    assert error.startswith("Error: MEMORY.md would be 43/30 chars, 13 over the limit;")
    assert "nothing was saved" in error and "1. " + "a" * 20 in error
    assert memory_file(home).read_text() == "a" * 20 + "\n"


def test_user_limit_is_configurable_too(home):
    config = {"memory": {"user_char_limit": 10}}
    [result] = run_tool(home, add("x" * 11, target="user"), config=config)
    assert "USER.md would be 11/10 chars, 1 over the limit" in result


def test_a_store_over_its_limit_can_still_shrink(home):
    memory_file(home).parent.mkdir()
    memory_file(home).write_text("a" * 40 + "\n§\n" + "b" * 40 + "\n")
    config = {"memory": {"memory_char_limit": 50}}
    results = run_tool(
        home,
        {"action": "replace", "target": "memory", "old_text": "a", "content": "a" * 10},
        add("c"),
        config=config,
    )
    assert results[0].startswith("Entry replaced")
    assert "53/50 chars" in results[0]
    assert "over the limit" in results[1]


# --- files written by hand -------------------------------------------------------------------


def test_a_plain_file_with_one_note_per_line_loads(home):
    memory_file(home).parent.mkdir()
    memory_file(home).write_text("uses vim\nworks at ACME\nprefers tabs\n")
    [result] = run_tool(home, {"action": "remove", "target": "memory", "old_text": "ACME"})
    assert "2 entries" in result
    assert memory_file(home).read_text() == "uses vim\n§\nprefers tabs\n"


def test_a_plain_file_with_paragraphs_and_lists_loads(home):
    memory_file(home).parent.mkdir()
    memory_file(home).write_text(
        "The build uses make.\nRun `make check` before pushing.\n\n- likes tea\n- dislikes emojis\n"
    )
    [result] = run_tool(home, {"action": "remove", "target": "memory", "old_text": "tea"})
    assert "2 entries" in result
    assert memory_file(home).read_text() == (
        "The build uses make.\nRun `make check` before pushing.\n§\n- dislikes emojis\n"
    )


def test_an_undecodable_file_is_not_overwritten(home):
    memory_file(home).parent.mkdir()
    memory_file(home).write_bytes(b"caf\xe9\n")
    [result] = run_tool(home, add("new"))
    assert "is not valid UTF-8; nothing was changed" in result
    assert memory_file(home).read_bytes() == b"caf\xe9\n"


# --- atomicity and the lock -----------------------------------------------------------------


def test_a_failure_in_the_middle_of_a_write_leaves_the_old_file(home, monkeypatch):
    run_tool(home, add("kept"))

    def broken_fsync(fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", broken_fsync)
    [result] = run_tool(home, add("lost"))
    assert result.startswith("Error: could not save")
    assert "No space left on device" in result
    assert memory_file(home).read_text() == "kept\n"
    leftovers = [p.name for p in memory_file(home).parent.iterdir()]
    assert sorted(leftovers) == [".lock", "MEMORY.md"]


def test_a_held_lock_makes_the_write_wait_then_fail_clearly(home, monkeypatch):
    from hermes_toolset_memory import store

    monkeypatch.setattr(store, "LOCK_TIMEOUT", 0.2)
    with store.locked(home / "memories"):
        [result] = run_tool(home, add("blocked"))
    assert result.startswith("Error: memory is locked by another process")
    assert not memory_file(home).exists()


def test_adds_in_one_parallel_batch_all_land(home):
    batch = tool_calls(*(("memory", add(f"note {i}")) for i in range(8)))
    agent = make_agent(batch, text("ok"), plugins=["memory"], home=home)
    agent.chat("remember all")
    entries = memory_file(home).read_text().strip().split("\n§\n")
    assert sorted(entries) == [f"note {i}" for i in range(8)]


WRITER = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    from hermes_hookspecs import ToolContext
    from hermes_toolset_memory import memory

    home, tag, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
    ctx = ToolContext(
        task_id="t",
        hermes_home=Path(home),
        config={"memory": {"memory_char_limit": 1_000_000}},
    )
    for i in range(count):
        memory({"action": "add", "target": "memory", "content": f"{tag}-{i}"}, ctx)
    """
)


def test_two_processes_adding_at_once_lose_nothing(home, tmp_path):
    script = tmp_path / "writer.py"
    script.write_text(WRITER)
    count = 40
    writers = [
        subprocess.Popen([sys.executable, str(script), str(home), tag, str(count)])
        for tag in ("a", "b")
    ]
    assert [w.wait(timeout=60) for w in writers] == [0, 0]
    entries = memory_file(home).read_text().strip().split("\n§\n")
    expected = {f"{tag}-{i}" for tag in "ab" for i in range(count)}
    assert len(entries) == 2 * count
    assert set(entries) == expected


# --- the prompt ----------------------------------------------------------------------------


def test_the_snapshot_is_frozen_for_the_session_and_fresh_for_the_next(home):
    memory_file(home).parent.mkdir()
    memory_file(home).write_text("old note\n")
    memory_file(home, "USER.md").write_text("Name: Sam\n")
    agent = make_agent(
        tool_call("memory", add("new note")),
        text("saved"),
        plugins=["memory"],
        home=home,
    )
    agent.chat("remember this")
    first, last = agent.client.requests[0], agent.client.last_request
    assert last.system_prompt == first.system_prompt
    assert "old note" in last.system_prompt and "new note" not in last.system_prompt
    assert "MEMORY (your notes) [0% — 8/2,200 chars]" in last.system_prompt
    assert "USER PROFILE (what you know about the user) [1% — 9/1,375 chars]" in last.system_prompt
    assert memory_file(home).read_text() == "old note\n§\nnew note\n"

    later = make_agent(text("hi"), plugins=["memory"], home=home)
    later.chat("hello")
    prompt = later.client.last_request.system_prompt
    assert "old note\n§\nnew note" in prompt
    assert "[1% — 19/2,200 chars]" in prompt


def test_the_layers_and_their_tiers(home):
    memory_file(home).parent.mkdir()
    memory_file(home).write_text("note\n")
    agent = make_agent(text("hi"), plugins=["memory"], home=home)
    agent.chat("hello")
    layers = {b.layer.name: b.layer for b in agent.prompt_layers}
    assert layers["memory.guidance"].tier == "stable"
    assert "memory tool" in layers["memory.guidance"].text
    assert layers["memory.snapshot"].tier == "volatile"
    prompt = agent.client.last_request.system_prompt
    assert prompt.index("persistent memory") < prompt.index("MEMORY (your notes)")


def test_empty_stores_add_only_the_guidance(home):
    agent = make_agent(text("hi"), plugins=["memory"], home=home)
    agent.chat("hello")
    names = [b.layer.name for b in agent.prompt_layers]
    assert names == ["memory.guidance"]


def test_no_layers_when_the_memory_tool_is_not_offered(home):
    from hermes_toolset_memory import hermes_prompt_layers

    from hermes_hookspecs import PromptContext

    memory_file(home).parent.mkdir()
    memory_file(home).write_text("note\n")
    context = PromptContext(model="m", provider="p", tool_names=("clarify",), hermes_home=str(home))
    assert hermes_prompt_layers(context) is None
    offered = PromptContext(model="m", provider="p", tool_names=("memory",), hermes_home=str(home))
    assert [layer.name for layer in hermes_prompt_layers(offered)] == [
        "memory.guidance",
        "memory.snapshot",
    ]


def test_a_store_turned_off_is_neither_shown_nor_written(home):
    memory_file(home).parent.mkdir()
    memory_file(home, "USER.md").write_text("Name: Sam\n")
    config = {"memory": {"user_profile_enabled": False}}
    agent = make_agent(
        tool_call("memory", add("x", target="user")),
        text("ok"),
        plugins=["memory"],
        config=config,
        home=home,
    )
    agent.chat("hi")
    assert "Name: Sam" not in (agent.client.last_request.system_prompt or "")
    assert "turned off (config memory.user_profile_enabled: false)" in agent.messages[2]["content"]


def test_the_hermes_home_service_wins_over_the_environment(home, tmp_path):
    other = tmp_path / "profile-home"
    run_tool(other, add("in the profile"))
    assert (other / "memories" / "MEMORY.md").read_text() == "in the profile\n"
    assert not memory_file(home).exists()


# --- commands --------------------------------------------------------------------------------


@pytest.fixture
def cli(hermes_cli, hermes_home, monkeypatch):
    monkeypatch.setenv("HERMES_PLUGINS", "memory")
    return hermes_cli


def write(home: Path, name: str, content: str) -> None:
    (home / "memories").mkdir(parents=True, exist_ok=True)
    (home / "memories" / name).write_text(content)


def test_show_prints_both_stores_with_usage(cli, hermes_home):
    write(hermes_home, "MEMORY.md", "uses vim\n§\nprefers tabs\n")
    result = cli("memory", "show")
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[0] == (
        f"MEMORY (your notes) [1% — 23/2,200 chars]  {hermes_home / 'memories' / 'MEMORY.md'}"
    )
    assert lines[1:4] == ["uses vim", "§", "prefers tabs"]
    assert lines[5].startswith("USER PROFILE (what you know about the user) [0% — 0/1,375 chars]")
    assert lines[6] == "(empty)"


def test_show_one_target(cli, hermes_home):
    write(hermes_home, "USER.md", "Name: Sam\n")
    result = cli("memory", "show", "--target", "user")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[1:] == ["Name: Sam"]


def test_show_follows_the_profile(cli, hermes_home):
    write(hermes_home / "profiles" / "work", "MEMORY.md", "work note\n")
    result = cli("-p", "work", "memory", "show", "--target", "memory")
    assert result.exit_code == 0
    assert "work note" in result.stdout


def test_an_unknown_target_is_a_usage_error(cli):
    result = cli("memory", "show", "--target", "everything")
    assert result.exit_code == 2
    assert "'everything' is not one of 'memory', 'user'" in result.stderr


def editor_that_appends(tmp_path: Path, addition: str) -> str:
    script = tmp_path / "editor.py"
    script.write_text(
        "import sys, pathlib\n"
        "p = pathlib.Path(sys.argv[1])\n"
        f"p.write_text(p.read_text() + {addition!r})\n"
    )
    return f"{sys.executable} {script}"


def test_edit_opens_the_editor_and_saves(cli, hermes_home, tmp_path, monkeypatch):
    write(hermes_home, "MEMORY.md", "uses vim\n")
    monkeypatch.setenv("EDITOR", editor_that_appends(tmp_path, "§\nedited by hand\n"))
    monkeypatch.delenv("VISUAL", raising=False)
    result = cli("memory", "edit")
    assert result.exit_code == 0, result.stderr
    assert "MEMORY.md: 2 entries" in result.stdout
    assert (hermes_home / "memories" / "MEMORY.md").read_text() == "uses vim\n§\nedited by hand\n"


def test_edit_warns_when_over_the_limit(cli, hermes_home, tmp_path, monkeypatch):
    monkeypatch.setenv("EDITOR", editor_that_appends(tmp_path, "x" * 1400))
    monkeypatch.delenv("VISUAL", raising=False)
    result = cli("memory", "edit", "--target", "user")
    assert result.exit_code == 0
    assert "warning: USER.md is 25 chars over its limit" in result.stderr
    assert (hermes_home / "memories" / "USER.md").read_text() == "x" * 1400 + "\n"


def test_edit_without_saving_changes_nothing(cli, hermes_home, monkeypatch):
    write(hermes_home, "MEMORY.md", "uses vim\n")
    monkeypatch.setenv("EDITOR", "true")
    monkeypatch.delenv("VISUAL", raising=False)
    result = cli("memory", "edit")
    assert result.exit_code == 0
    assert result.stdout.startswith("No changes to ")


def test_clear_with_yes(cli, hermes_home):
    write(hermes_home, "MEMORY.md", "a\n")
    write(hermes_home, "USER.md", "b\n")
    result = cli("memory", "clear", "--yes")
    assert result.exit_code == 0
    assert not list((hermes_home / "memories").glob("*.md"))
    assert result.stdout.count("Cleared ") == 2


def test_clear_asks_first_and_no_keeps_everything(cli, hermes_home):
    write(hermes_home, "MEMORY.md", "a\n")
    result = cli("memory", "clear", input="n\n")
    assert result.exit_code == 1
    assert "Clear MEMORY.md: 1 entry, 1/2,200 chars (0%)? This cannot be undone [y/N]" in (
        result.stdout
    )
    assert "Nothing was cleared." in result.stderr
    assert (hermes_home / "memories" / "MEMORY.md").read_text() == "a\n"


def test_clear_one_target_after_yes(cli, hermes_home):
    write(hermes_home, "MEMORY.md", "a\n")
    write(hermes_home, "USER.md", "b\n")
    result = cli("memory", "clear", "--target", "user", input="y\n")
    assert result.exit_code == 0
    assert (hermes_home / "memories" / "MEMORY.md").exists()
    assert not (hermes_home / "memories" / "USER.md").exists()


def test_clear_when_empty_says_so(cli):
    result = cli("memory", "clear")
    assert result.exit_code == 0
    assert result.stdout.strip() == "Memory is already empty."
