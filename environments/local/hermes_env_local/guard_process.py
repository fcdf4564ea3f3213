"""The guard process: kills what the local environment started once hermes is gone.

hermes starts this program once (``python -I -S guard_process.py``) with the read end of a pipe
as its standard input, in a session of its own, waits for its ``ready`` line on standard output,
and then writes one line per change:
``+<id>`` when it started a command (a process group and session whose id is the shell's pid),
``-<id>`` when that group is finished and must no longer be touched.

End of file on standard input means hermes has exited: the kernel closes a dead process's pipes
whatever killed it, ``SIGKILL`` included. The guard then sends ``SIGKILL`` to every group still
registered and, where ``/proc`` exists, to every process whose process group or session is one
of them (a job-control shell moves its jobs to new groups of the same session). It does this a
few times, for processes forked meanwhile, and exits.

Only the standard library is used and nothing is imported from hermes, so the program starts in a
few milliseconds without ``site``.
"""

from __future__ import annotations

import os
import signal
import sys
import time

ROUNDS = 3
"""Kill rounds after hermes is gone (a process may fork while the first one runs)."""


def _members(ids: set[int]) -> list[int]:
    """Processes whose process group or session is one of ``ids`` (Linux ``/proc``)."""
    found: list[int] = []
    try:
        entries = os.listdir("/proc")
    except OSError:
        return found
    me = os.getpid()
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        try:
            with open(f"/proc/{entry}/stat", "rb") as handle:
                fields = handle.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        # after the command name: state, ppid, pgrp, session, ...
        try:
            if int(fields[2]) in ids or int(fields[3]) in ids:
                found.append(int(entry))
        except (IndexError, ValueError):
            continue
    return found


def kill_all(ids: set[int]) -> None:
    """SIGKILL the groups ``ids`` and every process of their groups or sessions."""
    if not ids:
        return
    for round_ in range(ROUNDS):
        for pgid in ids:
            try:
                os.killpg(pgid, signal.SIGKILL)
            except OSError:
                pass
        for pid in _members(ids):
            try:
                os.kill(pid, signal.SIGKILL)
            except OSError:
                pass
        if round_ < ROUNDS - 1:
            time.sleep(0.05)


def main() -> None:
    """Follow the registrations on standard input; kill what is left at end of file."""
    for sig in (signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
        signal.signal(sig, signal.SIG_IGN)
    try:  # hermes waits for this before it starts a command
        os.write(1, b"ready\n")
        os.close(1)
    except OSError:
        pass
    ids: set[int] = set()
    pending = b""
    while True:
        try:
            chunk = os.read(0, 65536)
        except InterruptedError:
            continue
        except OSError:
            chunk = b""
        if not chunk:
            break
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            try:
                number = int(line[1:])
            except ValueError:
                continue
            if line[:1] == b"+" and number > 1:
                ids.add(number)
            elif line[:1] == b"-":
                ids.discard(number)
    kill_all(ids)


if __name__ == "__main__":
    main()
    sys.exit(0)
