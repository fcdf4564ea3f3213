"""The ``local`` execution environment: commands run as subprocesses on this machine.

How a command runs (see README.md for the reasoning):

- Every command is a fresh ``bash --noprofile --norc -c COMMAND`` in its own session and process
  group. The working directory and exported variables the previous command left are handed to
  it by :class:`subprocess.Popen` (``cwd=``, ``env=``); a small ``BASH_ENV`` preamble installs an
  ``EXIT`` trap that writes ``$PWD`` and every exported variable to a per-command state file
  when the shell ends (with builtins only: no extra process). The next command starts from that
  state. A command that is killed, calls ``exec`` or replaces the trap leaves the state as it was.
- A timeout sends SIGTERM to the whole process group, then SIGKILL. When the shell ends but
  processes it started still run, they are stopped too (and the output says so): a command owns
  everything it starts. Long-running processes belong in the background.
- Background processes are process groups of their own writing to a log file; the group leader is
  not reaped until it is killed or the environment is cleaned up, so its group id can never be
  reused by an unrelated process while we might signal it.
- Nothing outlives hermes: every group is registered with a guard process that kills the groups
  still registered when hermes dies, ``SIGKILL`` included (:mod:`hermes_env_local.guard`).
"""

from __future__ import annotations

import atexit
import codecs
import glob as globmod
import itertools
import os
import re
import selectors
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import (
    BackgroundProcess,
    CommandResult,
    Environment,
    EnvironmentUnavailable,
    hookimpl,
)
from hermes_runtime.home import default_home
from hermes_runtime.secrets import passthrough, secret_names

from .config_schema import hermes_register_config  # noqa: F401 - a hook of this plugin
from .guard import GATE_PREAMBLE, process_guard, spawn_gated

if TYPE_CHECKING:  # the sandbox loads with the first environment: `hermes --help` loads this
    from hermes_env_sandbox import SandboxSettings

__all__ = [
    "BACKEND",
    "LocalBackend",
    "LocalEnvironment",
    "check_config",
    "create",
    "hermes_register_environments",
]

DEFAULT_TIMEOUT = 180.0
LEFTOVER_GRACE = 0.2
"""Seconds the output pipe may stay open after the shell ended before the group is stopped."""
TERM_GRACE = 0.5
"""Seconds between SIGTERM and SIGKILL."""
END_MARK = b"\0__HERMES_END__\0"
SKIPPED_VARIABLES = frozenset({"SHLVL", "_", "PWD", "BASH_ENV", "__HERMES_STATE"})

PREAMBLE = (
    GATE_PREAMBLE
    + r"""__hermes_fd=$__HERMES_STATE; unset BASH_ENV __HERMES_STATE
__hermes_save() {
  builtin printf '%s\0' "$PWD"; builtin export -p; builtin printf '\0__HERMES_END__\0'
} >&"$__hermes_fd"
trap __hermes_save EXIT
"""
)
BACKGROUND_PREAMBLE = GATE_PREAMBLE + "builtin unset BASH_ENV\n"
_DECLARE = re.compile(rb"(?:declare -[A-Za-z]*x[A-Za-z]*|export) ([A-Za-z_][A-Za-z0-9_]*)")
_ANSI_C = re.compile(
    rb"\\(x[0-9a-fA-F]{1,2}|u[0-9a-fA-F]{1,4}|U[0-9a-fA-F]{1,8}|[0-7]{1,3}|c.|.)", re.S
)
_ANSI_SIMPLE = {
    b"n": b"\n", b"t": b"\t", b"r": b"\r", b"a": b"\a", b"b": b"\b", b"f": b"\f", b"v": b"\v",
    b"e": b"\x1b", b"E": b"\x1b", b"\\": b"\\", b"'": b"'", b'"': b'"', b"?": b"?",
}  # fmt: skip

_live: weakref.WeakSet[LocalEnvironment] = weakref.WeakSet()


@atexit.register
def _cleanup_all() -> None:  # pragma: no cover - runs at interpreter exit
    for env in list(_live):
        try:
            env.cleanup()
        except Exception:
            pass


_hidden = False


def _hide_own_environment() -> None:
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


def _umask() -> int:
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except OSError:
        pass
    return 0o022


def _glob_free(text: str) -> bool:
    return not any(c in text for c in "*?[")


def _exit_status(returncode: int) -> int:
    """Shell convention: a process killed by signal N exits with 128+N."""
    return 128 - returncode if returncode < 0 else returncode


def _decode(data: bytes, final: bool = True) -> str:
    """UTF-8 with replacement characters; when not ``final`` an incomplete character at the
    end is left out (it is read whole the next time)."""
    if final:
        return data.decode("utf-8", errors="replace")
    decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
    return decoder.decode(data, final=False)


def _signal_group(pgid: int, sig: int) -> bool:
    try:
        os.killpg(pgid, sig)
        return True
    except (ProcessLookupError, PermissionError):
        return False


def _leader_exited(pid: int) -> bool:
    """Whether the process ``pid`` (our child) ended, without reaping it."""
    try:
        info = os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
    except ChildProcessError:
        return True
    return info is not None


def _ansi_c(body: bytes) -> bytes:
    """Decode the inside of a bash ``$'...'`` string."""

    def one(match: re.Match[bytes]) -> bytes:
        code = match.group(1)
        head = code[:1]
        try:
            if head == b"x":
                return bytes([int(code[1:], 16)])
            if head in (b"u", b"U"):
                return chr(int(code[1:], 16)).encode("utf-8", "surrogateescape")
            if head in b"01234567":
                return bytes([int(code, 8) & 0xFF])
        except (ValueError, OverflowError):
            return code
        if head == b"c" and len(code) == 2:
            return bytes([code[1:2].upper()[0] ^ 0x40])
        return _ANSI_SIMPLE.get(code, b"\\" + code)

    return _ANSI_C.sub(one, body)


def _parse_exports(data: bytes) -> dict[str, str]:
    """Parse bash's ``export -p`` output (``declare -x NAME="value"``, ``NAME=$'...'`` for
    values with control characters, a bare ``NAME`` for one exported but never set)."""
    env: dict[str, str] = {}
    i, n = 0, len(data)
    while i < n:
        match = _DECLARE.match(data, i)
        if match is None:
            end = data.find(b"\n", i)
            i = n if end < 0 else end + 1
            continue
        name = os.fsdecode(match.group(1))
        i = match.end()
        if data[i : i + 1] != b"=":
            end = data.find(b"\n", i)
            i = n if end < 0 else end + 1
            continue
        i += 1
        if data[i : i + 1] == b'"':
            i += 1
            value = bytearray()
            while i < n and data[i] != 0x22:
                if data[i] == 0x5C and i + 1 < n and data[i + 1] in b'"\\$`':
                    value.append(data[i + 1])
                    i += 2
                else:
                    value.append(data[i])
                    i += 1
            i += 1
            raw = bytes(value)
        elif data.startswith(b"$'", i):
            end = i + 2
            while end < n and data[end] != 0x27:
                end += 2 if data[end] == 0x5C else 1
            raw = _ansi_c(data[i + 2 : end])
            i = end + 1
        else:
            end = data.find(b"\n", i)
            end = n if end < 0 else end
            raw, i = data[i:end], end
        if name not in SKIPPED_VARIABLES:
            env[name] = os.fsdecode(raw)
    return env


@dataclass
class _Background:
    id: str
    command: str
    started_at: float
    proc: subprocess.Popen[bytes]
    log_path: str
    exit_code: int | None = None
    reaped: bool = False


class LocalEnvironment(Environment):
    """Runs commands on this machine; one instance per task.

    :param cwd: the starting working directory (default: the current one).
    :param timeout: seconds a command may run when :meth:`run` gets no ``timeout``.
    :param env: the starting exported variables (default: this process's environment).
    :param shell: the bash executable.
    :param env_passthrough: secret variables commands may see nevertheless; every other secret
        (``hermes_runtime.secrets.secret_names``: provider keys, whatever ``.env`` set) is left
        out of every command's environment.
    :param sandbox: the OS sandbox every command runs in (default: the ``workspace`` profile:
        only ``cwd`` and the task's ``/tmp`` writable, no network, hermes's home and the
        credential folders hidden, the environment an allow-list); ``SandboxSettings("off")``
        runs commands with the user's full authority.
    :param hermes_home: hermes's own folder, hidden from commands (default: the home hermes
        resolves, ``$HERMES_HOME`` or ``~/.hermes``).
    """

    name = "local"

    def __init__(
        self,
        cwd: str | None = None,
        *,
        timeout: float = DEFAULT_TIMEOUT,
        env: Mapping[str, str] | None = None,
        shell: str = "bash",
        env_passthrough: Iterable[str] = (),
        sandbox: SandboxSettings | None = None,
        hermes_home: str | None = None,
    ) -> None:
        start = os.path.abspath(os.path.expanduser(cwd or os.getcwd()))
        if not os.path.isdir(start):
            raise EnvironmentUnavailable(
                f"the local working directory {start!r} does not exist; "
                "set terminal.cwd to an existing folder"
            )
        resolved_shell = shutil.which(shell)
        if resolved_shell is None:
            raise EnvironmentUnavailable(
                f"the local environment needs {shell!r} on PATH; install bash"
            )
        self.shell = resolved_shell
        self.timeout = float(timeout)
        self._cwd = start
        self._passthrough = frozenset(env_passthrough)
        from hermes_env_sandbox import SandboxSettings

        from .sandboxing import SandboxRunner

        self._box = SandboxRunner(
            sandbox or SandboxSettings(),
            workspace=start,
            hermes_home=hermes_home or str(default_home()),
            search_path=(os.environ if env is None else env).get("PATH"),
        )
        base = self._without_secrets(os.environ if env is None else env)
        for key in SKIPPED_VARIABLES - {"_"}:
            base.pop(key, None)
        self._escalation_env = base  # never what a sandboxed command exported
        self._env: dict[str, str] = self._box.starting_environment(base, self._passthrough)
        self._lock = threading.Lock()
        self._process_ids = itertools.count(1)
        self._dir: str | None = None
        self._preamble_path = ""
        self._background_preamble_path = ""
        self._active: dict[int, subprocess.Popen[bytes]] = {}
        self._background: dict[str, _Background] = {}
        self._umask = _umask()
        _hide_own_environment()
        _live.add(self)

    # --- state ----------------------------------------------------------------------------

    @property
    def cwd(self) -> str:
        """The persistent working directory."""
        return self._cwd

    @property
    def exported(self) -> dict[str, str]:
        """A copy of the persistent exported variables."""
        return dict(self._env)

    def _without_secrets(self, env: Mapping[str, str]) -> dict[str, str]:
        """``env`` without the secret variables that are not passed through (checked at every
        command: a key marked after this environment was made stays out too)."""
        hidden = secret_names() - self._passthrough
        return {k: v for k, v in env.items() if k not in hidden}

    def _workdir(self) -> str:
        with self._lock:
            if self._dir is None or not os.path.isdir(self._dir):
                self._dir = tempfile.mkdtemp(prefix="hermes-local-")
                self._preamble_path = os.path.join(self._dir, "preamble.sh")
                limits = self._box.limits()
                with open(self._preamble_path, "w") as handle:
                    handle.write(GATE_PREAMBLE + limits + PREAMBLE[len(GATE_PREAMBLE) :])
                self._background_preamble_path = os.path.join(self._dir, "background.sh")
                with open(self._background_preamble_path, "w") as handle:
                    handle.write(GATE_PREAMBLE + limits + BACKGROUND_PREAMBLE[len(GATE_PREAMBLE) :])
                for name, text in (
                    ("escalated.sh", PREAMBLE),
                    ("escalated-bg.sh", BACKGROUND_PREAMBLE),
                ):
                    with open(os.path.join(self._dir, name), "w") as handle:
                        handle.write(text)
                self._box.use_folder(self._dir)
            return self._dir

    def _resolve(self, path: str, base: str | None = None) -> str:
        return os.path.normpath(os.path.join(base or self._cwd, os.path.expanduser(path)))

    def _host(self, path: str) -> str:
        """Where the absolute ``path``, as commands see it, is on this machine: the task's
        ``/tmp`` is a folder of its own in the sandbox, and the file operations find there what
        commands wrote to ``/tmp``. (They are hermes's own, not commands: the file tools guard
        them with their own rules and approvals.)"""
        if not self._box.enabled:
            return path
        self._workdir()
        return self._box.sandbox().host_path(path)

    def _is_dir(self, path: str) -> bool:
        return os.path.isdir(self._host(path))

    def _current_cwd(self) -> tuple[str, str]:
        """The persistent working directory, moved up to an existing folder if it vanished,
        and a note saying so."""
        cwd = self._cwd
        if self._is_dir(cwd):
            return cwd, ""
        parent = cwd
        while not self._is_dir(parent) and parent != "/":
            parent = os.path.dirname(parent)
        with self._lock:
            self._cwd = parent
        return parent, f"[hermes: the working directory {cwd} no longer exists; ran in {parent}]\n"

    def _load_state(self, data: bytes, *, keep_cwd: bool, passed: Mapping[str, str]) -> None:
        """Adopt the state the shell's EXIT trap wrote: ``$PWD``, NUL, ``export -p``, end mark."""
        if not data.endswith(END_MARK):
            return  # killed, exec'd, or the trap was replaced: keep the previous state
        cwd_bytes, _, exports = data[: -len(END_MARK)].partition(b"\0")
        env = _parse_exports(exports)
        cwd = os.fsdecode(cwd_bytes)
        with self._lock:
            for key, value in passed.items():  # one-command variables do not persist
                if env.get(key) == value:
                    if key in self._env:
                        env[key] = self._env[key]
                    else:
                        env.pop(key, None)
            self._env = env
            if not keep_cwd and cwd.startswith("/"):
                self._cwd = cwd

    # --- commands -----------------------------------------------------------------------------

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
        """Run ``command`` in bash, in the sandbox; see the module docstring for how state
        persists."""
        return self._run(command, cwd, env, timeout, stdin, background, escalated=False)

    def run_escalated(
        self,
        command: str,
        *,
        cwd: str | None = None,
        timeout: float | None = None,
        background: bool = False,
    ) -> CommandResult:
        """Run ``command`` once outside the sandbox, with the user's full authority (after a
        person approved exactly that). It starts from hermes's own environment without secrets,
        not from what sandboxed commands exported, and the state it leaves is not kept."""
        return self._run(command, cwd, None, timeout, None, background, escalated=True)

    @property
    def sandbox_summary(self) -> str:
        """One line on what commands may see, write and reach (``""`` when the sandbox is off)."""
        return self._box.describe()

    def sandbox_hint(self, result: CommandResult) -> str:
        """The note naming the sandbox limit a failed command met (``""`` when none)."""
        return self._box.hint(result.output, result.exit_code)

    def _run(
        self,
        command: str,
        cwd: str | None,
        env: Mapping[str, str] | None,
        timeout: float | None,
        stdin: str | None,
        background: bool,
        *,
        escalated: bool,
    ) -> CommandResult:
        if background:
            process_id = self._start_background(command, cwd, env, escalated=escalated)
            return CommandResult(
                output=f"started in the background as {process_id}",
                exit_code=0,
                background_id=process_id,
            )
        base, note = self._current_cwd()
        workdir = base if cwd is None else self._resolve(cwd, base)
        if not self._is_dir(workdir):
            return CommandResult(output=f"cd: {workdir}: No such file or directory\n", exit_code=1)
        folder = self._workdir()
        with self._lock:
            child_env = dict(self._escalation_env if escalated else self._env)
        if env:
            child_env.update(env)
        child_env = self._without_secrets(child_env)
        state_read, state_write = os.pipe()
        child_env["__HERMES_STATE"] = str(state_write)
        stdin_file: Any = subprocess.DEVNULL
        if stdin is not None:
            stdin_file = tempfile.TemporaryFile(dir=folder)
            stdin_file.write(stdin.encode("utf-8", errors="surrogateescape"))
            stdin_file.seek(0)
        try:
            proc = self._spawn(
                command,
                preamble=os.path.join(folder, "escalated.sh" if escalated else "preamble.sh"),
                sandboxed=not escalated,
                env=child_env,
                stdin=stdin_file,
                stdout=subprocess.PIPE,
                stderr=subprocess.STDOUT,
                cwd=workdir,
                pass_fds=(state_write,),
            )
        except OSError as exc:
            os.close(state_read)
            return CommandResult(output=f"hermes: could not start bash: {exc}\n", exit_code=-1)
        except BaseException:
            os.close(state_read)
            raise
        finally:
            os.close(state_write)
            if stdin is not None:
                stdin_file.close()
        with self._lock:
            self._active[proc.pid] = proc
        try:
            limit = self.timeout if timeout is None else float(timeout)
            contained = self._box.enabled and not escalated
            output, state, timed_out, leftover = self._collect(
                proc, limit, state_read, contained=contained
            )
        finally:
            os.close(state_read)
            with self._lock:
                self._active.pop(proc.pid, None)
            # after _collect stopped what was left of the group: its id may now be reused
            process_guard.release(proc.pid)
        text = note + _decode(output)
        if leftover:
            text += (
                "\n[hermes: stopped processes this command left running; "
                "run long-lived processes with background=true]\n"
            )
        if timed_out:
            exit_code = -1
        else:
            exit_code = _exit_status(proc.returncode)
            if not escalated:
                self._load_state(state, keep_cwd=cwd is not None, passed=env or {})
        return CommandResult(output=text, exit_code=exit_code, timed_out=timed_out)

    def _spawn(
        self,
        command: str,
        *,
        preamble: str,
        sandboxed: bool,
        env: dict[str, str],
        cwd: str,
        pass_fds: Iterable[int] = (),
        **popen: Any,
    ) -> subprocess.Popen[bytes]:
        """Start ``command`` in bash (in the sandbox when ``sandboxed`` and the sandbox is on),
        in a session of its own that the guard process kills if hermes dies (see
        :mod:`hermes_env_local.guard`); ``preamble`` is the ``BASH_ENV`` file, which starts
        with the gate."""
        argv = [self.shell, "--noprofile", "--norc", "-c", command]
        child_env = dict(env)
        child_env["BASH_ENV"] = preamble
        held: list[int] = []
        if sandboxed and self._box.enabled:
            argv, child_env["BASH_ENV"], held = self._box.wrap(argv, cwd=cwd, preamble=preamble)
            cwd = "/"  # bwrap's own; the command starts in --chdir
        try:
            return spawn_gated(
                argv,
                env=child_env,
                register=process_guard.watch,
                cwd=cwd,
                pass_fds=(*pass_fds, *held),
                **popen,
            )
        finally:
            for fd in held:
                os.close(fd)

    def _collect(
        self, proc: subprocess.Popen[bytes], limit: float, state_fd: int, *, contained: bool
    ) -> tuple[bytes, bytes, bool, bool]:
        """Read the output (and the state pipe) until the command's processes close the
        output; enforce the timeout.

        Returns the output, the state, whether the timeout struck, and whether leftover
        processes had to be stopped. The process is reaped before returning. A ``contained``
        command ran in a PID namespace, which the kernel empties when the shell ends: what is
        left of its group is already dying and is only made sure of, not reported.
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
                        done = True  # every writer closed the output
                if done:
                    break
                if exited_at is None and (not events or time.monotonic() >= next_check):
                    # the shell may be gone while something it started keeps writing
                    next_check = time.monotonic() + 0.1
                    if _leader_exited(proc.pid):
                        exited_at = time.monotonic()
            if timed_out or leftover:
                self._stop_group(proc.pid, fd, chunks, selector)
        finally:
            selector.close()
            proc.stdout.close()
        with self._lock:  # once reaped, its group id may be reused: cleanup must not signal it
            self._active.pop(proc.pid, None)
        proc.wait()
        while True:  # the trap wrote before the shell exited: the rest is in the pipe
            try:
                chunk = os.read(state_fd, 1 << 16)
            except BlockingIOError:
                break
            if not chunk:
                break
            state.append(chunk)
        if contained:
            _signal_group(proc.pid, signal.SIGKILL)
        elif not timed_out and not leftover and _signal_group(proc.pid, 0):
            # the shell is gone but processes of its group live on (not holding the output)
            leftover = True
            _signal_group(proc.pid, signal.SIGTERM)
            time.sleep(0.01)
            _signal_group(proc.pid, signal.SIGKILL)
        return b"".join(chunks), b"".join(state), timed_out, leftover

    @staticmethod
    def _stop_group(
        pgid: int, fd: int, chunks: list[bytes], selector: selectors.BaseSelector
    ) -> None:
        """SIGTERM the group, drain the output for a moment, then SIGKILL what is left; the
        leader is not reaped yet, so ``pgid`` still names this group."""
        for sig, grace in ((signal.SIGTERM, TERM_GRACE), (signal.SIGKILL, 1.0)):
            _signal_group(pgid, sig)
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

    # --- files --------------------------------------------------------------------------------

    def read_file(self, path: str) -> bytes:
        """The bytes of ``path`` (relative paths start at the working directory)."""
        with open(self._host(self._resolve(path)), "rb") as handle:
            return handle.read()

    def write_file(self, path: str, data: bytes) -> None:
        """Replace ``path`` atomically (temporary file + rename), creating parent folders and
        keeping the permissions of a file it replaces; a symlink's target is written."""
        target = os.path.realpath(self._host(self._resolve(path)))
        parent = os.path.dirname(target)
        os.makedirs(parent, exist_ok=True)
        try:
            mode = os.stat(target).st_mode & 0o7777
        except FileNotFoundError:
            mode = 0o666 & ~self._umask
        fd, tmp = tempfile.mkstemp(
            dir=parent, prefix=f".{os.path.basename(target)}.", suffix=".tmp"
        )
        try:
            with os.fdopen(fd, "wb") as handle:
                handle.write(data)
            os.chmod(tmp, mode)
            os.replace(tmp, target)
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def list_files(self, pattern: str, cwd: str | None = None) -> list[str]:
        """Paths matching the glob ``pattern`` (``**`` crosses folders), sorted; relative
        patterns give paths relative to ``cwd`` (default: the working directory). Nothing is
        run through a shell."""
        base = self._resolve(cwd) if cwd else self._cwd
        pattern = os.path.expanduser(pattern)
        if os.path.isabs(pattern):
            root = pattern.split("/")[1]
            if not self._box.enabled or _glob_free(root) and self._host("/" + root) == "/" + root:
                return sorted(globmod.glob(pattern, recursive=True))
            host = self._host("/tmp")  # only /tmp is elsewhere on this machine
            found = globmod.glob(pattern.replace("/tmp", globmod.escape(host), 1), recursive=True)
            return sorted("/tmp" + p[len(host) :] for p in found)
        return sorted(globmod.glob(pattern, root_dir=self._host(base), recursive=True))

    # --- background processes -----------------------------------------------------------------

    def start_background(
        self, command: str, *, cwd: str | None = None, env: Mapping[str, str] | None = None
    ) -> str:
        """Start ``command`` (in the sandbox) in its own process group with output going to a
        log file."""
        return self._start_background(command, cwd, env, escalated=False)

    def _start_background(
        self,
        command: str,
        cwd: str | None,
        env: Mapping[str, str] | None,
        *,
        escalated: bool,
    ) -> str:
        base, _note = self._current_cwd()
        workdir = base if cwd is None else self._resolve(cwd, base)
        if not self._is_dir(workdir):
            raise FileNotFoundError(f"no such directory: {workdir}")
        folder = self._workdir()
        with self._lock:
            process_id = f"bg-{next(self._process_ids)}"
            child_env = dict(self._escalation_env if escalated else self._env)
        if env:
            child_env.update(env)
        child_env = self._without_secrets(child_env)
        log_path = os.path.join(folder, f"{process_id}.log")
        with open(log_path, "wb") as log:
            proc = self._spawn(
                command,
                preamble=os.path.join(folder, "escalated-bg.sh" if escalated else "background.sh"),
                sandboxed=not escalated,
                env=child_env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                cwd=workdir,
            )
        with self._lock:
            self._background[process_id] = _Background(
                process_id, command, time.time(), proc, log_path
            )
        return process_id

    def _get(self, process_id: str) -> _Background:
        with self._lock:
            try:
                return self._background[process_id]
            except KeyError:
                raise KeyError(f"no background process {process_id!r}") from None

    @staticmethod
    def _refresh(bg: _Background) -> None:
        if bg.exit_code is not None:
            return
        try:
            info = os.waitid(os.P_PID, bg.proc.pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
        except ChildProcessError:
            info = None
            bg.proc.poll()
            if bg.proc.returncode is not None:
                bg.exit_code = _exit_status(bg.proc.returncode)
            return
        if info is None:
            return
        if info.si_code == os.CLD_EXITED:
            bg.exit_code = info.si_status
        else:
            bg.exit_code = 128 + info.si_status

    def _describe(self, bg: _Background) -> BackgroundProcess:
        self._refresh(bg)
        try:
            with open(bg.log_path, "rb") as handle:
                chars = len(_decode(handle.read(), final=bg.exit_code is not None))
        except OSError:
            chars = 0
        return BackgroundProcess(
            id=bg.id,
            command=bg.command,
            started_at=bg.started_at,
            running=bg.exit_code is None,
            exit_code=bg.exit_code,
            output_chars=chars,
        )

    def poll(self, process_id: str) -> BackgroundProcess:
        """The state of a background process; ``KeyError`` for an unknown id."""
        return self._describe(self._get(process_id))

    def read_output(self, process_id: str, offset: int = 0) -> tuple[str, int]:
        """Output from character ``offset`` and the offset to read from next."""
        bg = self._get(process_id)
        self._refresh(bg)
        try:
            with open(bg.log_path, "rb") as handle:
                text = _decode(handle.read(), final=bg.exit_code is not None)
        except OSError:
            text = ""
        offset = max(0, min(offset, len(text)))
        return text[offset:], len(text)

    def kill(self, process_id: str) -> None:
        """SIGTERM the process group, SIGKILL it after a grace period, and reap the leader."""
        self._kill(self._get(process_id))

    def _kill(self, bg: _Background) -> None:
        if bg.reaped:
            return
        pid = bg.proc.pid
        self._refresh(bg)
        _signal_group(pid, signal.SIGTERM)
        end = time.monotonic() + TERM_GRACE
        while time.monotonic() < end and not _leader_exited(pid):
            time.sleep(0.01)
        _signal_group(pid, signal.SIGKILL)  # the unreaped leader keeps the group id ours
        process_guard.release(pid)
        bg.proc.wait()
        bg.reaped = True
        if bg.exit_code is None:
            bg.exit_code = _exit_status(bg.proc.returncode)

    def list_background(self) -> list[BackgroundProcess]:
        """Every background process started here, oldest first."""
        with self._lock:
            items = list(self._background.values())
        return [self._describe(bg) for bg in items]

    # --- clean-up -----------------------------------------------------------------------------

    def cleanup(self) -> None:
        """Stop every process this environment started and remove its scratch folder."""
        with self._lock:
            active = list(self._active.values())
            background = list(self._background.values())
            folder, self._dir = self._dir, None
        for proc in active:  # running foreground commands (another thread is collecting them)
            _signal_group(proc.pid, signal.SIGKILL)
        for bg in background:
            try:
                self._kill(bg)
            except Exception:
                pass
        if folder:
            shutil.rmtree(folder, ignore_errors=True)


def create(config: Mapping[str, Any], task_id: str) -> LocalEnvironment:
    """The environment factory: reads ``terminal.cwd``, ``terminal.timeout``,
    ``terminal.env_passthrough`` and ``terminal.sandbox``."""
    from .sandboxing import sandbox_settings

    terminal = config.get("terminal") or {}
    cwd = terminal.get("cwd")
    timeout = terminal.get("timeout") or DEFAULT_TIMEOUT
    return LocalEnvironment(
        None if cwd in (None, "", ".") else str(cwd),
        timeout=float(timeout),
        env_passthrough=passthrough(config),
        sandbox=sandbox_settings(config),
    )


def check_config(config: Mapping[str, Any]) -> list[str]:
    """The problems of the local settings, without starting anything: ``terminal.cwd`` is
    not an existing folder, ``terminal.timeout`` is not a number of seconds, bash is not on
    ``PATH``, ``terminal.sandbox`` is malformed or no sandbox can start here (unless it is
    ``off``)."""
    problems = _settings_problems(config)
    if not problems:
        from hermes_env_sandbox import unavailable_reason

        from .sandboxing import sandbox_settings

        reason = unavailable_reason() if sandbox_settings(config).enabled else None
        if reason:
            problems.append(reason)
    return problems


def _settings_problems(config: Mapping[str, Any]) -> list[str]:
    """:func:`check_config` without the sandbox's availability, which refuses each command
    instead (the model is told why, and the fix)."""
    from hermes_env_sandbox import settings_problems

    terminal = config.get("terminal") or {}
    problems = []
    cwd = terminal.get("cwd")
    if cwd not in (None, "", "."):
        path = os.path.abspath(os.path.expanduser(str(cwd)))
        if not os.path.exists(path):
            problems.append(
                f"the local working directory {path!r} does not exist; set terminal.cwd to an"
                " existing folder"
            )
        elif not os.path.isdir(path):
            problems.append(f"terminal.cwd {path!r} is not a folder; set it to a folder")
    timeout = terminal.get("timeout")
    if timeout not in (None, ""):
        try:
            if isinstance(timeout, bool) or float(timeout) <= 0:
                raise ValueError
        except (TypeError, ValueError):
            problems.append(f"terminal.timeout must be a number of seconds, got {timeout!r}")
    if shutil.which("bash") is None:
        problems.append("the local environment needs bash on PATH; install bash")
    return problems + settings_problems(config)


class LocalBackend:
    """The ``local`` backend as it is registered: ``factory(config, task_id)`` (see
    :func:`create`) with its configuration check."""

    def __call__(self, config: Mapping[str, Any], task_id: str) -> LocalEnvironment:
        """A new local environment for ``task_id``; see :func:`create`."""
        problems = _settings_problems(config)
        if problems:
            raise EnvironmentUnavailable("; ".join(problems))
        return create(config, task_id)

    @staticmethod
    def check_config(config: Mapping[str, Any]) -> list[str]:
        """See :func:`check_config`."""
        return check_config(config)

    @staticmethod
    def check(config: Mapping[str, Any]) -> str:
        """What ``hermes doctor`` reports once the settings are fine: the sandbox commands run
        in (starting one to be sure), or that it is off."""
        from hermes_env_sandbox import SandboxUnavailable, find_bwrap, unavailable_reason

        from .sandboxing import sandbox_settings

        settings = sandbox_settings(config)
        if not settings.enabled:
            return (
                "sandbox OFF (terminal.sandbox: off): commands run with your full authority, "
                "with access to your files, keys and network"
            )
        reason = unavailable_reason()
        if reason:
            raise SandboxUnavailable(reason)
        net = "network on" if settings.network else "no network"
        return f"commands run in the sandbox ({settings.profile}, {net}, bwrap {find_bwrap()})"


BACKEND = LocalBackend()
"""The registered factory."""


@hookimpl
def hermes_register_environments(register: Any) -> None:
    """Register the ``local`` backend."""
    register("local", BACKEND)
