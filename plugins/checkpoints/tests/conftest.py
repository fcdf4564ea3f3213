"""Fixtures of the checkpoint tests: a home, a workspace full of awkward files, agent turns that
run in the sandbox as the local environment runs them, and ``hermes checkpoints`` commands.

Everything is real: git, the files, the agent loop with the terminal and file toolsets. File
names and contents that would be awkward in a shell are written from Python."""

from __future__ import annotations

import os
import stat
import subprocess
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from hermes_checkpoints.turns import forget_turns

from hermes_core.testing import make_agent, text

NEWLINE_NAME = b"new\nline.txt"
LATIN1_NAME = b"caf\xe9.txt"  # not UTF-8
UNICODE_NAME = "docs/ünïcødé 日本.md"


def state(root: Path) -> dict[bytes, tuple[str, bytes]]:
    """Every file and link under ``root`` (``.git`` folders left out): path -> (kind, bytes);
    ``kind`` is ``file``, ``exec`` (a file with its execute bit) or ``link`` (bytes: the
    target)."""
    found: dict[bytes, tuple[str, bytes]] = {}
    base = os.fsencode(str(root))
    for folder, dirs, files in os.walk(base):
        dirs[:] = [d for d in dirs if d != b".git" and not os.path.islink(os.path.join(folder, d))]
        links = [d for d in os.listdir(folder) if os.path.islink(os.path.join(folder, d))]
        for name in sorted(set(files) | set(links)):
            full = os.path.join(folder, name)
            relative = os.path.relpath(full, base)
            info = os.lstat(full)
            if stat.S_ISLNK(info.st_mode):
                found[relative] = ("link", os.readlink(full))
            else:
                kind = "exec" if info.st_mode & stat.S_IXUSR else "file"
                with open(full, "rb") as handle:
                    found[relative] = (kind, handle.read())
    return found


def fill(root: Path) -> None:
    """A small project with awkward names and contents."""
    (root / "src").mkdir(parents=True)
    (root / "docs").mkdir()
    (root / "README.md").write_text("# Project\n")
    (root / "src" / "app.py").write_text("print('hello')\n" * 40)
    (root / "src" / "data.bin").write_bytes(bytes(range(256)) * 8)
    (root / "src" / "crlf.txt").write_bytes(b"one\r\ntwo\r\nthree\n")
    (root / "with space.txt").write_text("spaces\n")
    (root / "-rf").write_text("a name that looks like an option\n")
    (root / ".env").write_text("TOKEN=not-a-real-one\n")
    (root / ".gitignore").write_text(".env\n*.bin\n")
    (root / ".gitattributes").write_text("* text eol=crlf\n*.txt filter=nosuch\n")
    (root / "run.sh").write_text("#!/bin/sh\necho run\n")
    (root / "run.sh").chmod(0o755)
    (root / "empty.txt").write_bytes(b"")
    os.symlink("README.md", root / "readme-link")
    root_bytes = os.fsencode(str(root))
    for name in (NEWLINE_NAME, LATIN1_NAME):
        with open(os.path.join(root_bytes, name), "wb") as handle:
            handle.write(b"awkward name\n")
    (root / UNICODE_NAME).write_text("ünïcødé\n")


@pytest.fixture(autouse=True)
def _fresh_turns() -> Iterator[None]:
    forget_turns()
    yield
    forget_turns()


@pytest.fixture
def home(hermes_home: Path) -> Path:
    return hermes_home


@pytest.fixture
def work(tmp_path: Path) -> Path:
    root = tmp_path / "work"
    root.mkdir()
    fill(root)
    return Path(os.path.realpath(root))


def results(agent: Any) -> list[str]:
    return [m["content"] for m in agent.messages if m["role"] == "tool"]


@pytest.fixture
def turn(home: Path, work: Path) -> Callable[..., list[str]]:
    """Run one agent turn making the given calls (terminal, file tools) in ``work``, approved."""

    def run(*steps: Any, config: dict[str, Any] | None = None, **kwargs: Any) -> list[str]:
        settings: dict[str, Any] = {"terminal": {"cwd": str(work)}}
        for key, value in (config or {}).items():
            settings[key] = {**settings.get(key, {}), **value}
        agent = make_agent(
            *steps,
            text("done"),
            plugins=kwargs.pop("plugins", ["terminal", "local", "file", "checkpoints"]),
            home=kwargs.pop("agent_home", home),
            config=settings,
            approval_callback=lambda request: "once",
            **kwargs,
        )
        try:
            agent.chat("go")
            return results(agent)
        finally:
            agent.close()

    return run


@pytest.fixture
def cli(hermes_cli: Any, work: Path) -> Callable[..., Any]:
    """``hermes checkpoints ARGS --workspace work``."""

    def run(*args: str, workspace: Path | None = None) -> Any:
        return hermes_cli(
            "--plugins", "checkpoints", "checkpoints", *args, "--workspace", str(workspace or work)
        )

    return run


def git_tree_hash(folder: Path) -> str:
    """A hash of every file of a folder (for checking that a ``.git`` stayed untouched)."""
    import hashlib

    digest = hashlib.sha256()
    for path in sorted(folder.rglob("*")):
        digest.update(str(path.relative_to(folder)).encode())
        if path.is_file() and not path.is_symlink():
            digest.update(path.read_bytes())
    return digest.hexdigest()


def user_git(work: Path, *args: str) -> str:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    env.update(GIT_CONFIG_GLOBAL=os.devnull, GIT_CONFIG_NOSYSTEM="1")
    done = subprocess.run(
        ["git", "-c", "user.name=me", "-c", "user.email=me@example.com", *args],
        cwd=work,
        env=env,
        capture_output=True,
        check=True,
    )
    return done.stdout.decode("utf-8", "replace")


@pytest.fixture
def helpers() -> Any:
    """This module's helpers, for the test files (which cannot import a conftest)."""
    from types import SimpleNamespace

    return SimpleNamespace(
        state=state,
        fill=fill,
        git_tree_hash=git_tree_hash,
        user_git=user_git,
        NEWLINE_NAME=NEWLINE_NAME,
        LATIN1_NAME=LATIN1_NAME,
        UNICODE_NAME=UNICODE_NAME,
    )
