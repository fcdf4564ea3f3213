"""A side virtual environment holding the real Hermes agent, installed from the package registry,
for the tests that read what it writes (its ``state.db``).

    python scripts/hermes_agent_env.py      make it when missing, print its python

The environment is made once under ``$HERMES_TEST_CACHE`` (default
``~/.cache/hermes-framework-tests``) and reused by every later test run; ``.ci/run`` makes it
before the tests on a fresh machine, because installing the agent and its dependencies takes
a minute or two. Nothing of the agent is ever imported into the environment running hermes.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
from pathlib import Path

DIST = "hermes-agent"
VERSION = "0.19.0"
"""The Hermes agent release whose files the compatibility tests read."""


class SideEnvError(RuntimeError):
    """The side environment could not be made (the registry unreachable, an install failure)."""


def cache_dir() -> Path:
    """Where side environments are kept between test runs."""
    given = os.environ.get("HERMES_TEST_CACHE")
    if given:
        return Path(given)
    return Path.home() / ".cache" / "hermes-framework-tests"


def env_dir(cache: Path | None = None) -> Path:
    """The folder of the side environment of :data:`VERSION`."""
    return (cache or cache_dir()) / f"{DIST}-{VERSION}"


def python_of(venv: Path) -> Path:
    """The interpreter of the virtual environment ``venv``."""
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure(cache: Path | None = None, timeout: float = 900.0) -> Path:
    """The python of a virtual environment with ``hermes-agent==VERSION`` installed from the
    registry, made when missing (one process at a time: others wait for it).

    :raises SideEnvError: the install failed; its message ends with pip's last words.
    """
    venv = env_dir(cache)
    done = venv / ".complete"
    if done.exists():
        return python_of(venv)
    venv.parent.mkdir(parents=True, exist_ok=True)
    with open(venv.parent / f".{venv.name}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if done.exists():
            return python_of(venv)
        if venv.exists():
            shutil.rmtree(venv)  # a half-made environment of our own, from an interrupted run
        try:
            subprocess.run(
                [sys.executable, "-m", "venv", str(venv)],
                check=True, capture_output=True, text=True, timeout=300,
            )  # fmt: skip
            subprocess.run(
                [str(python_of(venv)), "-m", "pip", "install", "--disable-pip-version-check",
                 "-q", f"{DIST}=={VERSION}"],
                check=True, capture_output=True, text=True, timeout=timeout,
            )  # fmt: skip
        except subprocess.CalledProcessError as exc:
            words = " ".join((exc.stderr or exc.stdout or "").split())[-400:]
            raise SideEnvError(f"installing {DIST}=={VERSION} failed: {words}") from None
        except subprocess.TimeoutExpired:
            raise SideEnvError(f"installing {DIST}=={VERSION} took over {timeout:.0f} s") from None
        done.write_text(f"{DIST}=={VERSION}\n", encoding="utf-8")
    return python_of(venv)


def main() -> int:
    """Make the environment when missing and print its python; one line and 1 on failure."""
    try:
        print(ensure())
    except SideEnvError as exc:
        print(f"hermes_agent_env: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
