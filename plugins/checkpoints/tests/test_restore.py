"""Restores with real git and real files: hand edits kept, big files skipped, awkward names,
links and nested repositories. A turn here is what the hooks do around an agent's calls: a
checkpoint before, the changes, a record of what the turn left."""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from hermes_checkpoints.catalog import list_checkpoints
from hermes_checkpoints.operations import (
    RestoreReport,
    checkpoint_before_turn,
    open_workspace,
    record_after,
    restore,
)
from hermes_checkpoints.settings import Settings
from hermes_checkpoints.snapshot import Workspace


@pytest.fixture
def workspace(home: Path, work: Path) -> Workspace:
    return open_workspace(home, work)


def agent_turn(
    workspace: Workspace, change: Callable[[], object], settings: Settings | None = None
):
    settings = settings or Settings()
    checkpoint = checkpoint_before_turn(workspace, settings, {"tool": "terminal"})
    change()
    record_after(workspace, settings, checkpoint)
    return checkpoint


def undo(workspace: Workspace, spec: str = "1", *paths: bytes, settings=None, dry_run=False):
    return restore(workspace, settings or Settings(), spec, list(paths), dry_run)


def lines(report: RestoreReport) -> list[str]:
    return [c.line(report.dry_run) for c in report.changes]


def test_a_hand_edit_after_the_turn_is_kept_and_reported(workspace, work, helpers):
    agent_turn(
        workspace,
        lambda: [
            (work / "README.md").write_text("agent\n"),
            (work / "src" / "app.py").write_text("agent\n"),
        ],
    )
    (work / "README.md").write_text("my own words\n")
    report = undo(workspace)
    assert (work / "README.md").read_text() == "my own words\n"
    assert (work / "src" / "app.py").read_text() == "print('hello')\n" * 40
    assert "kept: README.md (changed by hand since)" in lines(report)
    assert "restored: src/app.py" in lines(report)


def test_a_hand_edit_between_two_turns_is_kept_when_restoring_past_it(workspace, work, helpers):
    agent_turn(workspace, lambda: (work / "README.md").write_text("agent one\n"))
    (work / "README.md").write_text("mine, between the turns\n")
    (work / "mine.txt").write_text("a file I made\n")
    agent_turn(workspace, lambda: (work / "src" / "app.py").write_text("agent two\n"))
    report = undo(workspace, "2")
    assert (work / "README.md").read_text() == "mine, between the turns\n"
    assert (work / "mine.txt").read_text() == "a file I made\n", "never removed"
    assert (work / "src" / "app.py").read_text() == "print('hello')\n" * 40
    assert {
        "kept: README.md (changed by hand since)",
        "kept: mine.txt (changed by hand since)",
    } <= set(lines(report))


def test_restoring_the_checkpoint_after_a_hand_edit_leaves_the_edit_alone(workspace, work):
    agent_turn(workspace, lambda: (work / "README.md").write_text("agent one\n"))
    (work / "README.md").write_text("mine\n")
    agent_turn(workspace, lambda: (work / "src" / "app.py").write_text("agent two\n"))
    report = undo(workspace, "1")  # the checkpoint taken after my edit: it holds it
    assert (work / "README.md").read_text() == "mine\n"
    assert [c.path for c in report.changes] == [b"src/app.py"]


def test_a_file_deleted_by_hand_comes_back(workspace, work):
    agent_turn(workspace, lambda: (work / "README.md").write_text("agent\n"))
    (work / "README.md").unlink()
    undo(workspace)
    assert (work / "README.md").read_text() == "# Project\n"


def test_a_restore_can_be_undone(workspace, work, helpers):
    before = helpers.state(work)
    agent_turn(
        workspace,
        lambda: [
            (work / "README.md").write_text("agent\n"),
            (work / "added.txt").write_text("new\n"),
        ],
    )
    damaged = helpers.state(work)
    report = undo(workspace)
    assert helpers.state(work) == before
    assert report.before is not None and report.before.kind == "restore"
    undo(workspace, report.before.id)
    assert helpers.state(work) == damaged


def test_a_dry_run_changes_nothing(workspace, work, helpers):
    agent_turn(workspace, lambda: (work / "README.md").write_text("agent\n"))
    damaged = helpers.state(work)
    count = len(list_checkpoints(workspace))
    report = undo(workspace, dry_run=True)
    assert lines(report) == ["would restore: README.md"]
    assert helpers.state(work) == damaged
    assert len(list_checkpoints(workspace)) == count


def test_only_the_paths_given_are_restored(workspace, work):
    agent_turn(
        workspace,
        lambda: [
            (work / "README.md").write_text("agent\n"),
            (work / "docs" / "x.md").write_text("x\n"),
            (work / "src" / "app.py").write_text("agent\n"),
        ],
    )
    report = undo(workspace, "1", b"README.md", b"docs")
    assert sorted(lines(report)) == ["removed: docs/x.md", "restored: README.md"]
    assert (work / "src" / "app.py").read_text() == "agent\n"


def test_a_file_over_the_size_limit_is_skipped_never_deleted(workspace, work):
    settings = Settings(max_file_mb=0.01)  # about 10 KB
    big = work / "big.log"
    agent_turn(workspace, lambda: big.write_bytes(b"x" * 20_000), settings)
    report = undo(workspace, settings=settings)
    assert big.read_bytes() == b"x" * 20_000
    assert lines(report) == [] and report.changes == []
    stored = open_workspace(workspace.store.path.parent.parent, work)
    [checkpoint] = list_checkpoints(stored)
    # the next checkpoint records the big file as skipped; a restore leaves it alone
    agent_turn(workspace, lambda: big.write_bytes(b"y" * 30_000), settings)
    report = undo(workspace, checkpoint.id, settings=settings)
    assert big.read_bytes() == b"y" * 30_000
    assert lines(report) == []


def test_a_small_file_the_agent_made_big_is_skipped_not_overwritten(workspace, work):
    settings = Settings(max_file_mb=0.01)
    agent_turn(workspace, lambda: (work / "README.md").write_bytes(b"z" * 20_000), settings)
    report = undo(workspace, settings=settings)
    assert (work / "README.md").read_bytes() == b"z" * 20_000
    assert lines(report) == ["skipped: README.md (over checkpoints.max_file_mb: 0.0 MB)"]


def test_a_big_file_the_agent_made_small_is_left_as_it_is(workspace, work):
    settings = Settings(max_file_mb=0.01)
    (work / "huge.dat").write_bytes(b"h" * 20_000)
    agent_turn(workspace, lambda: (work / "huge.dat").write_bytes(b"small"), settings)
    report = undo(workspace, settings=settings)
    assert (work / "huge.dat").read_bytes() == b"small"
    [line] = lines(report)
    assert line.startswith("skipped: huge.dat (left out of the checkpoint")


def test_awkward_names_come_back_byte_for_byte(workspace, work, helpers):
    before = helpers.state(work)
    root = os.fsencode(str(work))
    agent_turn(
        workspace,
        lambda: [
            os.unlink(os.path.join(root, helpers.NEWLINE_NAME)),
            os.unlink(os.path.join(root, helpers.LATIN1_NAME)),
            (work / helpers.UNICODE_NAME).write_text("changed"),
            (work / "-rf").unlink(),
            (work / "with space.txt").write_text("changed"),
        ],
    )
    report = undo(workspace)
    assert helpers.state(work) == before
    shown = sorted(lines(report))
    assert shown == sorted(
        [
            'restored: "new\\nline.txt"',
            'restored: "caf\\xe9.txt"',
            f"restored: {helpers.UNICODE_NAME}",
            "restored: -rf",
            "restored: with space.txt",
        ]
    )
    assert all("\n" not in line for line in shown)


def test_line_endings_attributes_and_modes_are_kept(workspace, work):
    """The workspace's .gitattributes (eol=crlf, a filter) never changes what is stored."""
    crlf = (work / "src" / "crlf.txt").read_bytes()
    agent_turn(
        workspace,
        lambda: [(work / "src" / "crlf.txt").write_bytes(b"lf\n"), (work / "run.sh").chmod(0o644)],
    )
    undo(workspace)
    assert (work / "src" / "crlf.txt").read_bytes() == crlf
    assert os.stat(work / "run.sh").st_mode & 0o100


def test_links_are_restored_as_links_and_never_followed(workspace, work, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "app.py").write_text("not yours\n")

    def replace_src_with_a_link():
        for child in (work / "src").iterdir():
            child.unlink()
        (work / "src").rmdir()
        os.symlink(outside, work / "src")
        (work / "readme-link").unlink()
        os.symlink("/etc/passwd", work / "readme-link")

    agent_turn(workspace, replace_src_with_a_link)
    report = undo(workspace)
    assert (outside / "app.py").read_text() == "not yours\n"
    assert not (work / "src").is_symlink()
    assert (work / "src" / "app.py").read_text() == "print('hello')\n" * 40
    assert os.readlink(work / "readme-link") == "README.md"
    assert "restored: readme-link (a symbolic link to README.md)" in lines(report)


def test_a_link_made_by_hand_is_not_followed_by_a_restore(workspace, work, tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    agent_turn(
        workspace, lambda: [(work / "docs" / name).unlink() for name in os.listdir(work / "docs")]
    )
    (work / "docs").rmdir()
    os.symlink(outside, work / "docs")  # by hand, after the turn
    report = undo(workspace)
    assert list(outside.iterdir()) == []
    assert sorted(lines(report)) == [
        "kept: docs (changed by hand since)",
        "skipped: docs/ünïcødé 日本.md (a folder on its path is a symbolic link)",
    ]


def test_nested_repositories_are_reported_and_left_alone(workspace, work, helpers):
    vendor = work / "vendor" / "lib"
    vendor.mkdir(parents=True)
    (vendor / "lib.c").write_text("int x;\n")
    helpers.user_git(vendor, "init", "-q")
    agent_turn(
        workspace,
        lambda: [
            (vendor / "lib.c").write_text("changed\n"),
            (work / "README.md").write_text("agent\n"),
        ],
    )
    report = undo(workspace)
    assert (vendor / "lib.c").read_text() == "changed\n"
    assert report.nested == [b"vendor/lib"]
    assert lines(report) == ["restored: README.md"]


def test_a_folder_that_became_a_file_and_back(workspace, work, helpers):
    before = helpers.state(work)

    def swap():
        for child in (work / "docs").rglob("*"):
            if child.is_file():
                child.unlink()
        for child in sorted((work / "docs").rglob("*"), reverse=True):
            child.rmdir()
        (work / "docs").rmdir()
        (work / "docs").write_text("a file now\n")
        (work / "README.md").unlink()
        (work / "README.md").mkdir()
        (work / "README.md" / "inside.txt").write_text("x\n")

    agent_turn(workspace, swap)
    undo(workspace)
    assert helpers.state(work) == before


def test_errors_are_one_line(workspace):
    from hermes_checkpoints.store import CheckpointError

    with pytest.raises(CheckpointError) as caught:
        undo(workspace, "3")
    assert str(caught.value) == "this workspace has no checkpoints yet"
    agent_turn(workspace, lambda: None)
    with pytest.raises(CheckpointError, match=r"^no checkpoint number 3: this workspace has 1 "):
        undo(workspace, "3")
    with pytest.raises(CheckpointError, match=r"^no checkpoint 'zzzz' in this workspace"):
        undo(workspace, "zzzz")


def test_a_hermes_home_inside_the_workspace_is_never_recorded(work, helpers):
    home = work / ".hermes"
    (home / "sessions.db").parent.mkdir()
    (home / "sessions.db").write_text("my sessions\n")
    workspace = open_workspace(home, work)
    agent_turn(workspace, lambda: (work / "README.md").write_text("agent\n"))
    (home / "sessions.db").write_text("more sessions\n")
    report = undo(workspace)
    assert lines(report) == ["restored: README.md"]
    assert (home / "sessions.db").read_text() == "more sessions\n"
    assert (home / "checkpoints" / "store.git").is_dir()
