"""Shared machinery of the execution environments that reach their sandbox through a command
channel: ``docker exec``, an SSH session, a Modal sandbox ``exec``.

A backend subclasses :class:`ShellEnvironment` and implements :meth:`ShellEnvironment._open`:
start a program (``argv``) in the sandbox, feed it ``stdin`` (or end-of-file) and return a
:class:`Channel` that yields its output. Everything else of the
:class:`~hermes_hookspecs.Environment` contract is built here, in POSIX shell run through that one
primitive, so that every backend behaves the same:

- Each command runs in a fresh shell (``bash`` when the sandbox has it, else ``/bin/sh``) that
  first restores the state the previous command left: the exported variables (``export -p``) and
  the working directory, kept in a private state folder made with ``mktemp -d``. When the command
  ends (normally, with ``exit``, or on a syntax error) an ``EXIT`` trap saves the state again and
  prints an end marker with the exit status. The marker carries a random nonce, so output cannot
  forge it, and the environment returns as soon as it arrives, even while a process the command
  left behind still holds the output open.
- The shell prints its process id first; a timeout kills that process group (and the process tree
  under it) through a second channel, so the command and its children stop and the state from
  before the command is kept.
- Files travel as raw bytes through the channel (``cat``), so reads and writes happen inside the
  sandbox with the sandbox user's permissions; a write goes to a temporary file that is renamed
  over the target.
- Background processes run under ``setsid`` with their output in a file of the state folder;
  ``poll`` and ``read_output`` fetch only the new bytes.
- Every process an environment starts carries ``HERMES_ENV_ID=<random>`` in its environment;
  clean-up kills every process that still carries it, then removes the state folder.

Only ``hermes_hookspecs`` is imported here; backends import their SDK lazily.
"""

from __future__ import annotations

import abc
import codecs
import logging
import os
import posixpath
import queue
import re
import secrets
import shlex
import threading
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from hermes_hookspecs import BackgroundProcess, CommandResult, Environment, EnvironmentUnavailable
from hermes_hookspecs.secrets import passthrough, secret_names

__all__ = [
    "Channel",
    "ExecOutcome",
    "ShellEnvironment",
    "forwarded_environ",
    "parse_bool",
    "parse_memory_mb",
    "safe_name",
    "terminal_config",
]

log = logging.getLogger("hermes.environments")

LEFTOVER_NOTE = (
    "\n[hermes: stopped processes this command left running; "
    "run long-lived processes with background=true]\n"
)

_ENV_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_DEFAULT_TIMEOUT = 180.0
_DEFAULT_MAX_OUTPUT = 64 * 1024 * 1024
_INTERNAL_TIMEOUT = 60.0


# --- config helpers shared by the backends ----------------------------------------------------


def terminal_config(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``terminal`` section of the effective configuration (empty when missing)."""
    section = config.get("terminal") if isinstance(config, Mapping) else None
    return section if isinstance(section, Mapping) else {}


def forwarded_environ(
    config: Mapping[str, Any] | None, environ: Mapping[str, str] | None = None
) -> dict[str, str]:
    """The variables of hermes' own environment a sandbox gets: only those
    ``terminal.env_passthrough`` names (and that are set). Nothing else of this machine's
    environment, and no secret, reaches a sandbox."""
    source = os.environ if environ is None else environ
    return {
        name: source[name]
        for name in sorted(passthrough(config))
        if name in source and _ENV_KEY.match(name)
    }


def parse_bool(value: Any, default: bool = False) -> bool:
    """A config flag: booleans, ``"true"``/``"yes"``/``"1"``/``"on"`` and their opposites."""
    if value is None or value == "":
        return default
    if isinstance(value, bool):
        return value
    text = str(value).strip().lower()
    if text in {"1", "true", "yes", "on"}:
        return True
    if text in {"0", "false", "no", "off"}:
        return False
    raise ValueError(f"not a yes/no value: {value!r}")


def parse_memory_mb(value: Any) -> int | None:
    """A memory size in MiB: a number is MiB (as in Hermes' ``container_memory: 5120``); a
    string may carry a unit (``512m``, ``2g``, ``2GiB``)."""
    if value is None or value == "" or value == 0:
        return None
    if isinstance(value, bool):
        raise ValueError(f"not a memory size: {value!r}")
    if isinstance(value, int | float):
        return int(value)
    match = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([kmgt]?)(?:i?b)?\s*", str(value).lower())
    if not match:
        raise ValueError(f"not a memory size: {value!r} (use MiB, or a unit: 512m, 2g)")
    number, unit = float(match.group(1)), match.group(2) or "m"
    factor = {"k": 1 / 1024, "m": 1, "g": 1024, "t": 1024 * 1024}[unit]
    return max(1, int(number * factor))


def safe_name(text: str, limit: int = 40) -> str:
    """``text`` reduced to characters that are safe in container and sandbox names."""
    cleaned = re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-.") or "task"
    return cleaned[:limit]


# --- the channel a backend provides -----------------------------------------------------------


class Channel(abc.ABC):
    """One program started in the sandbox, as returned by :meth:`ShellEnvironment._open`."""

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


@dataclass
class ExecOutcome:
    """What one script run through a channel produced."""

    output: bytes
    exit_code: int
    timed_out: bool = False
    pid: int | None = None
    finished: bool = True  # the end marker arrived (the script's EXIT trap ran)


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


def _q(text: str) -> str:
    return shlex.quote(text)


# --- shell snippets ---------------------------------------------------------------------------

# kill signal $1 to process group $2 and to the process tree under pid $2 (via /proc, where the
# processes did not stay in the group); numeric signals and `kill -N -PGID` work in bash, dash
# and busybox alike
_KILL_FUNCS = r"""
__hermes_tree() {
  for __hermes_c in $(cat /proc/$2/task/*/children 2>/dev/null); do
    __hermes_tree "$1" "$__hermes_c"
  done
  kill -$1 $2 2>/dev/null
}
__hermes_kill() { kill -$1 -$2 2>/dev/null; __hermes_tree "$1" "$2"; }
__hermes_alive() {
  if [ -r /proc/$1/stat ]; then
    __hermes_s=$(sed 's/.*) //' /proc/$1/stat 2>/dev/null | cut -d' ' -f1)
    [ -n "$__hermes_s" ] && [ "$__hermes_s" != Z ] && [ "$__hermes_s" != X ]
  else
    kill -0 "$1" 2>/dev/null
  fi
}
"""


# in the EXIT trap of a command: note child processes still running (they are killed after the
# end marker); reads /proc with builtins only, so it costs no process
_LEFTOVER_CHECK = r"""  __hermes_kids=
  read -r __hermes_kids < /proc/$$/task/$$/children 2>/dev/null
  for __hermes_c in $__hermes_kids; do
    read -r __hermes_s < /proc/$__hermes_c/stat 2>/dev/null || continue
    case "${__hermes_s##*) }" in
      Z*|X*) ;;
      *) printf '%s' "$__hermes_note"; break ;;
    esac
  done
"""


class ShellEnvironment(Environment):
    """An :class:`~hermes_hookspecs.Environment` on top of a command channel; see the module
    docstring. Subclasses connect, then call :meth:`_start`; they implement :meth:`_open` and
    :meth:`_teardown`."""

    name = "shell"
    #: how the backend is named in error messages ("docker container hermes-x", "ssh a@b")
    where: str = "sandbox"

    def __init__(
        self,
        *,
        task_id: str,
        workdir: str | None = None,
        default_timeout: float | None = None,
        max_output_bytes: int = _DEFAULT_MAX_OUTPUT,
        config: Mapping[str, Any] | None = None,
    ) -> None:
        self.task_id = task_id
        # what terminal.env_passthrough lets into the sandbox; every other secret stays out
        self._passthrough = passthrough(config)
        self._forward = forwarded_environ(config)
        self.workdir = workdir
        self.default_timeout = float(default_timeout or _DEFAULT_TIMEOUT)
        self.max_output_bytes = max(1024, int(max_output_bytes))
        self.state_dir = ""
        self.shell = "/bin/sh"
        self.home_cwd = ""
        self._token = secrets.token_hex(12)
        self._bg: dict[str, _Background] = {}
        self._bg_lock = threading.Lock()
        self._bg_counter = 0
        self._closed = False
        self._held: Any = None  # the lifeline of _hold_lifeline, when the backend holds one

    # --- what a backend implements ------------------------------------------------------------

    @abc.abstractmethod
    def _open(self, argv: list[str], stdin: bytes | None) -> Channel:
        """Start ``argv`` in the sandbox; write ``stdin`` to it and close its input (``None``:
        end-of-file at once). Raise :class:`EnvironmentUnavailable` when the sandbox is gone."""

    def _teardown(self) -> None:  # noqa: B027 - optional
        """Release the backend (remove the container, close the connection...)."""

    # --- start-up -----------------------------------------------------------------------------

    def _start(self) -> None:
        """Make the state folder, enter the working folder and find the shell."""
        workdir = self.workdir
        enter = (
            f'w={_q(workdir)}\nmkdir -p -- "$w" 2>/dev/null\n'
            'cd -- "$w" || { rm -rf -- "$S"; exit 91; }\n'
            if workdir
            else 'cd || cd / || { rm -rf -- "$S"; exit 91; }\n'
        )
        body = (
            "umask 077\n"
            'S=$(mktemp -d "${TMPDIR:-/tmp}/hermes-env.XXXXXX") || exit 90\n'
            "umask 022\n"
            f"{enter}"
            "printf 'state=%s\\n' \"$S\"\n"
            "printf 'cwd=%s\\n' \"$(pwd)\"\n"
            "printf 'shell=%s\\n' \"$(command -v bash 2>/dev/null || echo /bin/sh)\"\n"
        )
        outcome = self._exec(body, shell="/bin/sh", timeout=_INTERNAL_TIMEOUT, merge=True)
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
        exports = "".join(f"export {k}={_q(v)}\n" for k, v in self._forward.items())
        body = f"umask 077\ncat > {_q(self.state_dir + '/env')} || exit 1\n"
        outcome = self._exec(
            body, stdin=exports.encode("utf-8"), shell="/bin/sh", timeout=_INTERNAL_TIMEOUT
        )
        if outcome.exit_code != 0:
            raise EnvironmentUnavailable(
                f"{self.where}: could not pass terminal.env_passthrough variables (exit "
                f"{outcome.exit_code})"
            )

    # --- the one primitive: a script through a channel, with markers and a deadline -----------

    def _exec(
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
        """Run ``body`` in a fresh shell and collect its output until the end marker.

        ``end_body`` runs in the ``EXIT`` trap before the marker (``$__hermes_rc`` holds the
        status), ``after_marker`` after it. ``merge`` sends the shell's stderr to its output.
        """
        if self._closed:
            raise EnvironmentUnavailable(
                f"{self.where}: this environment was cleaned up; a new one is made on next use"
            )
        nonce = secrets.token_hex(8)
        pid_tag = f"\x1eHPID{nonce} ".encode()
        end_tag = f"\n\x1eHEND{nonce} ".encode()
        script = (
            ("exec 2>&1\n" if merge else "")
            + f"printf '\\036HPID{nonce} %s\\n' \"$$\"\n"
            + "__hermes_end() {\n  __hermes_rc=$?\n  trap - EXIT\n"
            + end_body
            + f"  printf '\\n\\036HEND{nonce} %s\\n' \"$__hermes_rc\"\n"
            + after_marker
            + '  exit "$__hermes_rc"\n}\n'
            + "trap __hermes_end EXIT\n"
            + body
            + "\n"
        )
        channel = self._open([shell or self.shell, "-c", script], stdin)
        items: queue.SimpleQueue[bytes | BaseException | None] = queue.SimpleQueue()

        def pump() -> None:
            try:
                for chunk in channel.chunks():
                    if chunk:
                        items.put(bytes(chunk))
            except BaseException as exc:  # noqa: BLE001 - handed to the waiting thread
                items.put(exc)
            finally:
                items.put(None)

        threading.Thread(target=pump, name=f"hermes-{self.name}-reader", daemon=True).start()

        buf = bytearray()
        started = False
        pid: int | None = None
        end_at = -1
        exit_code: int | None = None
        search_from = 0
        dropped = 0
        head_keep = self.max_output_bytes // 2
        error: BaseException | None = None
        timed_out = False
        eof = False
        deadline = time.monotonic() + timeout if timeout and timeout > 0 else None

        def feed(chunk: bytes) -> bool:
            """Take a chunk; True once the end marker is complete."""
            nonlocal started, pid, end_at, exit_code, search_from, dropped, buf
            buf += chunk
            if not started:
                at = buf.find(pid_tag)
                if at < 0:
                    return False
                newline = buf.find(b"\n", at + len(pid_tag))
                if newline < 0:
                    return False
                try:
                    pid = int(buf[at + len(pid_tag) : newline])
                except ValueError:
                    pid = None
                del buf[: newline + 1]
                started = True
                search_from = 0
            at = buf.find(end_tag, max(0, search_from))
            if at >= 0:
                newline = buf.find(b"\n", at + len(end_tag))
                if newline < 0:
                    search_from = at
                    return False
                try:
                    exit_code = int(buf[at + len(end_tag) : newline])
                except ValueError:
                    exit_code = -1
                end_at = at
                return True
            search_from = max(0, len(buf) - len(end_tag) - 32)
            if len(buf) > self.max_output_bytes + (1 << 20):
                cut = len(buf) - self.max_output_bytes // 2 - head_keep
                dropped += cut
                del buf[head_keep : head_keep + cut]
                search_from = max(0, len(buf) - len(end_tag) - 32)
            return False

        def wait_item(until: float | None) -> bytes | BaseException | None | Literal[False]:
            """The next item, or False when ``until`` passed."""
            try:
                if until is None:
                    return items.get()
                remaining = until - time.monotonic()
                if remaining <= 0:
                    return False
                return items.get(timeout=remaining)
            except queue.Empty:
                return False

        done = False
        while not done:
            item = wait_item(deadline)
            if item is False:
                timed_out = True
                break
            if item is None:
                eof = True
                break
            if isinstance(item, BaseException):
                error = item
                continue
            done = feed(item)

        if timed_out:
            if pid is not None:
                self._kill_tree(pid)
            grace = time.monotonic() + 2.0
            while True:  # what the command wrote before it was killed
                item = wait_item(grace)
                if item is False or item is None:
                    eof = item is None
                    break
                if isinstance(item, BaseException):
                    continue
                if feed(item):
                    break
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
        output = bytes(buf[:end_at] if end_at >= 0 else buf)
        if not started and not output:
            output = b""
        if dropped:
            note = f"\n[... {dropped} bytes of output dropped ...]\n".encode()
            output = output[:head_keep] + note + output[head_keep:]
        if timed_out:
            code = -1  # it never finished (as the local backend reports it)
        else:
            code = -1 if exit_code is None else exit_code
        return ExecOutcome(output, code, timed_out, pid, end_at >= 0)

    def _kill_tree(self, pid: int) -> None:
        """Kill process group ``pid`` and the tree under it, through a new channel."""
        try:
            self._exec(
                _KILL_FUNCS + f"__hermes_kill 9 {int(pid)}\nexit 0",
                shell="/bin/sh",
                timeout=15,
            )
        except Exception as exc:  # noqa: BLE001 - the caller reports the timeout anyway
            log.warning("%s: could not kill timed-out process %s: %s", self.where, pid, exc)

    # --- commands ------------------------------------------------------------------------------

    def _restore_state(self, cwd: str | None, env: Mapping[str, str] | None) -> tuple[str, str]:
        """Shell text that restores the saved state and applies the one-off ``cwd``/``env``,
        and the text the EXIT trap runs to save the state again (when ``$__hermes_save`` is 1)."""
        state = _q(self.state_dir)
        lines = [
            "__hermes_save=0",
            f"__hermes_note={_q(LEFTOVER_NOTE)}",
            f"S={state}",
            f"HERMES_ENV_ID={self._token}; export HERMES_ENV_ID",
            '[ -r "$S/env" ] && . "$S/env" >/dev/null 2>&1',
            f"__hermes_home={_q(self.home_cwd or '/')}",
            'cd -- "${__HERMES_CWD:-$__hermes_home}" 2>/dev/null || cd -- "$__hermes_home"'
            " 2>/dev/null",
        ]
        restore_env: list[str] = []
        hidden = secret_names() - self._passthrough
        for index, (key, value) in enumerate((env or {}).items()):
            if not _ENV_KEY.match(str(key)):
                raise ValueError(f"not a valid variable name: {key!r}")
            if key in hidden:
                log.debug("%s: not passing secret variable %s", self.where, key)
                continue
            value = str(value)
            lines.append(
                f"__hermes_o{index}=${{{key}+x}}; __hermes_v{index}=${{{key}-}}; "
                f"{key}={_q(value)}; export {key}"
            )
            restore_env.append(
                f'  if [ "${{{key}-}}" = {_q(value)} ]; then if [ -n "$__hermes_o{index}" ]; '
                f"then {key}=$__hermes_v{index}; else unset {key}; fi; fi\n"
            )
        if cwd:
            lines.append(f"cd -- {_q(cwd)} || exit 1")
        # the working directory travels with the exports, in __HERMES_CWD (no extra file)
        save_cwd = "" if cwd else "    __HERMES_CWD=$PWD; export __HERMES_CWD\n"
        end_body = (
            '  if [ "$__hermes_save" = 1 ]; then\n'
            + "".join("  " + line for line in restore_env)
            + save_cwd
            + '    export -p > "$S/env.$$" 2>/dev/null && mv -f "$S/env.$$" "$S/env"\n'
            + "  fi\n"
            + _LEFTOVER_CHECK
        )
        return "\n".join(lines) + "\n", end_body

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
        body = prelude + f"__hermes_save=1\neval {_q(command)}\n"
        data = stdin.encode("utf-8") if stdin is not None else None
        outcome = self._exec(
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

    # --- files ---------------------------------------------------------------------------------

    def _enter_cwd(self) -> str:
        return (
            f"[ -r {_q(self.state_dir + '/env')} ] && . {_q(self.state_dir + '/env')}"
            " >/dev/null 2>&1\n"
            f"__hermes_home={_q(self.home_cwd or '/')}\n"
            'cd -- "${__HERMES_CWD:-$__hermes_home}" 2>/dev/null || cd -- "$__hermes_home"'
            " 2>/dev/null\n"
        )

    def read_file(self, path: str) -> bytes:
        """The bytes of ``path`` (absolute, or relative to the working directory)."""
        body = (
            self._enter_cwd()
            + f"p={_q(path)}\n"
            + '[ -e "$p" ] || exit 2\n[ -d "$p" ] && exit 21\n[ -r "$p" ] || exit 13\n'
            + 'cat -- "$p" 2>/dev/null || exit 5\n'
        )
        outcome = self._exec(body, timeout=_INTERNAL_TIMEOUT * 5, merge=False)
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
        body = (
            self._enter_cwd()
            + f"p={_q(path)}\nd={_q(parent)}\n"
            + '[ -d "$p" ] && { echo "is a directory"; exit 21; }\n'
            + 'mkdir -p -- "$d" || exit 13\n'
            + 'if [ -L "$p" ]; then cat > "$p" || exit 5; exit 0; fi\n'
            + 't="$d/.hermes-write.$$"\n'
            + 'cat > "$t" || { rm -f "$t"; exit 5; }\n'
            + 'if [ -e "$p" ]; then m=$(stat -c %a -- "$p" 2>/dev/null) && chmod "$m" "$t"'
            + " 2>/dev/null; fi\n"
            + 'mv -f -- "$t" "$p" || { rm -f "$t"; exit 5; }\n'
        )
        outcome = self._exec(body, stdin=bytes(data), timeout=_INTERNAL_TIMEOUT * 5)
        if outcome.exit_code == 0:
            return
        message = outcome.output.decode("utf-8", "replace").strip()
        if outcome.exit_code == 21:
            raise IsADirectoryError(21, "Is a directory", path)
        if outcome.exit_code == 13 and "ermission" in message:
            raise PermissionError(13, message or "Permission denied", path)
        raise OSError(f"{self.where}: could not write {path}: {message or outcome.exit_code}")

    # --- background processes ------------------------------------------------------------------

    def start_background(
        self, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        """Start ``command`` detached (its own session), output to a file; return its id."""
        with self._bg_lock:
            self._bg_counter += 1
            process_id = f"bg{self._bg_counter}"
        base = f"{self.state_dir}/{process_id}"
        inner = (
            f"trap 'echo $? > {_q(base + '.rc.tmp')}; mv -f {_q(base + '.rc.tmp')} "
            f"{_q(base + '.rc')}' EXIT\neval {_q(command)}\n"
        )
        launch = f"{_q(self.shell)} -c {_q(inner)} </dev/null >{_q(base + '.out')} 2>&1 &"
        prelude, _ = self._restore_state(cwd, env)
        body = (
            prelude
            + "if command -v setsid >/dev/null 2>&1; then\n  setsid "
            + launch
            + "\nelse\n  "
            + launch
            + f"\nfi\necho $! > {_q(base + '.pid')}\n"
        )
        started_at = time.time()
        outcome = self._exec(body, timeout=_INTERNAL_TIMEOUT)
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
        if not proc.running and proc.exit_code is not None:
            fetch_status = "echo done\n"
        else:
            fetch_status = (
                'if [ -f "$B.rc" ]; then printf \'rc %s\\n\' "$(cat "$B.rc")"\n'
                'else p=$(cat "$B.pid" 2>/dev/null)\n'
                '  if [ -n "$p" ] && __hermes_alive "$p"; then echo running\n'
                # it may have written its status and ended between the two checks
                '  elif [ -f "$B.rc" ]; then printf \'rc %s\\n\' "$(cat "$B.rc")"\n'
                "  else echo gone; fi\n"
                "fi\n"
            )
        body = (
            _KILL_FUNCS
            + f"B={_q(proc.base)}\n"
            + fetch_status
            + f'tail -c +{proc.bytes_read + 1} "$B.out" 2>/dev/null\nexit 0\n'
        )
        outcome = self._exec(body, shell="/bin/sh", timeout=_INTERNAL_TIMEOUT, merge=False)
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

    def _snapshot(self, proc: _Background) -> BackgroundProcess:
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
        body = (
            _KILL_FUNCS
            + f"B={_q(proc.base)}\n"
            + '[ -f "$B.rc" ] && exit 0\np=$(cat "$B.pid" 2>/dev/null)\n[ -n "$p" ] || exit 0\n'
            + '__hermes_kill 15 "$p"\ni=0\n'
            + 'while __hermes_alive "$p" && [ $i -lt 20 ]; do sleep 0.1; i=$((i+1)); done\n'
            + 'c=143; __hermes_alive "$p" && c=137\n__hermes_kill 9 "$p"\n'
            + '[ -f "$B.rc" ] || echo $c > "$B.rc"\nexit 0\n'
        )
        self._exec(body, shell="/bin/sh", timeout=_INTERNAL_TIMEOUT)
        self._refresh(proc)

    def list_background(self) -> list[BackgroundProcess]:
        """Every background process this environment started, refreshed."""
        with self._bg_lock:
            procs = list(self._bg.values())
        for proc in procs:
            if proc.running:
                self._refresh(proc)
        return [self._snapshot(proc) for proc in procs]

    # --- clean-up ------------------------------------------------------------------------------

    def _kill_tagged(self) -> str:
        """Shell text that kills every process carrying this environment's id (twice, for ones
        forked meanwhile) and removes the state folder."""
        return (
            "for n in 1 2; do\n"
            + "  for d in /proc/[0-9]*; do\n"
            + '    p=${d#/proc/}; [ "$p" = "$$" ] && continue\n'
            + f'    grep -q "HERMES_ENV_ID={self._token}" "$d/environ" 2>/dev/null'
            + ' && kill -9 "$p" 2>/dev/null\n'
            + "  done\ndone\n"
            + f"rm -rf -- {_q(self.state_dir)}\n"
        )

    def _kill_everything(self) -> None:
        """Kill the background groups and every process carrying this environment's id, and
        remove the state folder."""
        if not self.state_dir:
            return
        groups = " ".join(
            f'"$(cat {_q(p.base + ".pid")} 2>/dev/null)"' for p in self._bg.values() if p.running
        )
        body = (
            _KILL_FUNCS
            + f'for p in {groups}; do [ -n "$p" ] && __hermes_kill 9 "$p"; done\n'
            + self._kill_tagged()
            + "exit 0\n"
        )
        self._exec(body, shell="/bin/sh", timeout=30)

    # --- tied to this process ------------------------------------------------------------------

    def _open_held(self, argv: list[str]) -> Any:
        """Optional: start ``argv`` in the sandbox with its standard input held open by this
        process, and return a handle with ``close()``. When the handle is closed, or this process
        dies in any way (its connection closes with it), the program reads end of file.
        ``None`` when the backend cannot."""
        return None

    def _hold_lifeline(self) -> None:
        """Tie this environment's processes to this process: a program in the sandbox waits for
        end of file on an input this process holds, then kills every process carrying the
        environment's id and removes the state folder. For backends whose sandbox outlives
        hermes (a persistent container, a remote host); call it after :meth:`_start`."""
        script = (
            "trap '' HUP INT\n"
            "while read -r __hermes_line; do :; done\n" + self._kill_tagged() + "exit 0\n"
        )
        self._held = self._open_held(["/bin/sh", "-c", script])

    def _release_lifeline(self) -> None:
        held, self._held = self._held, None
        if held is not None:
            try:
                held.close()
            except Exception:  # noqa: BLE001 - the connection may be gone already
                pass

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
            self._teardown()
