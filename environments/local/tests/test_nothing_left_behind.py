"""A one-shot chat that ran a sandboxed command leaves nothing behind when it exits: no process
of its own and no zombie, even where the machine's first process does not reap orphans (a
container without an init, or this test machine)."""

from __future__ import annotations

import contextlib
import ctypes
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hermes_env_sandbox.bwrap import unavailable_reason

from hermes_core.testing import tool_call


def _children() -> dict[int, tuple[str, str]]:
    """This process's child processes (zombies too): pid -> (name, state)."""
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2 :].split()
        if int(fields[1]) == os.getpid():
            found[int(entry)] = (stat[stat.index("(") + 1 : stat.rindex(")")], fields[0])
    return found


@contextlib.contextmanager
def _subreaper() -> Iterator[None]:
    """Make this process the reaper of its orphaned descendants for the block
    (``PR_SET_CHILD_SUBREAPER``)."""
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(36, 1, 0, 0, 0) != 0:
        pytest.skip("this kernel cannot make a process a child subreaper")
    try:
        yield
    finally:
        libc.prctl(36, 0, 0, 0, 0)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="the sandbox needs Linux")
def test_a_one_shot_chat_with_a_command_leaves_no_process_and_no_zombie(
    tmp_path: Path, fake_llm: Any
) -> None:
    problem = unavailable_reason()
    if problem is not None:
        if os.environ.get("CI"):
            pytest.fail(problem)
        pytest.skip(problem)
    hermes = shutil.which("hermes", path=os.path.dirname(sys.executable)) or "hermes"
    fake_llm.add(tool_call("terminal", {"command": "echo made-a-child; sleep 0.2 &"}), "done")
    home, workspace = tmp_path / "home", tmp_path / "work"
    home.mkdir()
    workspace.mkdir()
    env = {**os.environ, "HERMES_HOME": str(home), "CUSTOM_API_KEY": "test-key"}
    argv = [hermes, "chat", "-q", "run it", "--provider", "custom", "--yolo"]
    argv += ["--base-url", fake_llm.openai_base_url, "--model", "any"]
    before = _children()
    with _subreaper():  # what the chat leaves behind comes to this process, not to init
        done = subprocess.run(argv, cwd=workspace, env=env, capture_output=True, text=True)
        assert done.returncode == 0, done.stderr
        assert b"made-a-child" in fake_llm.last_request.body
        deadline = time.monotonic() + 5
        while True:
            left = {pid: p for pid, p in _children().items() if pid not in before}
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.1)
        for pid in left:
            with contextlib.suppress(ChildProcessError):
                os.kill(pid, 9)
                os.waitpid(pid, 0)
    assert not left, f"left behind (name, state): {left}"
