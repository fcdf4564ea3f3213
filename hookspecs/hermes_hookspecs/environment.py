"""Execution environments: where commands run and files live."""

from __future__ import annotations

import abc
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

_SAFE_GLOB = re.compile(r"^[A-Za-z0-9_./*?\[\]{},~+=@%:-]+$")


@dataclass
class CommandResult:
    """The outcome of a command.

    :param output: stdout and stderr, interleaved as the command wrote them.
    :param exit_code: the exit status (``-1`` when it never finished).
    :param timed_out: the command was killed because it ran past its timeout.
    :param background_id: set when the command was started in the background.
    """

    output: str
    exit_code: int
    timed_out: bool = False
    background_id: str | None = None


class Environment(abc.ABC):
    """A place to run commands and read and write files (local, Docker, SSH, Modal...).

    One instance serves one task; the host creates it on first use and calls :meth:`cleanup`
    when the task ends or the environment has been idle too long.
    """

    name: str = ""

    @abc.abstractmethod
    def run(
        self,
        command: str,
        *,
        cwd: str | None = None,
        env: Mapping[str, str] | None = None,
        timeout: float | None = None,
        stdin: str | None = None,
        background: bool = False,
    ) -> CommandResult:
        """Run a shell command and return its result.

        The working directory and exported variables persist between commands, as in a shell.
        """

    @abc.abstractmethod
    def read_file(self, path: str) -> bytes:
        """Return the contents of ``path``; raise ``FileNotFoundError`` when it is missing."""

    @abc.abstractmethod
    def write_file(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path``, creating parent folders."""

    def list_files(self, pattern: str, cwd: str | None = None) -> list[str]:
        """Paths matching a glob ``pattern``; the default expands it with the shell through
        :meth:`run` and accepts only plain glob characters, so a pattern cannot inject a command."""
        if not _SAFE_GLOB.match(pattern):
            raise ValueError(f"unsupported characters in glob pattern {pattern!r}")
        result = self.run(
            f'for f in {pattern}; do [ -e "$f" ] && printf \'%s\\n\' "$f"; done', cwd=cwd
        )
        return [line for line in result.output.splitlines() if line]

    def cleanup(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Release everything the environment holds (processes, containers, connections)."""


EnvironmentFactory = Callable[[Mapping[str, Any], str], Environment]
"""``factory(config, task_id) -> Environment``, registered under a backend name; ``config`` is
the whole effective configuration (the backend reads its own keys from ``terminal``)."""
