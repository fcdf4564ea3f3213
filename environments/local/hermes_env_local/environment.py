"""The local environment itself: one bash process per command, in the sandbox, the state
(working directory, exported variables) carried from one command to the next (see the package's
docstring)."""

from __future__ import annotations

import atexit
import glob as globmod
import itertools
import os
import shutil
import signal
import subprocess
import tempfile
import threading
import time
import weakref
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from hermes_hookspecs import (
    BackgroundProcess,
    CommandResult,
    Environment,
    EnvironmentUnavailable,
    PathSight,
)
from hermes_runtime.home import default_home
from hermes_runtime.secrets import secret_names

from .background import Background
from .exports import SKIPPED_VARIABLES, _parse_exports
from .guard import GATE_PREAMBLE, process_guard, spawn_gated
from .processes import (
    current_umask,
    decode,
    drain,
    exit_status,
    hide_own_environment,
    read_until_closed,
    signal_group,
)

if TYPE_CHECKING:  # the sandbox loads with the first environment: `hermes --help` loads this
    from hermes_env_sandbox import SandboxSettings

DEFAULT_TIMEOUT = 180.0
END_MARK = b"\0__HERMES_END__\0"

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

_live: weakref.WeakSet[LocalEnvironment] = weakref.WeakSet()


@atexit.register
def _cleanup_all() -> None:  # pragma: no cover - runs at interpreter exit
    for env in list(_live):
        try:
            env.cleanup()
        except Exception:
            pass


def _glob_free(text: str) -> bool:
    return not any(c in text for c in "*?[")


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
        only ``cwd`` and the task's ``/tmp`` writable, no network, the home folder empty but for
        ``cwd`` and the toolchains, hermes's home and the credential folders hidden, the
        environment an allow-list); ``SandboxSettings("off")`` runs commands with the user's
        full authority. A ``cwd`` that is the home folder or ``/`` is refused
        (:class:`hermes_env_sandbox.SandboxUnavailable`), as is a ``home_allow`` path holding a
        credential folder.
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
        self._background: dict[str, Background] = {}
        self._umask = current_umask()
        hide_own_environment()
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

    def path_sight(self, path: str) -> PathSight:
        """What commands see of ``path`` (absolute, as commands name it): ``write`` everywhere
        when the sandbox is off, else what the sandbox shows there (its ``/tmp`` is the task's
        own)."""
        if not self._box.enabled:
            return "write"
        host = self._host(os.path.normpath(path))  # makes the task's folder first
        return self._box.sandbox().path_sight(host)

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
        text = note + decode(output)
        if leftover:
            text += (
                "\n[hermes: stopped processes this command left running; "
                "run long-lived processes with background=true]\n"
            )
        if timed_out:
            exit_code = -1
        else:
            exit_code = exit_status(proc.returncode)
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
        chunks, state, timed_out, leftover = read_until_closed(proc, limit, state_fd)
        with self._lock:  # once reaped, its group id may be reused: cleanup must not signal it
            self._active.pop(proc.pid, None)
        proc.wait()
        drain(state_fd, state)  # the trap wrote before the shell exited: the rest is in the pipe
        if contained:
            signal_group(proc.pid, signal.SIGKILL)
        elif not timed_out and not leftover and signal_group(proc.pid, 0):
            # the shell is gone but processes of its group live on (not holding the output)
            leftover = True
            signal_group(proc.pid, signal.SIGTERM)
            time.sleep(0.01)
            signal_group(proc.pid, signal.SIGKILL)
        return b"".join(chunks), b"".join(state), timed_out, leftover

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
            self._background[process_id] = Background(
                process_id, command, time.time(), proc, log_path
            )
        return process_id

    def _get(self, process_id: str) -> Background:
        with self._lock:
            try:
                return self._background[process_id]
            except KeyError:
                raise KeyError(f"no background process {process_id!r}") from None

    def poll(self, process_id: str) -> BackgroundProcess:
        """The state of a background process; ``KeyError`` for an unknown id."""
        return self._get(process_id).describe()

    def read_output(self, process_id: str, offset: int = 0) -> tuple[str, int]:
        """Output from character ``offset`` and the offset to read from next."""
        text = self._get(process_id).output()
        offset = max(0, min(offset, len(text)))
        return text[offset:], len(text)

    def kill(self, process_id: str) -> None:
        """SIGTERM the process group, SIGKILL it after a grace period, and reap the leader."""
        self._get(process_id).kill()

    def list_background(self) -> list[BackgroundProcess]:
        """Every background process started here, oldest first."""
        with self._lock:
            items = list(self._background.values())
        return [bg.describe() for bg in items]

    # --- clean-up -----------------------------------------------------------------------------

    def cleanup(self) -> None:
        """Stop every process this environment started and remove its scratch folder."""
        with self._lock:
            active = list(self._active.values())
            background = list(self._background.values())
            folder, self._dir = self._dir, None
        for proc in active:  # running foreground commands (another thread is collecting them)
            signal_group(proc.pid, signal.SIGKILL)
        for bg in background:
            try:
                bg.kill()
            except Exception:
                pass
        if folder:
            shutil.rmtree(folder, ignore_errors=True)
