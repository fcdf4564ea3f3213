"""What a backend hands the shared base: a :class:`Channel` to one program in the sandbox, and
optionally a :class:`HeldInput`; and what one script run through a channel produced
(:class:`ExecOutcome`)."""

from __future__ import annotations

import abc
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Protocol

__all__ = ["Channel", "ExecOutcome", "HeldInput"]


class Channel(abc.ABC):
    """One program started in the sandbox, as :meth:`ShellEnvironment.open_channel` returns it.

    The base reads :meth:`chunks` on a thread of its own until the end marker of the script
    arrives (or the deadline passes), asks :meth:`exit_status` when the marker did not come, and
    always calls :meth:`close` at the end.
    """

    @abc.abstractmethod
    def chunks(self) -> Iterator[bytes]:
        """Its output (stdout; the scripts send stderr there too) as it comes, until end-of-file.
        Blocking; runs in a reader thread. May stop with an exception once :meth:`close` was
        called."""

    @abc.abstractmethod
    def exit_status(self, wait: float) -> int | None:
        """Its exit status, waiting up to ``wait`` seconds; ``None`` when unknown."""

    @abc.abstractmethod
    def close(self) -> None:
        """Stop reading and release the channel (the program may go on running)."""


class HeldInput(Protocol):
    """A program in the sandbox whose standard input this process holds open, as
    :meth:`ShellEnvironment.open_held` returns it. Closing it, or the death of this process in
    any way, ends that input."""

    def close(self) -> None:
        """End the program's input (it reads end of file)."""


@dataclass
class ExecOutcome:
    """What one script run through a channel produced.

    :param output: its output up to the end marker (capped: head and tail kept).
    :param exit_code: the script's exit status; ``-1`` when it never finished.
    :param timed_out: it ran past its deadline and was killed.
    :param pid: the process id of its shell in the sandbox, when it printed one.
    :param finished: the end marker arrived (the script's ``EXIT`` trap ran).
    """

    output: bytes
    exit_code: int
    timed_out: bool = False
    pid: int | None = None
    finished: bool = True
