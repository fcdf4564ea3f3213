"""``hermes checkpoints list | diff | restore`` and what ``hermes doctor`` says, as a person runs
them."""

from __future__ import annotations

from pathlib import Path

from hermes_core.testing import tool_call


def test_list_diff_restore(turn, cli, work, helpers):
    assert cli("list").output.startswith(f"no checkpoints of {work} yet")
    before = helpers.state(work)
    turn(tool_call("terminal", {"command": "echo changed > README.md; rm run.sh; echo n > n.txt"}))

    listing = cli("list")
    assert listing.exit_code == 0
    header, row, footer = listing.output.splitlines()
    assert header.split() == ["N", "ID", "TAKEN", "TURN", "CHANGED", "WHAT"]
    assert row.startswith("1  ") and "3 files" in row and "before a turn (terminal" in row

    diff = cli("diff", "1")
    assert diff.exit_code == 0
    assert "-# Project\n+changed\n" in diff.output
    assert "diff --git a/run.sh b/run.sh\ndeleted file mode 100755" in diff.output
    only = cli("diff", "1", str(work / "README.md"))
    assert "run.sh" not in only.output and "README.md" in only.output

    dry = cli("restore", "1", "--dry-run")
    assert dry.exit_code == 0
    assert dry.output.splitlines()[1:] == [
        "would restore: README.md",
        "would remove: n.txt",
        "would restore: run.sh",
        "2 restored, 1 removed, 0 kept, 0 skipped (dry run: nothing changed)",
    ]
    assert (work / "n.txt").exists()

    done = cli("restore", "1")
    assert done.exit_code == 0
    assert helpers.state(work) == before
    last = done.output.splitlines()[-1]
    assert last.startswith("the state before this restore is checkpoint 1 (")
    assert "undoes it" in last
    assert len(cli("list").output.splitlines()) == 4


def test_errors_are_one_line(cli, turn, work, tmp_path):
    done = cli("restore", "1")
    assert done.exit_code == 1
    assert done.stderr.strip() == "hermes: error: this workspace has no checkpoints yet"
    turn(tool_call("terminal", {"command": "echo x > README.md"}))
    for args, message in [
        (
            ("restore", "7"),
            "no checkpoint number 7: this workspace has 1 (hermes checkpoints list)",
        ),
        (
            ("diff", "beef"),
            "no checkpoint 'beef' in this workspace: give a number or an id of "
            "hermes checkpoints list",
        ),
        (("restore", "1", str(tmp_path)), f"{tmp_path} is outside the workspace {work}"),
    ]:
        result = cli(*args)
        assert result.exit_code == 1
        assert result.stderr.strip() == f"hermes: error: {message}", result.stderr
    missing = cli("list", workspace=tmp_path / "nope")
    assert missing.exit_code != 0 and len(missing.stderr.strip().splitlines()) == 1


def test_a_persons_checkpoints_are_theirs(home, work, cli, turn, hermes_cli):
    turn(tool_call("terminal", {"command": "echo x > README.md"}), person="alice")
    assert (home / "people" / "alice" / "checkpoints" / "store.git").is_dir()
    assert not (home / "checkpoints").exists()
    assert "no checkpoints" in cli("list").output
    theirs = hermes_cli(
        "--plugins",
        "checkpoints",
        "checkpoints",
        "list",
        "--person",
        "alice",
        "--workspace",
        str(work),
    )
    assert theirs.exit_code == 0 and "1 files" in theirs.output


def test_doctor_reports_the_store(hermes_cli, turn, home: Path):
    doctor = hermes_cli("--plugins", "checkpoints", "doctor", "--no-network")
    assert "plugin checkpoints/store empty" in doctor.output
    turn(tool_call("terminal", {"command": "echo x > README.md"}))
    doctor = hermes_cli("--plugins", "checkpoints", "doctor", "--no-network")
    [line] = [ln for ln in doctor.output.splitlines() if "checkpoints/store" in ln]
    assert line.startswith("ok   plugin checkpoints/store ") and line.endswith(" KB")
    listing = hermes_cli("--plugins", "checkpoints", "plugins", "list")
    assert "checkpoints/store: note: 1 checkpoints of 1 workspaces" in listing.output


def test_doctor_reports_checkpoints_turned_off(hermes_cli, home: Path):
    (home / "config.yaml").write_text("checkpoints:\n  enabled: false\n")
    doctor = hermes_cli("--plugins", "checkpoints", "doctor", "--no-network")
    assert "--   plugin checkpoints/store (disabled: checkpoints.enabled is false)" in doctor.output


def test_config_keys_are_declared(hermes_cli, home: Path):
    shown = hermes_cli("--plugins", "checkpoints", "config", "show", "--defaults")
    assert shown.exit_code == 0, shown.stderr
    for key in ("enabled", "keep", "max_age_days", "max_total_mb", "max_file_mb", "exclude"):
        assert key in shown.output
    assert (
        hermes_cli("--plugins", "checkpoints", "config", "get", "checkpoints.keep").output == "50\n"
    )
    wrong = hermes_cli("--plugins", "checkpoints", "config", "set", "checkpoints.keep", "many")
    assert wrong.exit_code != 0
    assert "checkpoints.keep: expected an integer, got 'many'" in wrong.stderr


def test_paths_are_read_from_the_workspace_when_run_elsewhere(
    turn, cli, work, tmp_path, monkeypatch
):
    turn(tool_call("terminal", {"command": "echo x > README.md; echo y > run.sh"}))
    monkeypatch.chdir(tmp_path)
    done = cli("restore", "1", "README.md")
    assert done.exit_code == 0, done.stderr
    assert done.output.splitlines()[1:3] == [
        "restored: README.md",
        "1 restored, 0 removed, 0 kept, 0 skipped",
    ]
    assert (work / "run.sh").read_text() == "y\n"
    monkeypatch.chdir(work / "src")
    done = cli("restore", "2", "../run.sh")
    assert done.exit_code == 0 and "restored: run.sh" in done.output
