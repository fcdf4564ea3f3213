""":class:`ShellEnvironment`: the whole :class:`~hermes_hookspecs.Environment` contract built on one
primitive a backend provides, :meth:`ShellEnvironment.open_channel` (start a program in the
sandbox, feed it input, read its output). See ``docs/environments.md`` for how to write a
backend on it."""

from __future__ import annotations

import codecs
import logging
import posixpath
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from hermes_hookspecs import BackgroundProcess, CommandResult, Environment, EnvironmentUnavailable
from hermes_runtime.secrets import passthrough, secret_names

from . import scripts
from .channel import Channel, ExecOutcome, HeldInput
from .reader import TIMED_OUT, ChannelPump, MarkerReader
from .settings import ENV_KEY, forwarded_environ

__all__ = ["INTERNAL_TIMEOUT", "ShellEnvironment"]

log = logging.getLogger("hermes.environments")

DEFAULT_TIMEOUT = 180.0
DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024
INTERNAL_TIMEOUT = 60.0
"""Seconds the base's own short scripts (start-up, status queries, kills) may take."""
_AFTER_TIMEOUT_GRACE = 2.0


@dataclass
class _Background:
    id: str
    command: str
    started_at: float
    base: str  # path prefix of its files in the state folder
    exit_code: int | None = None
    running: bool = True
    bytes_read: int = 0
    text: str = ""
    decoder: Any = field(default_factory=lambda: codecs.getincrementaldecoder("utf-8")("replace"))


class ShellEnvironment(Environment):
    """An :class:`~hermes_hookspecs.Environment` on top of a command channel.

    A backend subclasses it and provides :meth:`open_channel`; it may also provide
    :meth:`open_held` (to tie the sandbox's processes to this process) and :meth:`teardown`
    (to release the container, connection or sandbox). Its ``__init__`` connects, then calls
    :meth:`prepare_shell` (and :meth:`hold_lifeline` when its sandbox outlives hermes).
    """

    name = "shell"
    where: str = "sandbox"
    """How the sandbox is named in error messages (``docker container hermes-x``, ``ssh a@b``)."""
    lifeline_grace: float = 0.0
    """Seconds the lifeline keeps the state folder after its input ended, for
    :meth:`renew_lifeline` to claim it; 0 for backends that never renew."""

    def __init__(
        self,
        *,
        task_id: str,
        workdir: str | None = None,
        default_timeout: float | None = None,
        max_output_bytes: int = DEFAULT_MAX_OUTPUT,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        if not self._overrides("open_channel"):
            raise TypeError(f"{type(self).__name__} must implement open_channel(argv, stdin)")
        self.task_id = task_id
        # what terminal.env_passthrough lets into the sandbox; every other secret stays out
        self._passthrough = passthrough(config)
        self._forward = forwarded_environ(config)
        self.workdir = workdir
        self.default_timeout = float(default_timeout or DEFAULT_TIMEOUT)
        self.max_output_bytes = max(1024, int(max_output_bytes))
        self.state_dir = ""
        self.shell = "/bin/sh"
        self.home_cwd = ""
        self._token = secrets.token_hex(12)
        self._old_tokens: list[str] = []
        self._bg: dict[str, _Background] = {}
        self._bg_lock = threading.Lock()
        self._bg_counter = 0
        self._closed = False
        self._held: HeldInput | None = None

    def _overrides(self, method: str) -> bool:
        return getattr(type(self), method) is not getattr(ShellEnvironment, method)

    @property
    def env_id(self) -> str:
        """The random id every process this environment starts carries as ``HERMES_ENV_ID``."""
        return self._token

    # --- what a backend provides ----------------------------------------------------------

    def open_channel(self, argv: list[str], stdin: bytes | None) -> Channel:
        """**Required.** Start ``argv`` in the sandbox; write ``stdin`` to it and close its input
        (``None``: end-of-file at once); return a :class:`Channel` on its output. Raise
        :class:`~hermes_hookspecs.EnvironmentUnavailable` when the sandbox is gone."""
        raise NotImplementedError(f"{type(self).__name__} must implement open_channel")

    def open_held(self, argv: list[str]) -> HeldInput | None:
        """Optional: start ``argv`` with its standard input held open by this process and return
        the :class:`HeldInput`; when it is closed, or this process dies in any way (its
        connection closes with it), the program reads end of file. ``None``: the backend
        cannot (the default)."""
        return None

    def teardown(self) -> None:
        """Optional: release the backend (remove the container, close the connection...).
        Called once, last, by :meth:`cleanup`; also call it when ``__init__`` fails after
        connecting. Does nothing by default."""

    # --- start-up -------------------------------------------------------------------------

    def prepare_shell(self) -> None:
        """Make the private state folder, enter the working folder and find the shell; a
        backend calls it once its ``open_channel`` works. Raises
        :class:`~hermes_hookspecs.EnvironmentUnavailable` saying what the sandbox lacks."""
        workdir = self.workdir
        outcome = self.run_script(
            scripts.prepare(workdir), shell="/bin/sh", timeout=INTERNAL_TIMEOUT
        )
        text = outcome.output.decode("utf-8", "replace")
        values = dict(
            line.split("=", 1) for line in text.splitlines() if "=" in line and line[:1] != " "
        )
        if outcome.exit_code == 91:
            raise EnvironmentUnavailable(
                f"{self.where}: cannot enter the working folder {workdir!r}: {text.strip()}"
            )
        if outcome.exit_code != 0 or "state" not in values:
            raise EnvironmentUnavailable(
                f"{self.where}: could not prepare the shell (exit {outcome.exit_code}): "
                f"{text.strip()[:500] or 'no output'}; the image or host needs /bin/sh, mktemp"
                " and a writable /tmp"
            )
        self.state_dir = values["state"]
        self.home_cwd = values.get("cwd", "")
        self.shell = values.get("shell") or "/bin/sh"
        if self._forward:
            self._write_forwarded()

    def _write_forwarded(self) -> None:
        """Put the passed-through variables into the saved state every command restores; they
        travel on the channel's input, never on a command line (which ``ps`` would show)."""
        exports = "".join(f"export {k}={scripts.q(v)}\n" for k, v in self._forward.items())
        outcome = self.run_script(
            scripts.write_state_env(self.state_dir),
            stdin=exports.encode("utf-8"),
            shell="/bin/sh",
            timeout=INTERNAL_TIMEOUT,
        )
        if outcome.exit_code != 0:
            raise EnvironmentUnavailable(
                f"{self.where}: could not pass terminal.env_passthrough variables (exit "
                f"{outcome.exit_code})"
            )

    # --- the one primitive: a script through a channel, with markers and a deadline -------

    def run_script(
        self,
        body: str,
        *,
        stdin: bytes | None = None,
        timeout: float | None = None,
        shell: str | None = None,
        end_body: str = "",
        after_marker: str = "",
        merge: bool = True,
    ) -> ExecOutcome:
        """Run the shell text ``body`` in a fresh shell in the sandbox and collect its output
        until its end marker; past ``timeout`` seconds its process group and tree are killed.

        :param stdin: the script's input (``None``: end of file at once).
        :param shell: the shell to run it with (default: bash when the sandbox has it).
        :param end_body: shell text the ``EXIT`` trap runs before the marker
            (``$__hermes_rc`` holds the status).
        :param after_marker: shell text the trap runs after the marker.
        :param merge: send the shell's stderr to its output.
        """
        self._check_open()
        nonce = secrets.token_hex(8)
        script = scripts.frame(
            body, nonce, merge=merge, end_body=end_body, after_marker=after_marker
        )
        channel = self.open_channel([shell or self.shell, "-c", script], stdin)
        pump = ChannelPump(channel, f"hermes-{self.name}-reader")
        reader = MarkerReader(nonce, self.max_output_bytes)
        deadline = time.monotonic() + timeout if timeout and timeout > 0 else None
        ended, error = self._read_until_marker(pump, reader, deadline)
        timed_out = ended == "timeout"
        if timed_out:
            if reader.pid is not None:
                self._kill_tree(reader.pid)
            ended = self._drain(pump, reader, time.monotonic() + _AFTER_TIMEOUT_GRACE)
        return self._finish(channel, reader, timed_out, ended == "eof", error)

    def _check_open(self) -> None:
        if self._closed:
            raise EnvironmentUnavailable(
                f"{self.where}: this environment was cleaned up; a new one is made on next use"
            )

    @staticmethod
    def _read_until_marker(
        pump: ChannelPump, reader: MarkerReader, deadline: float | None
    ) -> tuple[str, BaseException | None]:
        """Feed the reader until the end marker (``"marker"``), end of file (``"eof"``) or the
        deadline (``"timeout"``); also the last exception the channel raised."""
        error: BaseException | None = None
        while True:
            item = pump.next(deadline)
            if item is TIMED_OUT:
                return "timeout", error
            if item is None:
                return "eof", error
            if isinstance(item, BaseException):
                error = item
                continue
            assert isinstance(item, bytes)
            if reader.feed(item):
                return "marker", error

    @staticmethod
    def _drain(pump: ChannelPump, reader: MarkerReader, until: float) -> str:
        """What a killed script wrote before it died, until ``until``."""
        while True:
            item = pump.next(until)
            if item is TIMED_OUT:
                return "timeout"
            if item is None:
                return "eof"
            if isinstance(item, bytes) and reader.feed(item):
                return "marker"

    def _finish(
        self,
        channel: Channel,
        reader: MarkerReader,
        timed_out: bool,
        eof: bool,
        error: BaseException | None,
    ) -> ExecOutcome:
        """Ask the exit status when the marker did not carry it, close the channel and build
        the outcome; a channel that failed before any status is a lost sandbox."""
        exit_code = reader.exit_code
        if exit_code is None and not timed_out:
            exit_code = channel.exit_status(wait=2.0 if eof else 0.2)
        try:
            channel.close()
        except Exception:  # noqa: BLE001 - closing is best effort
            pass
        if error is not None and exit_code is None and not timed_out:
            raise EnvironmentUnavailable(
                f"{self.where}: lost the command channel: {type(error).__name__}: {error}"
            )
        if timed_out:
            code = -1  # it never finished (as the local backend reports it)
        else:
            code = -1 if exit_code is None else exit_code
        return ExecOutcome(reader.output(), code, timed_out, reader.pid, reader.finished)

    def _kill_tree(self, pid: int) -> None:
        """Kill process group ``pid`` and the tree under it, through a new channel."""
        try:
            self.run_script(scripts.kill_tree(pid), shell="/bin/sh", timeout=15)
        except Exception as exc:  # noqa: BLE001 - the caller reports the timeout anyway
            log.warning("%s: could not kill timed-out process %s: %s", self.where, pid, exc)

    # --- commands -------------------------------------------------------------------------

    def _restore_state(self, cwd: str | None, env: Mapping[str, str] | None) -> tuple[str, str]:
        """The prelude that restores the saved state and applies the one-off ``cwd``/``env``,
        and the ``EXIT`` trap text that saves it again; secret variables not passed through are
        left out."""
        hidden = secret_names() - self._passthrough
        items: list[tuple[str, str]] = []
        for key, value in (env or {}).items():
            if not ENV_KEY.match(str(key)):
                raise ValueError(f"not a valid variable name: {key!r}")
            if key in hidden:
                log.debug("%s: not passing secret variable %s", self.where, key)
                continue
            items.append((str(key), str(value)))
        return scripts.restore_state(
            state_dir=self.state_dir,
            home_cwd=self.home_cwd,
            env_id=self._token,
            cwd=cwd,
            env=items,
        )

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
        """Run ``command`` in the sandbox's shell; see :class:`~hermes_hookspecs.Environment`."""
        if background:
            process_id = self.start_background(command, cwd=cwd, env=env)
            return CommandResult(
                output=f"started in the background as {process_id}",
                exit_code=0,
                background_id=process_id,
            )
        prelude, end_body = self._restore_state(cwd, env)
        body = prelude + f"__hermes_save=1\neval {scripts.q(command)}\n"
        data = stdin.encode("utf-8") if stdin is not None else None
        outcome = self.run_script(
            body,
            stdin=data,
            timeout=self.default_timeout if timeout is None else timeout,
            end_body=end_body,
            # a command owns what it starts: what is left of its process group goes with it
            after_marker="  kill -9 -$$ 2>/dev/null\n",
        )
        return CommandResult(
            output=outcome.output.decode("utf-8", "replace"),
            exit_code=outcome.exit_code,
            timed_out=outcome.timed_out,
        )

    # --- files ----------------------------------------------------------------------------

    def read_file(self, path: str) -> bytes:
        """The bytes of ``path`` (absolute, or relative to the working directory)."""
        body = scripts.enter_cwd(self.state_dir, self.home_cwd) + scripts.read_file(path)
        outcome = self.run_script(body, timeout=INTERNAL_TIMEOUT * 5, merge=False)
        code = outcome.exit_code
        if code == 0 and outcome.finished:
            return outcome.output
        if code == 2:
            raise FileNotFoundError(2, "No such file or directory", path)
        if code == 21:
            raise IsADirectoryError(21, "Is a directory", path)
        if code == 13:
            raise PermissionError(13, "Permission denied", path)
        raise OSError(f"{self.where}: could not read {path} (exit {code})")

    def write_file(self, path: str, data: bytes) -> None:
        """Write ``data`` to ``path`` through a temporary file renamed over it; parent folders
        are created."""
        if not path:
            raise ValueError("empty path")
        parent = posixpath.dirname(path.rstrip("/")) or ("/" if path.startswith("/") else ".")
        body = scripts.enter_cwd(self.state_dir, self.home_cwd) + scripts.write_file(path, parent)
        outcome = self.run_script(body, stdin=bytes(data), timeout=INTERNAL_TIMEOUT * 5)
        if outcome.exit_code == 0:
            return
        message = outcome.output.decode("utf-8", "replace").strip()
        if outcome.exit_code == 21:
            raise IsADirectoryError(21, "Is a directory", path)
        if outcome.exit_code == 13 and "ermission" in message:
            raise PermissionError(13, message or "Permission denied", path)
        raise OSError(f"{self.where}: could not write {path}: {message or outcome.exit_code}")

    # --- background processes -------------------------------------------------------------

    def start_background(
        self, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        """Start ``command`` detached (its own session), output to a file; return its id."""
        with self._bg_lock:
            self._bg_counter += 1
            process_id = f"bg{self._bg_counter}"
        base = f"{self.state_dir}/{process_id}"
        prelude, _ = self._restore_state(cwd, env)
        body = prelude + scripts.start_background(command, shell=self.shell, base=base)
        started_at = time.time()
        outcome = self.run_script(body, timeout=INTERNAL_TIMEOUT)
        if outcome.exit_code != 0:
            message = outcome.output.decode("utf-8", "replace").strip()
            raise OSError(f"{self.where}: could not start background process: {message}")
        with self._bg_lock:
            self._bg[process_id] = _Background(process_id, command, started_at, base)
        return process_id

    def _get(self, process_id: str) -> _Background:
        with self._bg_lock:
            try:
                return self._bg[process_id]
            except KeyError:
                raise KeyError(f"no background process {process_id!r}") from None

    def _refresh(self, proc: _Background) -> None:
        """Fetch the state of ``proc`` and its new output."""
        body = scripts.refresh_background(
            proc.base,
            known_done=not proc.running and proc.exit_code is not None,
            bytes_read=proc.bytes_read,
        )
        outcome = self.run_script(body, shell="/bin/sh", timeout=INTERNAL_TIMEOUT, merge=False)
        status, _, new = outcome.output.partition(b"\n")
        words = status.decode("ascii", "replace").split()
        if words[:1] == ["rc"]:
            proc.running = False
            try:
                proc.exit_code = int(words[1])
            except (IndexError, ValueError):
                proc.exit_code = -1
        elif words[:1] == ["gone"]:
            proc.running = False
            if proc.exit_code is None:
                proc.exit_code = -1
        if new:
            proc.bytes_read += len(new)
            proc.text += proc.decoder.decode(new)
        if not proc.running:
            proc.text += proc.decoder.decode(b"", final=True)

    @staticmethod
    def _snapshot(proc: _Background) -> BackgroundProcess:
        return BackgroundProcess(
            id=proc.id,
            command=proc.command,
            started_at=proc.started_at,
            running=proc.running,
            exit_code=None if proc.running else proc.exit_code,
            output_chars=len(proc.text),
        )

    def poll(self, process_id: str) -> BackgroundProcess:
        """The state of a background process; ``KeyError`` for an unknown id."""
        proc = self._get(process_id)
        self._refresh(proc)
        return self._snapshot(proc)

    def read_output(self, process_id: str, offset: int = 0) -> tuple[str, int]:
        """Output of a background process from character ``offset``, and the next offset."""
        proc = self._get(process_id)
        self._refresh(proc)
        offset = max(0, min(int(offset), len(proc.text)))
        return proc.text[offset:], len(proc.text)

    def kill(self, process_id: str) -> None:
        """TERM the process's group and tree, then KILL what is left after a second."""
        proc = self._get(process_id)
        self.run_script(
            scripts.kill_background(proc.base), shell="/bin/sh", timeout=INTERNAL_TIMEOUT
        )
        self._refresh(proc)

    def list_background(self) -> list[BackgroundProcess]:
        """Every background process this environment started, refreshed."""
        with self._bg_lock:
            procs = list(self._bg.values())
        for proc in procs:
            if proc.running:
                self._refresh(proc)
        return [self._snapshot(proc) for proc in procs]

    # --- tied to this process ---------------------------------------------------------------

    def hold_lifeline(self) -> None:
        """Tie this environment's processes to this process, for backends whose sandbox outlives
        hermes (a persistent container, a remote host): a program in the sandbox, started with
        :meth:`open_held`, waits for end of file on its input, then kills every process carrying
        :attr:`env_id` and removes the state folder (after :attr:`lifeline_grace` seconds,
        unless :meth:`renew_lifeline` claimed it). Call it after :meth:`prepare_shell`."""
        script = scripts.lifeline(self._token, self.state_dir, self.lifeline_grace)
        self._held = self.open_held(["/bin/sh", "-c", script])

    def renew_lifeline(self) -> None:
        """For a backend that made a new connection after the one its lifeline was held on was
        lost: that lifeline stops (or has stopped) every process of the old connection; take a
        new :attr:`env_id`, claim the state folder (or make it again, empty, when the old
        lifeline removed it already) and hold a new lifeline. Does nothing when no lifeline is
        held."""
        if self._held is None:
            return
        self._release_lifeline()
        old = self._token
        self._old_tokens.append(old)
        self._token = secrets.token_hex(12)
        outcome = self.run_script(
            scripts.claim_state(self.state_dir, old), shell="/bin/sh", timeout=INTERNAL_TIMEOUT
        )
        if outcome.exit_code != 0:
            raise EnvironmentUnavailable(
                f"{self.where}: could not take over the state folder {self.state_dir} after"
                f" reconnecting (exit {outcome.exit_code}); the next task gets a new environment"
            )
        if b"reset" in outcome.output:
            log.warning(
                "%s: the shell state was lost with the connection; starting afresh", self.where
            )
            if self._forward:
                self._write_forwarded()
        self.hold_lifeline()

    def _release_lifeline(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            try:
                held.close()
            except Exception:  # noqa: BLE001 - the connection may be gone already
                pass

    # --- clean-up -------------------------------------------------------------------------

    def _kill_everything(self) -> None:
        """Kill the background groups and every process carrying this environment's ids, and
        remove the state folder."""
        if not self.state_dir:
            return
        pid_files = [p.base + ".pid" for p in self._bg.values() if p.running]
        body = scripts.kill_everything(pid_files, [*self._old_tokens, self._token], self.state_dir)
        self.run_script(body, shell="/bin/sh", timeout=30)

    def cleanup(self) -> None:
        """Stop every process the environment started, remove its state, release the backend.
        Calling it again does nothing."""
        if self._closed:
            return
        try:
            self._kill_everything()
        except Exception as exc:  # noqa: BLE001 - clean-up goes on
            log.warning("%s: clean-up could not stop its processes: %s", self.where, exc)
        finally:
            self._closed = True
            with self._bg_lock:
                for proc in self._bg.values():
                    if proc.running:
                        proc.running = False
                        if proc.exit_code is None:
                            proc.exit_code = -1
            self._release_lifeline()
            self.teardown()
