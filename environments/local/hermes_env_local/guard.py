"""Commands of the local environment never outlive hermes.

Every command and background process the local environment starts is a session and process group
of its own (the shell is its leader). This module keeps one **guard process** per hermes process
(:mod:`hermes_env_local.guard_process`) and tells it, through a pipe, which groups are alive.
When hermes dies, by ``SIGKILL`` too, the pipe reaches end of file and the guard kills every group
still registered (see that module).

Why a guard process and not ``prctl(PR_SET_PDEATHSIG)``: the death signal fires when the *thread*
that forked the child exits, not the process, and hermes runs tool calls on worker threads that
come and go; it reaches only the direct child (the shell), not the processes the command starts;
it needs ``preexec_fn``, which is not safe in a process with threads; and it exists on Linux
only. The guard works on every POSIX system, kills whole groups (and, with ``/proc``, the other
groups of the same session), and costs one pipe write per start and per end of a command.

The gap between ``fork`` and the registration is closed by a **start gate**: the shell's first
action (from its ``BASH_ENV`` preamble, with builtins only) is to read one line from a pipe whose
write end only hermes holds. hermes writes ``go`` only after the guard was told about the new
group; a line in the guard's pipe is delivered even if hermes dies right after writing it. If
hermes dies before, the shell reads end of file and exits without running the command.

When hermes leaves normally, it closes the pipe and waits for the guard (:meth:`Guard.stop`), so
that not even the guard's zombie is left where the machine's first process does not reap orphans.

Known limit: a process that leaves its session (``setsid``) is not followed, as it would not be
by any group-based clean-up; the same is true of the leftover-process rule of the environment.
"""

from __future__ import annotations

import atexit
import os
import select
import shutil
import subprocess
import sys
import threading
from collections.abc import Callable, Sequence
from typing import Any

from hermes_hookspecs import EnvironmentUnavailable

__all__ = ["GATE_PREAMBLE", "GATE_VARIABLE", "Guard", "process_guard", "spawn_gated"]

GATE_VARIABLE = "__HERMES_GATE"
"""The variable that names the gate's file descriptor in the shell; the preamble unsets it."""

GATE_PREAMBLE = r"""builtin read -r -u "$__HERMES_GATE" __hermes_go || builtin exit 125
builtin test "$__hermes_go" = go || builtin exit 125
builtin unset -f exec
exec {__HERMES_GATE}<&-
builtin unset __HERMES_GATE __hermes_go
"""
"""``BASH_ENV`` text that waits at the gate, closes it, and removes its traces. (``exec`` cannot
go through ``builtin``: the redirections of any other command are undone when it returns.)"""

STOP_TIMEOUT = 2.0
"""Seconds hermes waits, when it leaves, for the guard process to end."""

READY_TIMEOUT = 10.0
"""Seconds the guard process may take to start (it is a Python without ``site``)."""

_PROGRAM = os.path.join(os.path.dirname(os.path.abspath(__file__)), "guard_process.py")


class Guard:
    """The hermes side of the guard process: started on first use, restarted when it died (the
    groups still alive are registered again)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fd: int | None = None
        self._proc: subprocess.Popen[bytes] | None = None
        self._groups: set[int] = set()

    @property
    def pid(self) -> int | None:
        """The guard process's pid, or ``None`` before the first command."""
        return self._proc.pid if self._proc is not None else None

    @property
    def groups(self) -> frozenset[int]:
        """The groups registered now."""
        with self._lock:
            return frozenset(self._groups)

    def watch(self, pgid: int) -> None:
        """Register group ``pgid``: it is killed if hermes dies before :meth:`release`.
        Raises :class:`EnvironmentUnavailable` when no guard process can be started."""
        with self._lock:
            self._groups.add(pgid)
            try:
                self._send(f"+{pgid}\n".encode())
            except BaseException:
                self._groups.discard(pgid)  # the command will not run; never kill this id later
                raise

    def release(self, pgid: int) -> None:
        """Forget group ``pgid``; call it before the group id may be reused (before its leader
        is reaped, or once its last process is gone)."""
        with self._lock:
            if pgid not in self._groups:
                return
            self._groups.discard(pgid)
            try:
                self._send(f"-{pgid}\n".encode())
            except EnvironmentUnavailable:
                pass  # a new guard will not know the group anyway

    def _send(self, line: bytes) -> None:
        for attempt in (1, 2):
            if self._fd is None:
                self._start()
                line = b"".join(f"+{g}\n".encode() for g in sorted(self._groups))
                if not line:
                    return
            assert self._fd is not None
            try:
                os.write(self._fd, line)  # lines are shorter than PIPE_BUF: written whole
                return
            except OSError:
                self._drop()
                if attempt == 2:
                    raise EnvironmentUnavailable(
                        "the local environment lost its guard process twice; refusing to start"
                        " commands that could outlive hermes"
                    ) from None

    def _start(self) -> None:
        read_end, write_end = os.pipe()
        try:
            proc, python = _spawn_guard(read_end)
        except OSError as exc:
            os.close(write_end)
            raise EnvironmentUnavailable(
                f"the local environment cannot start its guard process ({exc});"
                " refusing to start commands that could outlive hermes"
            ) from None
        finally:
            os.close(read_end)
        if not _ready(proc):
            os.close(write_end)
            proc.kill()
            proc.wait()
            raise EnvironmentUnavailable(
                f"the local environment's guard process ({python} {_PROGRAM}) did not start;"
                " refusing to start commands that could outlive hermes"
            )
        self._proc = proc
        self._fd = write_end

    def stop(self) -> None:
        """hermes is leaving normally: close the pipe (the guard stops what is still
        registered and exits) and reap the guard, so nothing of hermes's is left behind, not
        even a zombie where no init reaps orphans."""
        with self._lock:
            fd, self._fd = self._fd, None
            proc, self._proc = self._proc, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        if proc is not None:
            try:
                proc.wait(timeout=STOP_TIMEOUT)
            except subprocess.TimeoutExpired:
                pass  # it still kills the groups; it is the only one left to do so

    def _drop(self) -> None:
        fd, self._fd = self._fd, None
        if fd is not None:
            try:
                os.close(fd)
            except OSError:
                pass
        proc, self._proc = self._proc, None
        if proc is not None:
            proc.poll()

    def _forget_after_fork(self) -> None:
        """In a forked child: the pipe belongs to the parent's guard (the child must not keep it
        open, or the parent's death would go unnoticed); the child starts its own guard."""
        self._lock = threading.Lock()
        if self._fd is not None:
            try:
                os.close(self._fd)
            except OSError:
                pass
        self._fd = None
        self._proc = None
        self._groups = set()


def _ready(proc: subprocess.Popen[bytes]) -> bool:
    """Whether the guard says ``ready`` within :data:`READY_TIMEOUT` seconds."""
    assert proc.stdout is not None
    try:
        ready, _, _ = select.select([proc.stdout], [], [], READY_TIMEOUT)
        return bool(ready) and proc.stdout.readline() == b"ready\n"
    finally:
        proc.stdout.close()


def _guard_environment() -> dict[str, str]:
    """What the guard needs to start: no secrets, nothing but the loader's variables."""
    keep = ("PATH", "LD_LIBRARY_PATH", "DYLD_LIBRARY_PATH", "SYSTEMROOT", "LANG")
    return {key: os.environ[key] for key in keep if key in os.environ}


process_guard = Guard()
atexit.register(process_guard.stop)
"""The guard of this process, shared by every local environment."""

if hasattr(os, "register_at_fork"):  # POSIX; elsewhere the local environment cannot run anyway
    os.register_at_fork(after_in_child=process_guard._forget_after_fork)


def spawn_gated(
    argv: Sequence[str],
    *,
    env: dict[str, str],
    register: Callable[[int], None],
    pass_fds: Sequence[int] = (),
    **popen: Any,
) -> subprocess.Popen[bytes]:
    """Start ``argv`` (a bash whose ``BASH_ENV`` begins with :data:`GATE_PREAMBLE`) in a new
    session, call ``register(pid)``, then open the gate. If ``register`` raises, the gate is
    closed unopened, the shell exits without running anything, and the error propagates."""
    gate_read, gate_write = os.pipe()
    child_env = dict(env)
    child_env[GATE_VARIABLE] = str(gate_read)
    try:
        proc = subprocess.Popen(
            list(argv),
            env=child_env,
            pass_fds=(*pass_fds, gate_read),
            start_new_session=True,
            **popen,
        )
    except BaseException:
        os.close(gate_write)
        raise
    finally:
        os.close(gate_read)
    try:
        register(proc.pid)
        os.write(gate_write, b"go\n")
    except BaseException as exc:
        os.close(gate_write)  # the shell reads end of file and exits without running anything
        proc.wait()
        said = b""
        if isinstance(exc, BrokenPipeError) and proc.stdout is not None:
            said = proc.stdout.read(2000)  # why the process ended before the gate (a sandbox)
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None:
                stream.close()
        if said:
            message = " ".join(said.decode("utf-8", "replace").split())
            raise OSError(f"it ended before it started: {message}") from exc
        raise
    os.close(gate_write)
    return proc


def _interpreters() -> list[str]:
    """Pythons that can run the guard program (it needs only the standard library): this
    process's own first, then ``python3`` on ``PATH`` (this process's may be unreachable, e.g.
    inside a folder its user may not enter after dropping privileges)."""
    found = [sys.executable, shutil.which("python3"), "/usr/bin/python3"]
    return [p for p in dict.fromkeys(found) if p]


def _spawn_guard(stdin: int) -> tuple[subprocess.Popen[bytes], str]:
    """Start the guard program with ``stdin`` as its input; the process and its interpreter."""
    error: OSError | None = None
    for python in _interpreters():
        try:
            proc = subprocess.Popen(
                [python, "-I", "-S", _PROGRAM],
                stdin=stdin,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                cwd="/",
                env=_guard_environment(),
                start_new_session=True,  # no terminal signals, not in hermes' process group
            )
        except OSError as exc:
            error = OSError(f"{python}: {exc}")
            continue
        return proc, python
    raise error or OSError("no Python interpreter found")
