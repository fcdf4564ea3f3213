"""Where a resident process is announced: ``$HERMES_HOME/serve/``, a folder only its owner can
open (0700), holding the socket (0600) and the registration file.

The registration names the process, its socket, the hermes version and the key of what it
loaded: the same fingerprint that decides the remembered plugin commands (the interpreter, the
import path and its installed distributions, the home folder, its ``config.yaml`` and ``.env``,
every ``HERMES_*`` variable). A caller whose own key differs runs in-process.

Only :mod:`os`, :mod:`marshal` and the fingerprint are imported: a caller reads this before
anything else.
"""

from __future__ import annotations

import marshal
import os
import stat
from pathlib import Path
from typing import Any

from ... import __version__

REGISTRATION_FORMAT = 1
"""Changes whenever the registration or the wire protocol changes."""

SOCKET_NAME = "socket"
REGISTRATION_NAME = "registration"


def serve_dir(home: Path) -> Path:
    """The folder of ``home``'s resident process."""
    return home / "serve"


def current_key(home: Path) -> Any:
    """What a resident process for ``home`` must have loaded to serve this process's calls."""
    from ..command_cache import fingerprint

    return (REGISTRATION_FORMAT, fingerprint(home, None))


def private_dir(home: Path, create: bool) -> Path | None:
    """The serve folder of ``home`` when it is a real folder owned by this user that no one
    else can open (created so when ``create``); ``None`` otherwise."""
    folder = serve_dir(home)
    if create and home.is_dir():
        try:
            folder.mkdir(mode=0o700, exist_ok=True)
        except OSError:
            return None
    try:
        found = os.lstat(folder)
    except OSError:
        return None
    if not stat.S_ISDIR(found.st_mode) or found.st_uid != os.getuid():
        return None
    if found.st_mode & 0o077:
        return None
    return folder


def read(home: Path) -> dict[str, Any] | None:
    """The registration of ``home``'s resident process, when there is a valid one of this
    version of hermes; ``None`` otherwise."""
    folder = private_dir(home, create=False)
    if folder is None:
        return None
    try:
        with open(folder / REGISTRATION_NAME, "rb") as handle:
            found = marshal.load(handle)
    except (OSError, EOFError, ValueError, TypeError):
        return None
    if not isinstance(found, dict):
        return None
    if found.get("format") != REGISTRATION_FORMAT or found.get("version") != __version__:
        return None
    if not isinstance(found.get("pid"), int) or not isinstance(found.get("socket"), str):
        return None
    return found


def write(folder: Path, registration: dict[str, Any]) -> None:
    """Announce ``registration`` in ``folder`` (atomically, readable by its owner only)."""
    temporary = folder / f"{REGISTRATION_NAME}.{os.getpid()}.tmp"
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        marshal.dump(registration, handle)
    os.replace(temporary, folder / REGISTRATION_NAME)


def make(home: Path, socket_path: Path, idle_timeout: float) -> dict[str, Any]:
    """The registration of this process, serving ``home`` on ``socket_path``."""
    return {
        "format": REGISTRATION_FORMAT,
        "version": __version__,
        "pid": os.getpid(),
        "socket": str(socket_path),
        "key": current_key(home),
        "idle_timeout": idle_timeout,
    }


def withdraw(home: Path, pid: int) -> None:
    """Remove the registration of ``home`` and its socket when they are those of ``pid``."""
    found = read(home)
    if found is None or found["pid"] != pid:
        return
    for path in (found["socket"], str(serve_dir(home) / REGISTRATION_NAME)):
        try:
            os.unlink(path)
        except OSError:
            pass
