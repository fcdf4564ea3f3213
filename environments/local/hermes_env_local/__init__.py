"""The ``local`` execution environment: commands run as subprocesses on this machine.

How a command runs (see README.md for the reasoning):

- Every command is a fresh ``bash --noprofile --norc -c COMMAND`` in its own session and process
  group. The working directory and exported variables the previous command left are handed to
  it by :class:`subprocess.Popen` (``cwd=``, ``env=``); a small ``BASH_ENV`` preamble installs an
  ``EXIT`` trap that writes ``$PWD`` and every exported variable to a per-command state file
  when the shell ends (with builtins only: no extra process). The next command starts from that
  state. A command that is killed, calls ``exec`` or replaces the trap leaves the state as it was.
- A timeout sends SIGTERM to the whole process group, then SIGKILL. When the shell ends but
  processes it started still run, they are stopped too (and the output says so): a command owns
  everything it starts. Long-running processes belong in the background.
- Background processes are process groups of their own writing to a log file; the group leader is
  not reaped until it is killed or the environment is cleaned up, so its group id can never be
  reused by an unrelated process while we might signal it.
- Nothing outlives hermes: every group is registered with a guard process that kills the groups
  still registered when hermes dies, ``SIGKILL`` included (:mod:`hermes_env_local.guard`).
"""

from __future__ import annotations

from typing import Any

from hermes_hookspecs import hookimpl

from .backend import BACKEND, LocalBackend, check_config, create
from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin
from .environment import LocalEnvironment

__all__ = [
    "BACKEND",
    "LocalBackend",
    "LocalEnvironment",
    "check_config",
    "create",
    "hermes_register_environments",
]


@hookimpl
def hermes_register_environments(register: Any) -> None:
    """Register the ``local`` backend."""
    register("local", BACKEND)
