"""Background processes of the local environment: one process group each, writing to a log
file; the group's leader is not reaped until it is killed, so its group id stays ours."""

from __future__ import annotations

import os
import signal
import subprocess
import time
from dataclasses import dataclass

from hermes_hookspecs import BackgroundProcess

from .guard import process_guard
from .processes import TERM_GRACE, decode, exit_status, leader_exited, signal_group


@dataclass
class Background:
    """One background process: its id, command, start time, process and log file."""

    id: str
    command: str
    started_at: float
    proc: subprocess.Popen[bytes]
    log_path: str
    exit_code: int | None = None
    reaped: bool = False

    def refresh(self) -> None:
        """Note the exit code if the leader ended (without reaping it)."""
        if self.exit_code is not None:
            return
        try:
            info = os.waitid(os.P_PID, self.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            self.proc.poll()
            if self.proc.returncode is not None:
                self.exit_code = exit_status(self.proc.returncode)
            return
        if info is None:
            return
        if info.si_code == os.CLD_EXITED:
            self.exit_code = info.si_status
        else:
            self.exit_code = 128 + info.si_status

    def output(self) -> str:
        """The log so far (``""`` when it cannot be read); an incomplete last character is
        left out while the process runs."""
        self.refresh()
        try:
            with open(self.log_path, "rb") as handle:
                return decode(handle.read(), final=self.exit_code is not None)
        except OSError:
            return ""

    def describe(self) -> BackgroundProcess:
        """Its state, as the contract reports it."""
        chars = len(self.output())
        return BackgroundProcess(
            id=self.id,
            command=self.command,
            started_at=self.started_at,
            running=self.exit_code is None,
            exit_code=self.exit_code,
            output_chars=chars,
        )

    def kill(self) -> None:
        """SIGTERM the group, SIGKILL it after a grace period, and reap the leader."""
        if self.reaped:
            return
        pid = self.proc.pid
        self.refresh()
        signal_group(pid, signal.SIGTERM)
        end = time.monotonic() + TERM_GRACE
        while time.monotonic() < end and not leader_exited(pid):
            time.sleep(0.01)
        signal_group(pid, signal.SIGKILL)  # the unreaped leader keeps the group id ours
        process_guard.release(pid)
        self.proc.wait()
        self.reaped = True
        if self.exit_code is None:
            self.exit_code = exit_status(self.proc.returncode)
