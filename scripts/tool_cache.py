"""Tooling the tests install once from a package registry and reuse on every later run (a side
virtual environment, an npm package), kept under ``$HERMES_TEST_CACHE`` (default
``~/.cache/hermes-framework-tests``).

An install goes into its own folder, one process at a time (others wait on a lock file beside
it), and counts only once a ``.complete`` marker is written, so an interrupted install is
redone rather than trusted.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
from collections.abc import Sequence
from pathlib import Path


class InstallError(RuntimeError):
    """A tool could not be installed (its installer missing, the registry unreachable, a failed
    or timed-out step); the message ends with the installer's last words."""


def cache_dir() -> Path:
    """Where installed test tooling is kept between test runs."""
    given = os.environ.get("HERMES_TEST_CACHE")
    if given:
        return Path(given)
    return Path.home() / ".cache" / "hermes-framework-tests"


def is_complete(folder: Path) -> bool:
    """Whether ``folder`` holds a finished install."""
    return (folder / ".complete").exists()


def install_once(
    folder: Path, what: str, steps: Sequence[tuple[Sequence[str], float]], product: Path
) -> None:
    """Make ``folder`` by running each ``(command, timeout)`` of ``steps`` in turn, unless a
    finished install is already there; ``what`` names the tool in errors, and ``product`` is a
    file the install must leave.

    :raises InstallError: a step failed, timed out, or ``product`` is missing afterwards.
    """
    if is_complete(folder):
        return
    folder.parent.mkdir(parents=True, exist_ok=True)
    with open(folder.parent / f".{folder.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if is_complete(folder):
            return
        if folder.exists():
            shutil.rmtree(folder)  # a half-made install of our own, from an interrupted run
        folder.mkdir()
        for command, timeout in steps:
            _run(list(command), what, timeout)
        if not product.exists():
            raise InstallError(f"{what} left no {product.relative_to(folder).as_posix()}")
        (folder / ".complete").write_text(f"{what}\n", encoding="utf-8")


def _run(command: list[str], what: str, timeout: float) -> None:
    try:
        subprocess.run(command, check=True, capture_output=True, text=True, timeout=timeout)
    except subprocess.CalledProcessError as exc:
        words = " ".join((exc.stderr or exc.stdout or "").split())[-400:]
        raise InstallError(f"installing {what} failed: {words}") from None
    except subprocess.TimeoutExpired:
        raise InstallError(f"installing {what} took over {timeout:.0f} s") from None
