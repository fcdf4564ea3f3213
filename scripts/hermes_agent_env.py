"""A side virtual environment holding the real Hermes agent, installed from the package registry,
for the tests that read what it writes (its ``state.db``).

    python scripts/hermes_agent_env.py      make it when missing, print its python

The environment is made once under ``$HERMES_TEST_CACHE`` (default
``~/.cache/hermes-framework-tests``) and reused by every later test run; ``.ci/run`` makes it
before the tests on a fresh machine, because installing the agent and its dependencies takes
a minute or two. Nothing of the agent is ever imported into the environment running hermes.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from tool_cache import InstallError, cache_dir, install_once

DIST = "hermes-agent"
VERSION = "0.19.0"
"""The Hermes agent release whose files the compatibility tests read."""

__all__ = ["InstallError", "ensure", "env_dir", "python_of"]


def env_dir(cache: Path | None = None) -> Path:
    """The folder of the side environment of :data:`VERSION`."""
    return (cache or cache_dir()) / f"{DIST}-{VERSION}"


def python_of(venv: Path) -> Path:
    """The interpreter of the virtual environment ``venv``."""
    return venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure(cache: Path | None = None, timeout: float = 900.0) -> Path:
    """The python of a virtual environment with ``hermes-agent==VERSION`` installed from the
    registry, made when missing (one process at a time: others wait for it).

    :raises InstallError: the install failed.
    """
    venv = env_dir(cache)
    python = python_of(venv)
    steps = [
        ([sys.executable, "-m", "venv", str(venv)], 300.0),
        ([str(python), "-m", "pip", "install", "--disable-pip-version-check", "-q",
          f"{DIST}=={VERSION}"], timeout),
    ]  # fmt: skip
    install_once(venv, f"{DIST}=={VERSION}", steps, python)
    return python


def main() -> int:
    """Make the environment when missing and print its python; one line and 1 on failure."""
    try:
        print(ensure())
    except InstallError as exc:
        print(f"hermes_agent_env: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
