"""``serve.auto``: a one-shot chat that found no resident process starts one, in the
background, for the calls after it.

The call itself has run in-process by then (a resident process needs a second or more to load
and warm up, as long as the call). The resident process started is ``hermes serve`` with the
interpreter, arguments before the command and environment this process started with, in a
session of its own, with its log in ``$HERMES_HOME/serve/log``. It holds the home's serve lock
for its whole life: while one starts or serves, no other is started.
"""

from __future__ import annotations

import os
import sys

from . import registration
from .calls import servable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping, Sequence

LOG_NAME = "log"

RETRY_AFTER = 300.0
"""Seconds before a call starts a resident process again after one failed to start."""


def start_if_wanted(argv: Sequence[str], environ: Mapping[str, str]) -> int | None:
    """After ``argv`` (a one-shot chat) ran in-process: start a resident process for the next
    calls when the configuration asks for it and none serves, starts or is refused to this
    process; return its pid, or ``None`` when none was started. ``environ`` is the environment
    this process started with."""
    if environ.get("HERMES_SERVE") == "off" or not servable(argv[1:]):
        return None
    home = registration.home_folder()
    if not os.path.isdir(home) or not _wanted(home):
        return None
    found = registration.read(home)
    if found is not None and registration.alive(found["pid"]):
        return None  # it ends by itself once stale; a caller it refuses must not start another
    if _failed_lately(home):
        return None
    lock = registration.take_lock(home)
    if lock is None:
        return None
    try:
        return _spawn(home, lock, environ)
    except OSError:
        return None  # the call is done; the next one runs in-process too
    finally:
        os.close(lock)


def _wanted(home: str) -> bool:
    """Whether the configuration of ``home`` sets ``serve.auto``: a key of the core's, read
    from ``config.yaml`` alone, so a file that does not name it is not even parsed (every cold
    one-shot chat asks)."""
    try:
        with open(os.path.join(home, "config.yaml"), "rb") as handle:
            if b"auto" not in handle.read():
                return False
    except OSError:
        return False
    from pathlib import Path

    from hermes_hookspecs import HermesError

    from ...config.loading import load_config

    try:
        return load_config(Path(home)).get("serve.auto") is True
    except (HermesError, OSError):
        return False


def _failed_lately(home: str) -> bool:
    """Whether the last resident process started here failed to start, less than
    :data:`RETRY_AFTER` seconds ago (its log says why; each call would fail the same way)."""
    import time

    path = os.path.join(registration.serve_dir(home), LOG_NAME)
    try:
        with open(path, "rb") as handle:
            if time.time() - os.fstat(handle.fileno()).st_mtime >= RETRY_AFTER:
                return False
            return b"hermes: serving " not in handle.read(1 << 16)
    except OSError:
        return False


def command_prefix() -> list[str]:
    """The interpreter and what came before the command's own arguments when this process
    started (the ``hermes`` script, or ``-m`` and a module)."""
    original = list(getattr(sys, "orig_argv", None) or [sys.executable, *sys.argv])
    prefix = original[: len(original) - len(sys.argv) + 1]
    return [sys.executable, *prefix[1:]]


def _spawn(home: str, lock: int, environ: Mapping[str, str]) -> int:
    import subprocess

    from .command import DEFAULT_IDLE_TIMEOUT

    folder = registration.serve_dir(home)
    log = os.open(
        os.path.join(folder, LOG_NAME),
        os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW,
        0o600,
    )
    try:
        argv = [*command_prefix(), "serve", "--idle-timeout", f"{DEFAULT_IDLE_TIMEOUT:g}"]
        proc = subprocess.Popen(
            [*argv, "--lock-fd", str(lock)],
            env=dict(environ),
            cwd=home,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            pass_fds=(lock,),
            start_new_session=True,
        )
    finally:
        os.close(log)
    return proc.pid
