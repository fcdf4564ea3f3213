"""The caller's side: hand a ``hermes chat -q`` to the resident process when there is a usable
one, and behave as the process that ran it (exit status, signals).

Tried first by the console script, before click or any plugin is imported. Anything short of a
running child (no registration, another version, another install or configuration, a dead or
silent process, a refusal) returns ``None`` and the call runs in-process as always.
"""

from __future__ import annotations

import _socket
import os
import signal

from ... import __version__
from . import registration, wire
from .calls import servable

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any


CONNECT_TIMEOUT = 2.0
"""Seconds the resident process has to answer before the call runs in-process."""

FORWARDED = ("SIGINT", "SIGTERM", "SIGHUP", "SIGQUIT", "SIGWINCH", "SIGUSR1", "SIGUSR2")
"""Signals a caller passes on to the child running its call."""

LIMITS = (
    "RLIMIT_AS",
    "RLIMIT_CORE",
    "RLIMIT_CPU",
    "RLIMIT_DATA",
    "RLIMIT_FSIZE",
    "RLIMIT_NOFILE",
    "RLIMIT_NPROC",
    "RLIMIT_STACK",
)


def run(argv: Sequence[str]) -> int | None:
    """Run ``hermes argv`` in a child of the resident process and return its exit status (or
    end this process by the signal that ended the child); ``None`` when no resident process
    can take the call."""
    if not servable(argv[1:]):
        return None
    home = registration.home_folder()
    found = registration.read(home)
    if found is None:
        return None
    key = registration.current_key(home)
    if found["key"] != key:
        return None
    conn = connect(found)
    if conn is None:
        return None
    try:
        return _hand_over(conn, found, key, argv)
    finally:
        conn.close()


def connect(found: dict[str, Any]) -> _socket.socket | None:
    """A connection to the resident process ``found`` names, when it answers as that process
    and belongs to this user; ``None`` otherwise."""
    # _socket: the socket module would cost this short-lived caller its import
    conn = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    conn.settimeout(CONNECT_TIMEOUT)
    try:
        conn.connect(found["socket"])
        pid, uid, _ = wire.peer_credentials(conn)
    except OSError:
        conn.close()
        return None
    if uid != os.getuid() or pid != found["pid"]:
        conn.close()
        return None
    return conn


def _request(key: Any, argv: Sequence[str]) -> dict[str, Any]:
    import resource

    umask = os.umask(0o022)
    os.umask(umask)
    limits = {}
    for name in LIMITS:
        which = getattr(resource, name, None)
        if which is not None:
            limits[which] = resource.getrlimit(which)
    return {
        "version": __version__,
        "key": key,
        "argv": list(argv),
        "env": dict(os.environ),
        "umask": umask,
        "limits": limits,
    }


class _Forwarder:
    """Passes the signals this process gets on to the child (once its pid is known)."""

    def __init__(self) -> None:
        self.child: int | None = None
        self.pending: list[int] = []
        self.previous: dict[int, Any] = {}
        self.ignored: list[int] = []
        """Signals this process ignores (as it was started): the child ignores them too."""
        for name in FORWARDED:
            signum = getattr(signal, name)
            if signal.getsignal(signum) == signal.SIG_IGN:
                self.ignored.append(int(signum))
                continue
            self.previous[signum] = signal.signal(signum, self.forward)
        if signal.getsignal(signal.SIGTSTP) == signal.SIG_DFL:
            self.previous[signal.SIGTSTP] = signal.signal(signal.SIGTSTP, self.suspend)
        self.previous[signal.SIGCONT] = signal.signal(signal.SIGCONT, self.forward)

    def suspend(self, signum: int, frame: Any) -> None:
        """Ctrl-Z: stop the child, then this process, as a cold process stops; both go on
        when this process is continued."""
        if self.child is None:
            self.pending.append(signum)
            return
        # SIGSTOP, not SIGTSTP: the child leads a session of its own, whose process group the
        # kernel counts as orphaned and so spares the stop that SIGTSTP would do.
        _kill(self.child, signal.SIGSTOP)
        signal.signal(signal.SIGTSTP, signal.SIG_DFL)
        try:
            os.kill(os.getpid(), signal.SIGTSTP)  # stops here until continued
        finally:
            signal.signal(signal.SIGTSTP, self.suspend)
            _kill(self.child, signal.SIGCONT)

    def forward(self, signum: int, frame: Any) -> None:
        """Send ``signum`` to the child, or keep it until the child runs."""
        if self.child is None:
            if signum != signal.SIGCONT:
                self.pending.append(signum)
            return
        _kill(self.child, signum)

    def started(self, child: int) -> None:
        """The child runs: pass on what arrived before."""
        self.child = child
        for signum in self.pending:
            if signum == signal.SIGTSTP:
                self.suspend(signum, None)
            else:
                self.forward(signum, None)
        self.pending.clear()

    def restore(self) -> None:
        """Back to this process's own signal handling (a Ctrl-Z that came before any child
        ran stops this process now)."""
        for signum, handler in self.previous.items():
            signal.signal(signum, handler)
        if self.child is None and signal.SIGTSTP in self.pending:
            os.kill(os.getpid(), signal.SIGTSTP)


def _kill(pid: int, signum: int) -> None:
    try:
        os.kill(pid, signum)
    except ProcessLookupError:
        pass


def _hand_over(
    conn: _socket.socket, found: dict[str, Any], key: Any, argv: Sequence[str]
) -> int | None:
    fds = [0, 1, 2]
    cwd = os.open(".", os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    forwarder = _Forwarder()
    try:
        try:
            request = _request(key, argv)
            request["ignored"] = forwarder.ignored
            wire.send(conn, request, [*fds, cwd])
            answer = wire.receive(conn)
        except (OSError, wire.WireError):
            return None
        finally:
            os.close(cwd)
        if not isinstance(answer, tuple) or answer[0] != "pid":
            if any(signum != signal.SIGTSTP for signum in forwarder.pending):
                raise KeyboardInterrupt
            return None
        forwarder.started(int(answer[1]))
        conn.settimeout(None)
        try:
            answer = wire.receive(conn)
        except (OSError, wire.WireError):
            answer = None
        forwarder.child = None  # ended and reaped: its pid may be another process's now
    finally:
        forwarder.restore()
    return _exit_status(answer)


def _exit_status(answer: Any) -> int:
    """The exit status of a child whose wait status the resident process reported; a child
    that a signal ended ends this process by the same signal."""
    if not isinstance(answer, tuple) or answer[0] != "status":
        os.write(2, b"hermes: error: the resident hermes process went away during the call\n")
        return 1
    status = int(answer[1])
    if os.WIFSIGNALED(status):
        signum = os.WTERMSIG(status)
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)
        return 128 + signum
    return os.waitstatus_to_exitcode(status)
