"""The process side of the local environment: signalling a command's process group, waiting
for it without reaping it, reading its output until every writer closed it (or the timeout
struck), and keeping this process's own secrets out of reach of what it runs."""

from __future__ import annotations

import codecs
import os
import selectors
import signal
import subprocess
import time

LEFTOVER_GRACE = 0.2
"""Seconds the output pipe may stay open after the shell ended before the group is stopped."""
TERM_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL."""

_hidden = False


def hide_own_environment() -> None:
    """Make this process's ``/proc`` entries unreadable to the commands it runs: they run as the
    same user and could otherwise read every key hermes holds in ``/proc/$PPID/environ``.
    ``PR_SET_DUMPABLE`` 0 (Linux) does it; a command gets its own entries back at ``exec``. Also
    no core dumps and no debugger attaching without root, for this process only."""
    global _hidden
    if _hidden or not os.path.exists("/proc/self/environ"):
        return
    _hidden = True
    try:
        import ctypes

        ctypes.CDLL(None, use_errno=True).prctl(4, 0, 0, 0, 0)  # PR_SET_DUMPABLE, 0
    except (OSError, AttributeError):
        pass  # not Linux's libc: nothing to hide this way


def current_umask() -> int:
    """This process's umask, read without changing it (``0o022`` when it cannot be read)."""
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def exit_status(returncode: int) -> int:
    """Shell convention: a process killed by signal N exits with 128+N."""
    return 128 - returncode if returncode < 0 else returncode


def decode(data: bytes, final: bool = True) -> str:
    """UTF-8 with replacement characters; when not ``final`` an incomplete character at the
    end is left out (it is read whole the next time)."""
    if final:
        return data.decode("utf-8", errors="replace")
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return decoder.decode(data, final=False)


def signal_group(pgid: int, sig: int) -> bool:
    """Send ``sig`` to the process group ``pgid``; whether it still existed (and was ours)."""
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def leader_exited(pid: int) -> bool:
    """Whether the process ``pid`` (our child) ended, without reaping it."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def read_until_closed(
    proc: subprocess.Popen[bytes], limit: float, state_fd: int
) -> tuple[list[bytes], list[bytes], bool, bool]:
    """Read ``proc``'s output and the state pipe ``state_fd`` until every writer closed the
    output, the timeout ``limit`` struck, or the shell ended and what it left kept the output
    open for :data:`LEFTOVER_GRACE`; in the last two cases the group is stopped.

    Returns the output's chunks, the state's chunks read so far, whether the timeout struck,
    and whether leftover processes had to be stopped. Closes ``proc.stdout``; does not reap.
    """
    assert proc.stdout is not None
    fd = proc.stdout.fileno()
    os.set_blocking(fd, False)
    os.set_blocking(state_fd, False)
    chunks: list[bytes] = []
    state: list[bytes] = []
    deadline = time.monotonic() + max(0.0, limit)
    timed_out = leftover = False
    exited_at: float | None = None
    next_check = 0.0
    selector = selectors.DefaultSelector()
    selector.register(fd, selectors.EVENT_READ)
    selector.register(state_fd, selectors.EVENT_READ)
    try:
        while True:
            now = time.monotonic()
            if now >= deadline:
                timed_out = True
                break
            if exited_at is not None and now - exited_at > LEFTOVER_GRACE:
                leftover = True
                break
            wait = min(deadline - now, 0.1 if exited_at is None else LEFTOVER_GRACE / 4)
            events = selector.select(wait)
            if _read_ready(events, state_fd, chunks, state, selector):
                break  # every writer closed the output
            if exited_at is None and (not events or time.monotonic() >= next_check):
                # the shell may be gone while something it started keeps writing
                next_check = time.monotonic() + 0.1
                if leader_exited(proc.pid):
                    exited_at = time.monotonic()
        if timed_out or leftover:
            _stop_group(proc.pid, fd, chunks, selector)
    finally:
        selector.close()
        proc.stdout.close()
    return chunks, state, timed_out, leftover


def _read_ready(
    events: list[tuple[selectors.SelectorKey, int]],
    state_fd: int,
    chunks: list[bytes],
    state: list[bytes],
    selector: selectors.BaseSelector,
) -> bool:
    """Read what ``events`` say is ready; whether the output reached its end."""
    done = False
    for key, _mask in events:
        try:
            chunk = os.read(key.fd, 1 << 16)
        except BlockingIOError:
            continue
        if key.fd == state_fd:
            if chunk:
                state.append(chunk)
            else:
                selector.unregister(state_fd)
        elif chunk:
            chunks.append(chunk)
        else:
            done = True
    return done


def drain(fd: int, into: list[bytes]) -> None:
    """Append what is left to read in the non-blocking ``fd`` to ``into``."""
    while True:
        try:
            chunk = os.read(fd, 1 << 16)
        except BlockingIOError:
            return
        if not chunk:
            return
        into.append(chunk)


def _stop_group(pgid: int, fd: int, chunks: list[bytes], selector: selectors.BaseSelector) -> None:
    """SIGTERM the group, drain the output for a moment, then SIGKILL what is left; the
    leader is not reaped yet, so ``pgid`` still names this group."""
    for sig, grace in ((signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, 1.0)):
        signal_group(pgid, sig)
        end = time.monotonic() + grace
        while (left := end - time.monotonic()) > 0:
            ready = [key.fd for key, _mask in selector.select(left)]
            if fd not in ready:
                continue
            try:
                chunk = os.read(fd, 1 << 16)
            except BlockingIOError:
                continue
            if not chunk:
                return
            chunks.append(chunk)
