"""Through a real agent: turns that destroy the workspace in the sandbox, then a restore that
brings it back byte for byte."""

from __future__ import annotations

import logging
import threading
from pathlib import Path

import pytest
from hermes_checkpoints.catalog import list_checkpoints
from hermes_checkpoints.operations import open_workspace, restore
from hermes_checkpoints.settings import Settings

from hermes_core.testing import load_plugin, make_agent, text, tool_call, wait_until


def checkpoints_of(home: Path, work: Path) -> list:
    workspace = open_workspace(home, work, create_store=False)
    return list_checkpoints(workspace)


def test_loads_through_its_entry_point():
    record = load_plugin("checkpoints")
    assert record.dist == "hermes-checkpoints"
    assert record.hooks == [
        "hermes_describe_plugins",
        "hermes_post_tool_call",
        "hermes_pre_tool_call",
        "hermes_register_commands",
        "hermes_register_config",
        "hermes_register_slash_commands",
    ]


def test_rm_rf_of_the_project_is_undone(turn, cli, home, work, helpers):
    before = helpers.state(work)
    [out] = turn(tool_call("terminal", {"command": 'cd .. && rm -rf "$OLDPWD"; ls -A "$OLDPWD"'}))
    assert "[exit code:" in out
    assert helpers.state(work) == {}, out
    [checkpoint] = checkpoints_of(home, work)
    assert checkpoint.meta["tool"] == "terminal"

    done = cli("restore", "1")
    assert done.exit_code == 0, done.output + done.stderr
    assert helpers.state(work) == before
    assert f"{len(before)} restored, 0 removed, 0 kept, 0 skipped" in done.output


def test_a_script_that_truncates_every_file_is_undone(turn, cli, work, helpers):
    before = helpers.state(work)
    script = "find . -type f -exec truncate -s 0 {} +; echo ok"
    [out] = turn(tool_call("terminal", {"command": script}))
    assert out.startswith("ok"), out
    assert all(kind == "link" or data == b"" for kind, data in helpers.state(work).values())

    done = cli("restore", "1")
    assert done.exit_code == 0, done.output + done.stderr
    assert helpers.state(work) == before


def test_file_tools_are_undone_and_added_files_removed(turn, cli, home, work, helpers):
    before = helpers.state(work)
    turn(
        tool_call("write_file", {"path": str(work / "README.md"), "content": "overwritten\n"}),
        tool_call(
            "patch",
            {
                "path": str(work / "src" / "app.py"),
                "old_string": "print('hello')\n" * 40,
                "new_string": "print('bye')\n",
            },
        ),
        tool_call("write_file", {"path": str(work / "new" / "deep" / "file.txt"), "content": "x"}),
    )
    assert (work / "README.md").read_text() == "overwritten\n"
    assert (work / "new" / "deep" / "file.txt").exists()
    assert len(checkpoints_of(home, work)) == 1, "one checkpoint for the whole turn"

    done = cli("restore", "1")
    assert done.exit_code == 0, done.stderr
    assert "removed: new/deep/file.txt" in done.output
    assert helpers.state(work) == before
    assert not (work / "new").exists(), "the folders the removal emptied go too"


def test_each_turn_has_its_checkpoint_and_any_can_be_restored(turn, cli, home, work, helpers):
    first = helpers.state(work)
    turn(tool_call("terminal", {"command": "echo one > README.md"}))
    second = helpers.state(work)
    turn(tool_call("terminal", {"command": "echo two > README.md; rm src/app.py"}))
    assert len(checkpoints_of(home, work)) == 2

    assert cli("restore", "1").exit_code == 0
    assert helpers.state(work) == second
    # the restore's own checkpoint is now number 1: the turns' are 2 and 3
    assert cli("restore", "3").exit_code == 0
    assert helpers.state(work) == first


def test_read_only_tools_take_no_checkpoint(turn, home, work):
    turn(
        tool_call("read_file", {"path": str(work / "README.md")}),
        tool_call("search_files", {"pattern": "hello", "path": str(work)}),
    )
    assert checkpoints_of(home, work) == []
    assert not (home / "checkpoints").exists()


def test_an_unknown_tool_takes_one_all_the_same(home, work):
    from hermes_hookspecs import Tool, Toolset, hookimpl

    class Weather:
        @hookimpl
        def hermes_register_toolsets(self, register):
            register(
                Toolset(
                    name="acme",
                    description="x",
                    tools=[
                        Tool(
                            name="acme_forecast",
                            description="a tool nobody knows",
                            parameters={"type": "object", "properties": {}},
                            handler=lambda a, c: "sunny",
                        )
                    ],
                )
            )

    agent = make_agent(
        tool_call("acme_forecast", {}),
        text("done"),
        plugins=["checkpoints", Weather()],
        home=home,
        config={"terminal": {"cwd": str(work)}},
    )
    agent.chat("go")
    agent.close()
    assert len(checkpoints_of(home, work)) == 1


@pytest.mark.parametrize("backend", ["docker", "ssh", "modal"])
def test_a_remote_backend_takes_no_checkpoint(turn, home, work, backend, caplog):
    caplog.set_level(logging.INFO, logger="hermes.checkpoints")
    turn(
        tool_call("terminal", {"command": "rm -rf ./*"}),
        config={"terminal": {"backend": backend}},
        plugins=["terminal", "checkpoints"],
    )
    assert not (home / "checkpoints").exists()
    assert [r.getMessage() for r in caplog.records] == [
        f"checkpoints: terminal.backend is {backend}: its files are not on this machine, so "
        "hermes takes no checkpoint of them"
    ]
    assert (work / "README.md").exists(), "the command never ran here"


def test_disabled_takes_none(turn, home, work):
    turn(
        tool_call("terminal", {"command": "echo x > README.md"}),
        config={"checkpoints": {"enabled": False}},
    )
    assert not (home / "checkpoints").exists()


def test_an_agent_without_a_home_takes_none_and_says_so(work, caplog):
    caplog.set_level(logging.INFO, logger="hermes.checkpoints")
    agent = make_agent(
        tool_call("terminal", {"command": "echo x > README.md"}),
        text("done"),
        plugins=["terminal", "local", "checkpoints"],
        config={"terminal": {"cwd": str(work)}},
        approval_callback=lambda request: "once",
    )
    agent.chat("go")
    agent.close()
    assert (work / "README.md").read_text() == "x\n"
    assert "no hermes home" in caplog.text


def test_when_no_checkpoint_can_be_taken_the_change_is_refused(turn, home, work):
    (home / "checkpoints").write_text("a file where the store's folder should be")
    [out] = turn(tool_call("terminal", {"command": "rm README.md"}))
    assert out.startswith("BLOCKED: no checkpoint of the workspace could be taken"), out
    assert "checkpoints.enabled: false" in out and "\n" not in out.split("(rule")[0]
    assert (work / "README.md").exists()


def test_a_restore_is_refused_while_a_call_of_the_agent_runs(turn, home, work):
    turn(tool_call("terminal", {"command": "echo one > README.md"}))
    flag = work / "started"
    finished = threading.Event()

    def slow_turn():
        try:
            turn(tool_call("terminal", {"command": "touch started; sleep 3; echo two > README.md"}))
        finally:
            finished.set()

    thread = threading.Thread(target=slow_turn)
    thread.start()
    try:
        wait_until(flag.exists, timeout=30)
        workspace = open_workspace(home, work)
        from hermes_checkpoints.store import CheckpointError

        with pytest.raises(CheckpointError, match="a turn of the agent is changing this"):
            restore(workspace, Settings(), "1", [], dry_run=False)
    finally:
        thread.join(60)
    assert finished.is_set()
    report = restore(open_workspace(home, work), Settings(), "1", [], dry_run=False)
    assert report.count("restore") >= 1
    assert (work / "README.md").read_text() == "one\n"


def test_the_users_own_repository_is_never_touched(turn, cli, work, helpers):
    helpers.user_git(work, "init", "-q")
    helpers.user_git(work, "add", "-A")
    helpers.user_git(work, "commit", "-qm", "start")
    git_before = helpers.git_tree_hash(work / ".git")
    before = helpers.state(work)
    turn(tool_call("terminal", {"command": "rm -rf src docs README.md && echo junk > new.txt"}))
    assert cli("restore", "1").exit_code == 0
    assert helpers.state(work) == before
    assert helpers.git_tree_hash(work / ".git") == git_before
    assert helpers.user_git(work, "status", "--porcelain") == ""


def test_what_a_program_of_the_turn_changes_is_covered_too(home, work, helpers):
    """A program the turn's command runs (a Python script) changes files no tool call names:
    the snapshot is of the files, whatever changed them."""
    (work / "wipe.py").write_text(
        "import pathlib\nfor p in pathlib.Path('.').rglob('*'):\n"
        "    if p.is_file() and not p.is_symlink() and p.name != 'wipe.py':\n"
        "        p.write_bytes(b'')\n"
    )
    before = helpers.state(work)
    agent = make_agent(
        tool_call("terminal", {"command": "python3 wipe.py"}),
        text("done"),
        plugins=["terminal", "local", "checkpoints"],
        home=home,
        config={"terminal": {"cwd": str(work)}},
        approval_callback=lambda request: "once",
    )
    agent.chat("go")
    agent.close()
    assert helpers.state(work) != before
    report = restore(open_workspace(home, work), Settings(), "1", [], dry_run=False)
    assert helpers.state(work) == before
    assert report.count("keep") == 0


def test_the_root_folder_as_workspace_takes_none(turn, home, caplog):
    caplog.set_level(logging.INFO, logger="hermes.checkpoints")
    turn(tool_call("terminal", {"command": "true"}), config={"terminal": {"cwd": "/"}})
    assert "checkpoints: the workspace / is /: no checkpoint" in caplog.text
    assert not (home / "checkpoints").exists()


def test_a_subagents_changes_are_the_parents_turns(home, work, helpers):
    import re

    from hermes_core.testing import ScriptedModel

    def model(request):
        system = request.messages[0]["content"] if request.messages[0]["role"] == "system" else ""
        results = [m for m in request.messages if m["role"] == "tool"]
        if re.search(r"^Your task: edit$", system, re.M):
            if not results:
                return tool_call("terminal", {"command": "echo child > src/app.py; : > run.sh"})
            return text("edited")
        steps = [
            tool_call("terminal", {"command": "echo parent > README.md"}),
            tool_call("delegate_task", {"goal": "edit"}),
            tool_call("terminal", {"command": "echo after > docs/later.md"}),
        ]
        return steps[len(results)] if len(results) < len(steps) else text("done")

    before = helpers.state(work)
    agent = make_agent(
        model=ScriptedModel(fn=model),
        plugins=["terminal", "local", "delegation", "checkpoints"],
        home=home,
        config={"terminal": {"cwd": str(work)}, "toolsets": ["terminal", "delegation"]},
        approval_callback=lambda request: "once",
    )
    agent.chat("go")
    agent.close()
    assert (work / "src" / "app.py").read_text() == "child\n"
    assert len(checkpoints_of(home, work)) == 1, "the subagent works under the parent's"
    report = restore(open_workspace(home, work), Settings(), "1", [], dry_run=False)
    assert report.count("keep") == 0, [c.line() for c in report.changes]
    assert helpers.state(work) == before
