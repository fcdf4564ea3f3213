"""The resident process: it loads what a call needs once, then forks a child for each call.

A child is the cold path by construction: it takes the caller's standard input, output and
error, working folder, environment, umask, resource limits and argv, starts a session of its
own (so the caller's terminal is not its controlling terminal and the caller forwards Ctrl-C
to it), and runs the very same ``hermes`` command line with a configuration, plugin manager,
registry and session store of its own. The resident process shares only what it imported.

The resident process runs no thread (a fork copies only the thread that forks, and a lock
held by another thread would stay locked in the child); it waits in one ``select`` for a new
caller, a child's end (``SIGCHLD`` through a wake-up pipe), a caller that went away, a stop
signal, or the idle timeout.
"""

from __future__ import annotations

import gc
import os
import select
import signal
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from hermes_hookspecs import HermesError

from ... import __version__
from . import peer, registration, wire

ACCEPT_TIMEOUT = 5.0
"""Seconds a caller has to send its request once connected."""

CHECK_INTERVAL = 5.0
"""Seconds between checks that the registration still names this process."""


class ChildCall:
    """A call a forked child runs once the resident process's stack has unwound."""

    def __init__(self, request: dict[str, Any], fds: list[int]) -> None:
        self.request = request
        self.fds = fds

    def argv(self) -> list[str]:
        """The caller's arguments, without the program name."""
        return [str(arg) for arg in self.request["argv"][1:]]

    def run(self, main: Callable[[list[str]], int]) -> int:
        """Become the caller and run its command line with ``main``; return the exit status."""
        self.enter()
        return main(self.argv())

    def enter(self) -> None:
        """Become the caller: its files, folder, environment, umask and limits."""
        os.setsid()
        stdin, stdout, stderr, cwd = self.fds
        for fd, target in ((stdin, 0), (stdout, 1), (stderr, 2)):
            os.dup2(fd, target)
        os.fchdir(cwd)
        for fd in set(self.fds):
            if fd > 2:
                os.close(fd)
        for signum in self.request.get("ignored") or ():
            signal.signal(int(signum), signal.SIG_IGN)  # as the caller was started
        os.umask(int(self.request["umask"]))
        _apply_limits(self.request.get("limits") or {})
        os.environ.clear()
        os.environ.update(self.request["env"])
        time.tzset()  # local time in the caller's TZ
        sys.argv = [str(arg) for arg in self.request["argv"]]
        _reopen_standard_streams()
        import tempfile

        tempfile.tempdir = None  # found again from the caller's TMPDIR


def _apply_limits(limits: dict[int, tuple[int, int]]) -> None:
    """Lower this process's resource limits to the caller's (a limit is never raised)."""
    import resource

    for which, (soft, hard) in limits.items():
        mine_soft, mine_hard = resource.getrlimit(which)
        new_hard = _lower(mine_hard, hard)
        new_soft = _lower(_lower(mine_soft, soft), new_hard)
        if (new_soft, new_hard) != (mine_soft, mine_hard):
            resource.setrlimit(which, (new_soft, new_hard))


def _lower(a: int, b: int) -> int:
    import resource

    if a == resource.RLIM_INFINITY:
        return b
    if b == resource.RLIM_INFINITY:
        return a
    return min(a, b)


def _reopen_standard_streams() -> None:
    """New ``sys.stdin``/``stdout``/``stderr`` on descriptors 0 to 2, set up as the interpreter
    sets them up at start (line-buffered on a terminal, stderr always)."""
    import io

    def stream(fd: int, old: Any, mode: str, line_buffering: bool) -> io.TextIOWrapper:
        raw = open(fd, mode + "b", buffering=-1, closefd=False)
        return io.TextIOWrapper(
            raw,
            encoding=getattr(old, "encoding", None) or "utf-8",
            errors=getattr(old, "errors", None) or "strict",
            line_buffering=line_buffering,
        )

    for name, fd, mode, line_buffering in (
        ("stdin", 0, "r", False),
        ("stdout", 1, "w", os.isatty(1)),
        ("stderr", 2, "w", True),
    ):
        new = stream(fd, getattr(sys, f"__{name}__"), mode, line_buffering)
        setattr(sys, name, new)
        setattr(sys, f"__{name}__", new)


class Server:
    """The resident process for one home folder."""

    def __init__(
        self,
        home: Path,
        idle_timeout: float,
        lock: int,
        log: Callable[[str], None] | None = None,
    ) -> None:
        self.home = home
        self.lock = lock
        """The home's serve lock, held as long as this process lives (never by a child)."""
        self.log = log
        """Where a line about each call and refusal goes (the foreground's standard error)."""
        self.idle_timeout = idle_timeout
        self.pid = os.getpid()
        self.children: dict[int, socket.socket] = {}
        self.listener: socket.socket | None = None
        self.stopping = False
        self.key: Any = None
        self._wake_read = -1
        self._wake_write = -1

    # --- the life of the resident process ---------------------------------------------------

    def start(self) -> None:
        """Listen on the home's socket and announce this process."""
        if not _single_threaded():
            names = ", ".join(
                t.name for t in threading.enumerate() if t is not threading.current_thread()
            )
            raise HermesError(f"cannot serve: threads still run after loading ({names})")
        folder = registration.private_dir(self.home, create=True)
        if folder is None:
            raise HermesError(
                f"cannot serve: {registration.serve_dir(self.home)} must be a folder of yours"
                " that only you can open (mode 0700)"
            )
        found = registration.read(self.home)
        if found is not None and found["pid"] != self.pid and registration.alive(found["pid"]):
            raise HermesError(f"a resident hermes already serves {self.home} (pid {found['pid']})")
        path = os.path.join(folder, registration.SOCKET_NAME)
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        old_umask = os.umask(0o177)
        try:
            listener.bind(path)
        finally:
            os.umask(old_umask)
        os.chmod(path, 0o600)
        listener.listen(64)
        listener.setblocking(False)
        self.listener = listener
        self._wake_read, self._wake_write = os.pipe2(os.O_NONBLOCK | os.O_CLOEXEC)
        signal.set_wakeup_fd(self._wake_write, warn_on_full_buffer=False)
        signal.signal(signal.SIGCHLD, _note_signal)
        for stop in (signal.SIGTERM, signal.SIGHUP, signal.SIGINT):
            signal.signal(stop, self._stop)
        announced = registration.make(self.home, path, self.idle_timeout)
        self.key = announced["key"]
        registration.write(folder, announced)
        gc.freeze()  # children share these pages; their collections skip what is loaded

    def serve(self) -> ChildCall | None:
        """Serve calls until stopped or idle; in a forked child, return the call it runs."""
        assert self.listener is not None
        idle_since = time.monotonic()
        next_check = idle_since + CHECK_INTERVAL
        while not self.stopping:
            now = time.monotonic()
            if self.children:
                idle_since = now
            elif now - idle_since >= self.idle_timeout:
                break
            if now >= next_check:
                next_check = now + CHECK_INTERVAL
                if not self._still_registered():
                    break
            wait = min(next_check - now, self.idle_timeout - (now - idle_since))
            watched: list[Any] = [self.listener, self._wake_read, *self.children.values()]
            readable, _, _ = select.select(watched, [], [], max(wait, 0.0))
            if self._wake_read in readable:
                _drain(self._wake_read)
            self._reap()
            for conn in [c for c in readable if c in self.children.values()]:
                self._caller_gone(conn)
            if self.listener in readable:
                call = self._accept()
                if call is not None:
                    return call
        return None

    def close(self) -> None:
        """Withdraw the registration and close the socket (in the resident process only)."""
        if os.getpid() != self.pid:
            return
        registration.withdraw(self.home, self.pid)
        if self.listener is not None:
            self.listener.close()
        for conn in self.children.values():
            conn.close()

    # --- callers ----------------------------------------------------------------------------

    def _accept(self) -> ChildCall | None:
        assert self.listener is not None
        try:
            conn, _ = self.listener.accept()
        except (BlockingIOError, InterruptedError):
            return None
        fds: list[int] = []
        try:
            conn.settimeout(ACCEPT_TIMEOUT)
            pid, uid, gid = wire.peer_credentials(conn)
            reason = peer.refusal(pid, uid, gid)
            if reason == "another user":
                self._note(f"refused pid {pid} (uid {uid}): another user")
                conn.close()  # nothing is read from another user
                return None
            request, fds = wire.receive_with_fds(conn)
            reason = reason or _request_problem(request, fds, self.key)
            if reason is not None:
                self._note(f"refused pid {pid}: {reason}")
                wire.send(conn, ("refused", reason))
                raise wire.WireError(reason)
            return self._fork(conn, request, fds, pid)
        except (OSError, wire.WireError):
            for fd in fds:
                os.close(fd)
            conn.close()
            return None

    def _fork(
        self, conn: socket.socket, request: dict[str, Any], fds: list[int], caller: int
    ) -> ChildCall | None:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        child = os.fork()
        if child == 0:
            self._become_child()
            conn.close()
            return ChildCall(request, fds)
        for fd in fds:
            os.close(fd)
        self.children[child] = conn
        self._note(f"pid {caller}: running in child {child}")
        try:
            wire.send(conn, ("pid", child))
        except OSError:
            pass
        return None

    def _become_child(self) -> None:
        """Forget the resident process's socket, signals and callers."""
        signal.set_wakeup_fd(-1)
        for name in ("SIGCHLD", "SIGTERM", "SIGHUP"):
            signal.signal(getattr(signal, name), signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        for fd in (self._wake_read, self._wake_write, self.lock):
            os.close(fd)
        if self.listener is not None:
            self.listener.close()
        for other in self.children.values():
            other.close()
        self.children = {}
        self.stopping = True

    def _reap(self) -> None:
        while self.children:
            try:
                pid, status, usage = os.wait4(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            conn = self.children.pop(pid, None)
            cpu = usage.ru_utime + usage.ru_stime
            code = os.waitstatus_to_exitcode(status)
            self._note(f"child {pid} ended with status {code} (cpu {cpu:.3f} s)")
            if conn is not None:
                try:
                    wire.send(conn, ("status", status))
                except OSError:
                    pass
                conn.close()

    def _caller_gone(self, conn: socket.socket) -> None:
        """A caller closed its connection before its child ended: it was killed, and so is the
        child (as a cold process would have been)."""
        try:
            if conn.recv(1, socket.MSG_PEEK | socket.MSG_DONTWAIT):
                return
        except (BlockingIOError, InterruptedError):
            return
        except OSError:
            pass
        for pid, owner in list(self.children.items()):
            if owner is conn:
                try:
                    os.kill(pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass

    def _note(self, line: str) -> None:
        if self.log is not None:
            self.log(line)

    def _still_registered(self) -> bool:
        """Whether this process is still the announced one and what it loaded is current."""
        found = registration.read(self.home)
        if found is None or found["pid"] != self.pid:
            return False
        return bool(registration.current_key(self.home) == self.key)

    def _stop(self, signum: int, frame: Any) -> None:
        self.stopping = True


def _request_problem(request: Any, fds: list[int], key: Any) -> str | None:
    """What is wrong with a request; ``None`` when it can be run."""
    if not isinstance(request, dict) or len(fds) != 4:
        return "malformed request"
    if request.get("version") != __version__:
        return "another version of hermes"
    if request.get("key") != key:
        return "loaded for another install or configuration"
    if not isinstance(request.get("env"), dict) or not isinstance(request.get("argv"), list):
        return "malformed request"
    if _start_up_variables(request["env"]) != _start_up_variables(os.environ):
        return "the caller's interpreter or locale settings differ"
    return None


LOCALE_VARIABLES = ("LANG", "LANGUAGE", "LC_ALL", "LC_CTYPE")


def _start_up_variables(env: Mapping[str, str]) -> dict[str, str]:
    """The variables the interpreter reads once, at start (``PYTHON*``, the locale): a child
    cannot take them from its caller, so they must be the resident process's already."""
    return {k: v for k, v in env.items() if k.startswith("PYTHON") or k in LOCALE_VARIABLES}


def _single_threaded(wait: float = 2.0) -> bool:
    """Whether this thread is the process's only one (waiting up to ``wait`` seconds for
    threads that are ending)."""
    deadline = time.monotonic() + wait
    while threading.active_count() > 1:
        if time.monotonic() > deadline:
            return False
        time.sleep(0.01)
    return True


def _note_signal(signum: int, frame: Any) -> None:
    """Nothing: the wake-up pipe tells the loop."""


def _drain(fd: int) -> None:
    try:
        while os.read(fd, 512):
            pass
    except (BlockingIOError, InterruptedError):
        pass
