"""``Sandbox.path_sight`` says what a command sees, and a real command in real bubblewrap agrees:
for every path of a home folder outside /tmp, a path said to be seen is read by ``cat`` in the
sandbox with its real content, and a path said to be unseen or hidden is not."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
from hermes_env_sandbox import HomeAllow, Sandbox, SandboxSettings, unavailable_reason

needs_sandbox = pytest.mark.skipif(
    unavailable_reason() is not None, reason=f"no sandbox here: {unavailable_reason()}"
)


@pytest.fixture
def home() -> Iterator[Path]:
    root = Path(tempfile.mkdtemp(prefix="hermes-test-view-", dir="/var/tmp"))
    home = root / "home"
    files = {
        "project/src/main.py": "main",
        "project/.hermes-local/state": "project-state",
        ".newtool/token": "token",
        "Documents/plan.txt": "plan",
        ".ssh/id_ed25519": "key",
        ".hermes/config.yaml": "hermes",
        ".hermes/workspaces/alice/notes": "alice",
        ".cargo/bin/tool": "tool",
        ".cargo/credentials.toml": "cargo-token",
        ".cache/tool/x": "cache",
        ".secret-dir/inner": "inner",
    }
    for name, content in files.items():
        (home / name).parent.mkdir(parents=True, exist_ok=True)
        (home / name).write_text(content)
    (root / "tmp").mkdir()
    (home / "project/link-out").symlink_to(home / ".newtool/token")
    yield home
    subprocess.run(["chmod", "-R", "u+w", str(root)], check=False)
    shutil.rmtree(root, ignore_errors=True)


def box(home: Path, settings: SandboxSettings, workspace: str = "project") -> Sandbox:
    return Sandbox(
        settings,
        workspace=str(home / workspace),
        tmp=str(home.parent / "tmp"),
        hermes_home=str(home / ".hermes"),
        home=str(home),
        search_path="/usr/bin:/bin",
    )


SETTINGS = SandboxSettings(
    hide=("~/.secret-dir",), home_allow=(HomeAllow("~/.cache/tool", writable=True),)
)


@needs_sandbox
def test_the_sights_of_a_home_folder(home):
    sandbox = box(home, SETTINGS)
    sight = {
        p: sandbox.path_sight(str(home / p))
        for p in (
            "project/src/main.py",
            ".newtool/token",
            "Documents/plan.txt",
            ".ssh/id_ed25519",
            ".hermes/config.yaml",
            ".cargo/bin/tool",
            ".cargo/credentials.toml",
            ".cache/tool/x",
            ".secret-dir/inner",
            "project/link-out",
        )
    }
    assert sight == {
        "project/src/main.py": "write",
        ".newtool/token": "unseen",
        "Documents/plan.txt": "unseen",
        ".ssh/id_ed25519": "hidden",
        ".hermes/config.yaml": "hidden",
        ".cargo/bin/tool": "read",
        ".cargo/credentials.toml": "hidden",
        ".cache/tool/x": "write",
        ".secret-dir/inner": "hidden",
        "project/link-out": "unseen",  # judged where it leads too
    }
    assert sandbox.path_sight("/usr/bin/env") == "read"
    assert sandbox.path_sight(str(home.parent / "tmp" / "x")) == "write"  # the task's /tmp
    assert sandbox.path_sight(tempfile.gettempdir() + "/elsewhere") == "unseen"


@needs_sandbox
def test_a_workspace_inside_hermes_home_shows_and_nothing_else_of_it(home):
    sandbox = box(home, SandboxSettings(), workspace=".hermes/workspaces/alice")
    assert sandbox.path_sight(str(home / ".hermes/workspaces/alice/notes")) == "write"
    assert sandbox.path_sight(str(home / ".hermes/config.yaml")) == "hidden"
    read_only = box(home, SandboxSettings("read-only"))
    assert read_only.path_sight(str(home / "project/src/main.py")) == "read"


def _cat(sandbox: Sandbox, path: str) -> str:
    argv, fds = sandbox.command(["cat", path], cwd=sandbox.workspace)
    try:
        done = subprocess.run(
            argv,
            capture_output=True,
            text=True,
            timeout=60,
            pass_fds=fds,
            check=False,
            env={"PATH": "/usr/bin:/bin", "HOME": sandbox.home, "LC_ALL": "C"},
        )
    finally:
        for fd in fds:
            os.close(fd)
    return done.stdout


@needs_sandbox
def test_the_sight_agrees_with_what_a_command_reads(home):
    sandbox = box(home, SETTINGS)
    checked = 0
    for path in sorted(p for p in home.rglob("*") if p.is_file()):
        content = path.read_text()
        sight = sandbox.path_sight(str(path))
        seen = _cat(sandbox, str(path)) == content
        assert seen == (sight in ("read", "write")), (path, sight)
        checked += 1
    assert checked >= 10
