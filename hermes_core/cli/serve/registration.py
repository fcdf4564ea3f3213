"""Where a resident process is announced: ``$HERMES_HOME/serve/``, a folder only its owner can
open (0700), holding the socket (0600) and the registration file.

The registration names the process, its socket, the hermes version and the key of what it
loaded: the same fingerprint that decides the remembered plugin commands (the interpreter, the
import path and its installed distributions, the home folder, its ``config.yaml`` and ``.env``,
every ``HERMES_*`` variable). A caller whose own key differs runs in-process.

A caller reads this before anything else, so it imports neither :mod:`typing` nor
:mod:`pathlib`: paths are strings here.
"""

from __future__ import annotations

import marshal
import os
import stat

from ... import __version__

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

REGISTRATION_FORMAT = 1
"""Changes whenever the registration or the wire protocol changes."""

SOCKET_NAME = "socket"
REGISTRATION_NAME = "registration"
LOCK_NAME = "lock"


def home_folder() -> str:
    """The home folder :func:`hermes_runtime.home.default_home` finds, as a string."""
    explicit = os.environ.get("HERMES_HOME")
    if explicit:
        return os.path.expanduser(explicit)
    return os.path.join(os.environ.get("HOME") or os.path.expanduser("~"), ".hermes")


def serve_dir(home: str | os.PathLike[str]) -> str:
    """The folder of ``home``'s resident process."""
    return os.path.join(os.fspath(home), "serve")


def current_key(home: str | os.PathLike[str]) -> Any:
    """What a resident process for ``home`` must have loaded to serve this process's calls."""
    from ..command_cache import fingerprint

    return (REGISTRATION_FORMAT, fingerprint(home, None))


def private_dir(home: str | os.PathLike[str], create: bool) -> str | None:
    """The serve folder of ``home`` when it is a real folder owned by this user that no one
    else can open (created so when ``create``); ``None`` otherwise."""
    folder = serve_dir(home)
    if create and os.path.isdir(home):
        try:
            os.mkdir(folder, 0o700)
        except FileExistsError:
            pass
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


def read(home: str | os.PathLike[str]) -> dict[str, Any] | None:
    """The registration of ``home``'s resident process, when there is a valid one of this
    version of hermes; ``None`` otherwise."""
    folder = private_dir(home, create=False)
    if folder is None:
        return None
    try:
        with open(os.path.join(folder, REGISTRATION_NAME), "rb") as handle:
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


def write(folder: str, registration: dict[str, Any]) -> None:
    """Announce ``registration`` in ``folder`` (atomically, readable by its owner only)."""
    temporary = os.path.join(folder, f"{REGISTRATION_NAME}.{os.getpid()}.tmp")
    fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "wb") as handle:
        marshal.dump(registration, handle)
    os.replace(temporary, os.path.join(folder, REGISTRATION_NAME))


def make(home: str | os.PathLike[str], socket_path: str, idle_timeout: float) -> dict[str, Any]:
    """The registration of this process, serving ``home`` on ``socket_path``."""
    return {
        "format": REGISTRATION_FORMAT,
        "version": __version__,
        "pid": os.getpid(),
        "socket": socket_path,
        "key": current_key(home),
        "idle_timeout": idle_timeout,
    }


def withdraw(home: str | os.PathLike[str], pid: int) -> None:
    """Remove the registration of ``home`` and its socket when they are those of ``pid``."""
    found = read(home)
    if found is None or found["pid"] != pid:
        return
    for path in (found["socket"], os.path.join(serve_dir(home), REGISTRATION_NAME)):
        try:
            os.unlink(path)
        except OSError:
            pass


def take_lock(home: str | os.PathLike[str]) -> int | None:
    """A descriptor holding ``home``'s serve lock (an exclusive ``flock``, released when every
    copy of the descriptor is closed: a resident process keeps one for its whole life);
    ``None`` when another process holds it or the serve folder is not private."""
    import fcntl

    folder = private_dir(home, create=True)
    if folder is None:
        return None
    try:
        fd = os.open(
            os.path.join(folder, LOCK_NAME),
            os.O_RDWR | os.O_CREAT | os.O_CLOEXEC | os.O_NOFOLLOW,
            0o600,
        )
    except OSError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        os.close(fd)
        return None
    return fd


def alive(pid: int) -> bool:
    """Whether a process ``pid`` exists (another user's counts: it is there)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True
