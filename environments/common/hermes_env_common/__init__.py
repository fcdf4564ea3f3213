"""Shared machinery of the execution environments that reach their sandbox through a command
channel: ``docker exec``, an SSH session, a Modal sandbox ``exec``; a public base for third-party
backends too (``docs/environments.md``).

A backend subclasses :class:`ShellEnvironment` and implements :meth:`ShellEnvironment.open_channel`:
start a program (``argv``) in the sandbox, feed it ``stdin`` (or end-of-file) and return a
:class:`Channel` that yields its output. Everything else of the
:class:`~hermes_hookspecs.Environment` contract is built on that one primitive, in POSIX shell,
so that every backend behaves the same:

- Each command runs in a fresh shell (``bash`` when the sandbox has it, else ``/bin/sh``) that
  first restores the state the previous command left: the exported variables (``export -p``) and
  the working directory, kept in a private state folder made with ``mktemp -d``. When the command
  ends (normally, with ``exit``, or on a syntax error) an ``EXIT`` trap saves the state again and
  prints an end marker with the exit status. The marker carries a random nonce, so output cannot
  forge it, and the environment returns as soon as it arrives, even while a process the command
  left behind still holds the output open.
- The shell prints its process id first; a timeout kills that process group (and the process tree
  under it) through a second channel, so the command and its children stop and the state from
  before the command is kept.
- Files travel as raw bytes through the channel (``cat``), so reads and writes happen inside the
  sandbox with the sandbox user's permissions; a write goes to a temporary file that is renamed
  over the target.
- Background processes run under ``setsid`` with their output in a file of the state folder;
  ``poll`` and ``read_output`` fetch only the new bytes.
- Every process an environment starts carries ``HERMES_ENV_ID=<random>``; clean-up kills every
  process that still carries it, then removes the state folder. A backend whose sandbox outlives
  hermes holds a lifeline (:meth:`ShellEnvironment.hold_lifeline`) that does the same when
  hermes dies, ``SIGKILL`` included.

The modules: :mod:`.shell` (the base class), :mod:`.channel` (what a backend returns),
:mod:`.reader` (reading a script's output up to its end marker), :mod:`.scripts` (the shell
text), :mod:`.settings` (configuration helpers). Only ``hermes_hookspecs`` is imported here;
backends import their SDK lazily.
"""

from __future__ import annotations

from .channel import Channel, ExecOutcome, HeldInput
from .scripts import LEFTOVER_NOTE
from .settings import (
    forwarded_environ,
    module_installed,
    parse_bool,
    parse_memory_mb,
    safe_name,
    terminal_config,
)
from .shell import INTERNAL_TIMEOUT, ShellEnvironment

__all__ = [
    "INTERNAL_TIMEOUT",
    "LEFTOVER_NOTE",
    "Channel",
    "ExecOutcome",
    "HeldInput",
    "ShellEnvironment",
    "forwarded_environ",
    "module_installed",
    "parse_bool",
    "parse_memory_mb",
    "safe_name",
    "terminal_config",
]
