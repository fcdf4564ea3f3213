"""Execution environments: where commands run and files live."""

from __future__ import annotations

import abc
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Literal, Protocol, runtime_checkable

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


@dataclass
class BackgroundProcess:
    """A command started in the background.

    :param id: the id the environment gave it.
    :param command: the command line.
    :param started_at: UNIX time it started.
    :param running: whether it is still running.
    :param exit_code: its exit status once it ended (``None`` while running).
    :param output_chars: how much output it has produced so far.
    """

    id: str
    command: str
    started_at: float
    running: bool
    exit_code: int | None = None
    output_chars: int = 0


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

    # --- background processes: optional, environments that support them override all five ---

    def start_background(
        self, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        """Start ``command`` in the background and return its id (``run(background=True)``
        returns it as ``CommandResult.background_id``)."""
        raise NotImplementedError(
            f"the {self.name or type(self).__name__} environment runs no background processes"
        )

    def poll(self, process_id: str) -> BackgroundProcess:
        """The state of a background process; ``KeyError`` for an unknown id."""
        raise NotImplementedError

    def read_output(self, process_id: str, offset: int = 0) -> tuple[str, int]:
        """Output of a background process from character ``offset``, and the offset to read
        from next time."""
        raise NotImplementedError

    def kill(self, process_id: str) -> None:
        """Stop a background process (and the processes it started)."""
        raise NotImplementedError

    def list_background(self) -> list[BackgroundProcess]:
        """Every background process this environment started, running or not."""
        return []

    def cleanup(self) -> None:  # noqa: B027 - optional hook with a no-op default
        """Release everything the environment holds (processes, containers, connections)."""


@runtime_checkable
class SandboxedEnvironment(Protocol):
    """An environment whose commands run in an OS sandbox (the local one, unless the person
    set ``terminal.sandbox: off``). The terminal tool reads what the sandbox allows, explains a
    failure caused by one of its limits, and runs one command outside it after a person
    approved exactly that command (``escalate: true``)."""

    @property
    def sandbox_summary(self) -> str:
        """One line on what commands may see, write and reach; ``""`` when the sandbox is off."""
        ...

    def sandbox_hint(self, result: CommandResult) -> str:
        """A note naming the sandbox limit a failed command met; ``""`` when none."""
        ...

    def run_escalated(
        self,
        command: str,
        *,
        cwd: str | None = None,
        timeout: float | None = None,
        background: bool = False,
    ) -> CommandResult:
        """Run ``command`` once outside the sandbox, with the user's full authority."""
        ...


PathSight = Literal["write", "read", "unseen", "hidden"]
"""What a sandboxed command sees of a path: it may ``write`` it, ``read`` it only, it is
``unseen`` (outside what the sandbox shows: the home folder but for the workspace and the allowed
toolchain folders), or ``hidden`` by name (a credential folder, hermes's home,
``terminal.sandbox.hide``)."""

PATH_SIGHTS: tuple[PathSight, ...] = ("write", "read", "unseen", "hidden")
"""Every :data:`PathSight`, from the most open to the strictest."""


@runtime_checkable
class SightedEnvironment(Protocol):
    """An environment that says what its commands see of a path, so that the file tools see the
    same world as a command: they ask before reading what commands cannot see, and refuse what
    the sandbox hides by name."""

    def path_sight(self, path: str) -> PathSight:
        """What commands see of ``path`` (absolute, as commands name it)."""
        ...


EnvironmentFactory = Callable[[Mapping[str, Any], str], Environment]
"""``factory(config, task_id) -> Environment``, registered under a backend name; ``config`` is
the whole effective configuration (the backend reads its own keys from ``terminal``)."""

EnvironmentConfigCheck = Callable[[Mapping[str, Any]], list[str]]
"""``factory.check_config(config) -> list[str]``: an optional attribute of a registered factory
(a ``classmethod`` or ``staticmethod`` when the factory is a class). It checks the backend's
configuration and what the backend needs on this machine (an SDK installed, a key file readable,
an engine answering) *without starting anything*: no container, sandbox or session. It returns
one readable line per problem, each saying what is wrong and how to fix it; an empty list when
it found none. It does not raise for a problem it can describe. ``hermes doctor`` reports each
problem; the host also calls it when the factory fails with an unexpected exception, and reports
its problems instead of that exception."""

EnvironmentProbe = Callable[[Mapping[str, Any]], str]
"""``factory.check(config) -> str``: an optional attribute of a registered factory, a live probe
of whether the backend can start with this configuration (it may connect, log in, look up an
image). It returns a one-line description of what it found, or raises
:class:`~hermes_hookspecs.EnvironmentUnavailable` saying what is wrong and how to fix it.
``hermes doctor`` calls it when :data:`EnvironmentConfigCheck` found no problem."""

__all__ = [
    "BackgroundProcess",
    "CommandResult",
    "Environment",
    "EnvironmentConfigCheck",
    "EnvironmentFactory",
    "EnvironmentProbe",
    "PATH_SIGHTS",
    "PathSight",
    "SandboxedEnvironment",
    "SightedEnvironment",
]
