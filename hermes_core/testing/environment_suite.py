"""A behaviour suite every :class:`~hermes_hookspecs.Environment` implementation runs.

Subclass :class:`EnvironmentBehaviour` in a test module and provide a pytest fixture named ``env``
that yields a ready environment (and cleans it up afterwards)::

    import pytest
    from hermes_core.testing.environment_suite import EnvironmentBehaviour

    class TestMyBackend(EnvironmentBehaviour):
        @pytest.fixture
        def env(self):
            environment = MyEnvironment(config={}, task_id="suite")
            yield environment
            environment.cleanup()

Every test of the suite is then collected for the subclass. What the subclass may also provide:

- ``disposable_env`` (fixture): an environment the clean-up tests may destroy. The default is
  ``env`` itself, which is right when ``env`` is function scoped; override it when ``env`` is
  shared by several tests (class or module scope).
- ``observer`` (fixture): a second environment that sees the same processes as
  ``disposable_env`` (another local environment, another connection to the same SSH host), used to
  check that nothing survives :meth:`~hermes_hookspecs.Environment.cleanup`. The default ``None``
  skips that check (e.g. for Docker, where removing the container is the proof).
- ``timeout_slack`` (class attribute, seconds): how much later than its timeout a command may
  come back; default 5.
- ``supports_background`` (class attribute): ``False`` for an environment that starts no
  background processes; the background tests then check that it says so
  (``NotImplementedError``).

The suite never assumes the starting working directory or environment of ``env``: each test
works in its own folder made with ``mktemp -d`` inside the environment (the ``scratch`` fixture),
uses only POSIX shell and coreutils/busybox commands, and reads the state of processes from
``/proc`` when it exists (so zombies in a container without an init count as stopped).

Contract details the suite pins down (beyond the docstrings of ``Environment``):

- ``run`` reports stdout and stderr together in ``output``; ``exit_code`` is the command's
  status; a command killed by its timeout has ``timed_out=True`` and a non-zero ``exit_code``,
  keeps the output it wrote before, and its child processes are killed too.
- ``cd`` and ``export``/``unset`` persist to later commands; the ``cwd`` and ``env`` arguments
  apply to one command only. A command that times out, fails or calls ``exit`` keeps the state
  from before it (and the environment stays usable).
- Without ``stdin`` a command reads end-of-file at once (it never waits for input).
- ``read_file``/``write_file`` take absolute paths, or paths relative to the persistent working
  directory; ``write_file`` creates parent folders, round-trips any bytes, and should replace the
  file atomically (write a temporary file beside it, then rename it over the old one).
- ``list_files`` never runs anything a pattern contains (refusing the pattern is fine).
- Background processes run in the persistent working directory; ``read_output(id, offset)``
  returns output from ``offset`` and the next offset; ``kill`` stops the process and its children.
"""

from __future__ import annotations

import functools
import shlex
import time
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from hermes_hookspecs import BackgroundProcess, CommandResult, Environment

__all__ = ["EnvironmentBehaviour", "wait_for"]

_STATE = (
    "if [ -r /proc/{pid}/stat ]; then "
    "s=$(cut -d' ' -f3 /proc/{pid}/stat 2>/dev/null); "
    'if [ -n "$s" ] && [ "$s" != Z ] && [ "$s" != X ]; then echo alive; else echo dead; fi; '
    "elif kill -0 {pid} 2>/dev/null; then echo alive; else echo dead; fi"
)


def wait_for(condition: Callable[[], Any], timeout: float = 10.0, interval: float = 0.05) -> Any:
    """Call ``condition`` until it returns something true and return that; fail after
    ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {timeout} s")
        time.sleep(interval)


def process_alive(pid: int) -> bool:
    """Whether process ``pid`` of this machine runs (a zombie, or one ending meanwhile, not)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[-1].split()[0] not in ("Z", "X")
    except (FileNotFoundError, ProcessLookupError):
        return False


class EnvironmentBehaviour:
    """The shared behaviour suite; see the module docstring for what a subclass provides."""

    timeout_slack: float = 5.0
    supports_background: bool = True

    # --- fixtures a subclass may override -------------------------------------------------

    @pytest.fixture
    def env(self) -> Iterator[Environment]:
        """The environment under test; a subclass must provide it."""
        raise NotImplementedError("subclasses of EnvironmentBehaviour provide an `env` fixture")
        yield  # pragma: no cover

    @pytest.fixture
    def disposable_env(self, env: Environment) -> Environment:
        """An environment the clean-up tests may destroy (``env`` by default)."""
        return env

    @pytest.fixture
    def observer(self) -> Environment | None:
        """An environment that sees the processes of ``disposable_env``; ``None`` skips the
        check that clean-up stopped them."""
        return None

    @pytest.fixture
    def scratch(self, env: Environment) -> Iterator[str]:
        """A fresh empty folder inside the environment (absolute path), removed afterwards."""
        result = env.run("mktemp -d")
        assert result.exit_code == 0, result.output
        path = result.output.strip().splitlines()[-1]
        assert path.startswith("/"), path
        yield path
        try:
            env.run(f"chmod -R u+w {shlex.quote(path)} 2>/dev/null; rm -rf {shlex.quote(path)}")
        except Exception:
            pass

    # --- helpers ---------------------------------------------------------------------------

    @staticmethod
    def sh(env: Environment, command: str, **kwargs: Any) -> CommandResult:
        """Run ``command`` and fail the test unless it exits with 0."""
        result = env.run(command, **kwargs)
        assert result.exit_code == 0, f"{command!r} exited {result.exit_code}: {result.output}"
        return result

    @staticmethod
    def out(env: Environment, command: str, **kwargs: Any) -> str:
        """The stripped output of ``command``."""
        return env.run(command, **kwargs).output.strip()

    @staticmethod
    def alive(env: Environment, pid: int) -> bool:
        """Whether process ``pid`` (as seen inside ``env``) is running (zombies are not)."""
        return env.run(_STATE.format(pid=int(pid))).output.strip().endswith("alive")

    def read_pid(self, env: Environment, path: str) -> int:
        """Wait for a pid file written by a command and return the pid in it."""
        text = wait_for(lambda: self.out(env, f"cat {shlex.quote(path)} 2>/dev/null"))
        return int(text.split()[0])

    def wait_finished(self, env: Environment, pid: str, timeout: float = 10.0) -> BackgroundProcess:
        """Wait until background process ``pid`` ended and return its state."""
        finished: BackgroundProcess = wait_for(
            lambda: p if not (p := env.poll(pid)).running else None, timeout
        )
        return finished

    def read_all(self, env: Environment, pid: str) -> str:
        """All the output of a background process, read in pieces until no more comes."""
        text, offset = "", 0
        while True:
            piece, offset = env.read_output(pid, offset)
            if not piece:
                return text
            text += piece

    # --- commands, exit codes, output --------------------------------------------------------

    def test_output_and_exit_code_zero(self, env: Environment) -> None:
        """A command's output comes back with exit code 0, not timed out, not in the background."""
        result = env.run("echo hello")
        assert result.exit_code == 0
        assert result.output.strip() == "hello"
        assert result.timed_out is False
        assert result.background_id is None

    def test_exit_code_is_reported(self, env: Environment) -> None:
        """A command's own exit status is the result's ``exit_code``."""
        assert env.run("false").exit_code == 1
        assert env.run("sh -c 'exit 42'").exit_code == 42

    def test_exit_builtin_keeps_environment_usable(self, env: Environment, scratch: str) -> None:
        """``exit N`` reports N and keeps the working directory; later commands still run."""
        self.sh(env, f"cd {shlex.quote(scratch)}")
        assert env.run("exit 7").exit_code == 7
        assert self.out(env, "pwd") == scratch
        assert self.out(env, "echo still here") == "still here"

    def test_command_not_found_is_127(self, env: Environment) -> None:
        """An unknown command exits 127 and says it was not found."""
        result = env.run("definitely-not-a-command-hermes-suite")
        assert result.exit_code == 127
        assert "not found" in result.output

    def test_syntax_error_is_reported_and_recovers(self, env: Environment) -> None:
        """A shell syntax error fails the command, not the environment."""
        result = env.run("if then fi (")
        assert result.exit_code != 0
        assert self.out(env, "echo ok") == "ok"

    def test_stderr_is_in_output(self, env: Environment) -> None:
        """Standard error is reported in ``output`` beside standard output."""
        result = env.run("echo to-out; echo to-err >&2; exit 3")
        assert "to-out" in result.output and "to-err" in result.output
        assert result.exit_code == 3

    def test_quotes_and_special_characters(self, env: Environment) -> None:
        """Quotes, ``$`` and backslashes reach the shell as written."""
        result = env.run("printf '%s|' 'a b' \"c'd\" '$HOME' 'back\\slash'")
        assert result.output == "a b|c'd|$HOME|back\\slash|"

    def test_multiline_command_and_heredoc(self, env: Environment) -> None:
        """A command of several lines, with a here-document, runs as one script."""
        command = "x=1\nif [ $x = 1 ]; then\n  echo one\nfi\ncat <<'EOF'\nliteral $x\nEOF"
        result = env.run(command)
        assert result.exit_code == 0
        assert result.output.splitlines() == ["one", "literal $x"]

    def test_unicode_output(self, env: Environment) -> None:
        """UTF-8 output is decoded."""
        assert self.out(env, "printf 'h\\303\\251llo \\342\\234\\223\\n'") == "héllo ✓"

    def test_undecodable_output_does_not_fail(self, env: Environment) -> None:
        """Bytes that are not UTF-8 do not fail the command."""
        result = env.run("printf 'a\\377b\\n'")
        assert result.exit_code == 0
        assert result.output.startswith("a") and "b" in result.output

    def test_large_output_is_complete(self, env: Environment) -> None:
        """A large standard output comes back whole."""
        result = env.run("seq 1 200000")
        assert result.exit_code == 0
        lines = result.output.split()
        assert len(lines) == 200000
        assert lines[0] == "1" and lines[-1] == "200000"

    def test_large_output_on_stderr(self, env: Environment) -> None:
        """A large standard error comes back whole."""
        result = env.run("seq 1 100000 >&2")
        assert result.exit_code == 0
        assert len(result.output.split()) == 100000

    # --- stdin ---------------------------------------------------------------------------------

    def test_stdin_is_passed(self, env: Environment) -> None:
        """``stdin`` is the command's standard input."""
        result = env.run("cat", stdin="line one\nline two\n")
        assert result.output.splitlines() == ["line one", "line two"]
        assert self.out(env, "wc -l", stdin="a\nb\nc\n") == "3"

    def test_large_stdin(self, env: Environment) -> None:
        """A megabyte of ``stdin`` reaches the command whole."""
        data = "x" * 999 + "\n"
        assert self.out(env, "wc -c", stdin=data * 1000) == "1000000"

    def test_no_stdin_reads_end_of_file(self, env: Environment) -> None:
        """Without ``stdin`` a command reads end-of-file at once."""
        started = time.monotonic()
        result = env.run("cat; echo done", timeout=10)
        assert result.timed_out is False
        assert result.output.strip() == "done"
        assert time.monotonic() - started < 5

    # --- persistence of working directory and variables -----------------------------------

    def test_cd_persists(self, env: Environment, scratch: str) -> None:
        """``cd`` carries over to the next commands."""
        self.sh(env, f"mkdir -p {shlex.quote(scratch)}/sub && cd {shlex.quote(scratch)}/sub")
        assert self.out(env, "pwd") == f"{scratch}/sub"
        self.sh(env, "cd ..")
        assert self.out(env, "pwd") == scratch

    def test_cd_into_folder_with_spaces(self, env: Environment, scratch: str) -> None:
        """``cd`` into a folder whose name has a space carries over."""
        folder = f"{scratch}/with space"
        self.sh(env, f"mkdir -p {shlex.quote(folder)} && cd {shlex.quote(folder)}")
        assert self.out(env, "pwd") == folder

    def test_export_persists(self, env: Environment) -> None:
        """``export`` and ``unset`` carry over to the next commands and their children."""
        self.sh(env, "export HERMES_SUITE_VAR=persisted")
        assert self.out(env, 'echo "$HERMES_SUITE_VAR"') == "persisted"
        assert self.out(env, "sh -c 'echo $HERMES_SUITE_VAR'") == "persisted"
        self.sh(env, "unset HERMES_SUITE_VAR")
        assert self.out(env, 'echo "[$HERMES_SUITE_VAR]"') == "[]"

    def test_exported_value_with_special_characters(self, env: Environment) -> None:
        """An exported value with newlines, quotes and ``$`` carries over unchanged."""
        value = "a b\nc \"d\" 'e' $f \\g"
        self.sh(env, f"export HERMES_SUITE_ODD={shlex.quote(value)}")
        assert env.run("printf '%s' \"$HERMES_SUITE_ODD\"").output == value
        self.sh(env, "unset HERMES_SUITE_ODD")

    def test_cwd_argument_applies_to_one_command(self, env: Environment, scratch: str) -> None:
        """The ``cwd`` argument moves one command only."""
        self.sh(env, f"mkdir -p {shlex.quote(scratch)}/other && cd {shlex.quote(scratch)}")
        assert self.out(env, "pwd", cwd=f"{scratch}/other") == f"{scratch}/other"
        assert self.out(env, "pwd") == scratch

    def test_relative_cwd_argument(self, env: Environment, scratch: str) -> None:
        """A relative ``cwd`` argument starts at the working directory."""
        self.sh(env, f"mkdir -p {shlex.quote(scratch)}/rel && cd {shlex.quote(scratch)}")
        assert self.out(env, "pwd", cwd="rel") == f"{scratch}/rel"

    def test_missing_cwd_argument_fails_clearly(self, env: Environment, scratch: str) -> None:
        """A ``cwd`` argument that does not exist fails the command before it runs."""
        result = env.run("echo should-not-run", cwd=f"{scratch}/missing")
        assert result.exit_code != 0
        assert "should-not-run" not in result.output

    def test_env_argument_applies_to_one_command(self, env: Environment) -> None:
        """The ``env`` argument sets variables for one command only."""
        result = env.run('echo "$HERMES_SUITE_ONE"', env={"HERMES_SUITE_ONE": "v 1"})
        assert result.output.strip() == "v 1"
        assert self.out(env, 'echo "[$HERMES_SUITE_ONE]"') == "[]"

    def test_state_survives_failures(self, env: Environment, scratch: str) -> None:
        """A failing, broken or timed-out command keeps the state from before it."""
        self.sh(env, f"cd {shlex.quote(scratch)} && export HERMES_SUITE_KEEP=1")
        env.run("false")
        env.run("if then fi (")
        env.run("sleep 10", timeout=0.5)
        assert self.out(env, "pwd") == scratch
        assert self.out(env, 'echo "$HERMES_SUITE_KEEP"') == "1"
        self.sh(env, "unset HERMES_SUITE_KEEP")

    # --- timeouts ------------------------------------------------------------------------------

    def test_timeout_kills_and_reports(self, env: Environment) -> None:
        """A command past its timeout is stopped, reported ``timed_out``, and keeps its earlier
        output."""
        started = time.monotonic()
        result = env.run("echo before; sleep 30; echo after", timeout=1)
        elapsed = time.monotonic() - started
        assert result.timed_out is True
        assert result.exit_code != 0
        assert "before" in result.output and "after" not in result.output
        assert elapsed < 1 + self.timeout_slack

    def test_timeout_kills_child_processes(self, env: Environment, scratch: str) -> None:
        """A timeout stops the processes the command started too."""
        pidfile = f"{scratch}/child.pid"
        result = env.run(f"sleep 60 & echo $! > {shlex.quote(pidfile)}; wait", timeout=1)
        assert result.timed_out is True
        pid = self.read_pid(env, pidfile)
        wait_for(lambda: not self.alive(env, pid), timeout=self.timeout_slack)

    def test_timeout_kills_processes_holding_the_output(self, env: Environment) -> None:
        """A background child holding the output open does not outlast the timeout."""
        started = time.monotonic()
        result = env.run("(sleep 30; echo late) & echo early", timeout=1)
        assert time.monotonic() - started < 1 + self.timeout_slack
        assert "early" in result.output and "late" not in result.output

    def test_fast_command_is_not_timed_out(self, env: Environment) -> None:
        """A command that ends in time is not reported timed out."""
        result = env.run("echo quick", timeout=5)
        assert result.timed_out is False and result.exit_code == 0

    # --- files ---------------------------------------------------------------------------------

    def test_text_file_round_trip(self, env: Environment, scratch: str) -> None:
        """Text written with ``write_file`` reads back, and commands see it."""
        path = f"{scratch}/hello.txt"
        env.write_file(path, "héllo\nworld\n".encode())
        assert env.read_file(path) == "héllo\nworld\n".encode()
        assert self.out(env, f"cat {shlex.quote(path)}") == "héllo\nworld"

    def test_binary_file_round_trip(self, env: Environment, scratch: str) -> None:
        """Any bytes written with ``write_file`` read back unchanged."""
        data = bytes(range(256)) * 64 + b"\x00\r\n\x1a"
        env.write_file(f"{scratch}/blob.bin", data)
        assert env.read_file(f"{scratch}/blob.bin") == data
        assert self.out(env, f"wc -c < {shlex.quote(scratch)}/blob.bin") == str(len(data))

    def test_empty_file_round_trip(self, env: Environment, scratch: str) -> None:
        """An empty file reads back empty."""
        env.write_file(f"{scratch}/empty", b"")
        assert env.read_file(f"{scratch}/empty") == b""

    def test_large_file_round_trip(self, env: Environment, scratch: str) -> None:
        """A file of several megabytes reads back unchanged."""
        data = bytes(range(251)) * 20_000  # about 5 MB
        env.write_file(f"{scratch}/large.bin", data)
        assert env.read_file(f"{scratch}/large.bin") == data

    def test_write_creates_nested_folders(self, env: Environment, scratch: str) -> None:
        """``write_file`` creates the missing parent folders."""
        env.write_file(f"{scratch}/a/b/c/deep.txt", b"deep")
        assert env.read_file(f"{scratch}/a/b/c/deep.txt") == b"deep"
        assert self.out(env, f"cat {shlex.quote(scratch)}/a/b/c/deep.txt") == "deep"

    def test_write_overwrites(self, env: Environment, scratch: str) -> None:
        """``write_file`` replaces a longer file whole."""
        env.write_file(f"{scratch}/f", b"a much longer first version")
        env.write_file(f"{scratch}/f", b"short")
        assert env.read_file(f"{scratch}/f") == b"short"

    def test_file_names_with_spaces_and_quotes(self, env: Environment, scratch: str) -> None:
        """File names with spaces and quotes work for files and commands alike."""
        path = f'{scratch}/it\'s a "file".txt'
        env.write_file(path, b"odd")
        assert env.read_file(path) == b"odd"
        assert self.out(env, f"cat {shlex.quote(path)}") == "odd"

    def test_read_sees_files_written_by_commands(self, env: Environment, scratch: str) -> None:
        """``read_file`` reads what commands wrote."""
        self.sh(env, f"printf 'from shell' > {shlex.quote(scratch)}/made.txt")
        assert env.read_file(f"{scratch}/made.txt") == b"from shell"

    def test_read_missing_file_raises(self, env: Environment, scratch: str) -> None:
        """Reading a missing file raises ``FileNotFoundError``."""
        with pytest.raises(FileNotFoundError):
            env.read_file(f"{scratch}/nope.txt")

    def test_relative_paths_follow_the_working_directory(
        self, env: Environment, scratch: str
    ) -> None:
        """Relative file paths start at the persistent working directory."""
        self.sh(env, f"cd {shlex.quote(scratch)}")
        env.write_file("rel/inside.txt", b"relative")
        assert self.out(env, f"cat {shlex.quote(scratch)}/rel/inside.txt") == "relative"
        assert env.read_file("rel/inside.txt") == b"relative"

    def test_list_files(self, env: Environment, scratch: str) -> None:
        """``list_files`` matches glob patterns, relative to ``cwd`` or absolute."""
        for name in ("a.py", "b.py", "c.txt", "sub/d.py"):
            env.write_file(f"{scratch}/{name}", b"x")
        assert sorted(env.list_files("*.py", cwd=scratch)) == ["a.py", "b.py"]
        assert sorted(env.list_files("sub/*.py", cwd=scratch)) == ["sub/d.py"]
        assert env.list_files("*.none", cwd=scratch) == []
        absolute = sorted(env.list_files(f"{scratch}/*.txt"))
        assert absolute == [f"{scratch}/c.txt"]

    def test_list_files_cannot_run_commands(self, env: Environment, scratch: str) -> None:
        """A pattern is never run: shell syntax in it matches nothing or is refused."""
        for pattern in ("*.py; touch injected", "$(touch injected)", "`touch injected`"):
            try:
                assert env.list_files(pattern, cwd=scratch) == []
            except ValueError:
                pass  # refusing the pattern is fine too
        assert self.out(env, f"ls -A {shlex.quote(scratch)}") == ""

    # --- background processes ---------------------------------------------------------------

    def _require_background(self, env: Environment) -> None:
        if not self.supports_background:
            with pytest.raises(NotImplementedError):
                env.start_background("true")
            pytest.skip(f"{type(env).__name__} runs no background processes")

    def test_background_runs_and_reports(self, env: Environment) -> None:
        """A background process runs to its end; its state and all its output are reported."""
        self._require_background(env)
        pid = env.start_background("echo first; sleep 0.3; echo second; exit 4")
        assert isinstance(pid, str) and pid
        state = self.wait_finished(env, pid)
        assert state.id == pid
        assert state.exit_code == 4
        assert state.running is False
        assert "echo first" in state.command
        output = self.read_all(env, pid)
        assert output.split() == ["first", "second"]
        assert env.poll(pid).output_chars >= len("first\nsecond\n")

    def test_background_via_run(self, env: Environment) -> None:
        """``run(..., background=True)`` starts a background process and returns its id."""
        self._require_background(env)
        result = env.run("echo via-run", background=True)
        assert result.background_id
        self.wait_finished(env, result.background_id)
        assert self.read_all(env, result.background_id).strip() == "via-run"

    def test_background_is_running_while_it_runs(self, env: Environment) -> None:
        """A background process is reported running, with no exit code, until it ends."""
        self._require_background(env)
        pid = env.start_background("sleep 30")
        try:
            state = env.poll(pid)
            assert state.running is True and state.exit_code is None
            assert state.started_at <= time.time()
        finally:
            env.kill(pid)

    def test_background_output_is_read_incrementally(self, env: Environment) -> None:
        """``read_output`` returns what is new from an offset, and the next offset."""
        self._require_background(env)
        pid = env.start_background("echo one; sleep 1; echo two")
        first, offset = wait_for(lambda: r if (r := env.read_output(pid, 0))[0] else None)
        assert first.strip() == "one"
        assert offset == len(first)
        self.wait_finished(env, pid)
        rest, end = env.read_output(pid, offset)
        assert rest.strip() == "two"
        assert env.read_output(pid, end) == ("", end)

    def test_background_uses_working_directory_and_exports(
        self, env: Environment, scratch: str
    ) -> None:
        """A background process starts in the working directory with the exported variables."""
        self._require_background(env)
        self.sh(env, f"cd {shlex.quote(scratch)} && export HERMES_SUITE_BG=seen")
        pid = env.start_background('pwd; echo "$HERMES_SUITE_BG"')
        self.wait_finished(env, pid)
        assert self.read_all(env, pid).split() == [scratch, "seen"]
        self.sh(env, "unset HERMES_SUITE_BG")

    def test_background_kill_stops_process_and_children(
        self, env: Environment, scratch: str
    ) -> None:
        """``kill`` stops a background process and the processes it started."""
        self._require_background(env)
        pidfile = f"{scratch}/bg-child.pid"
        pid = env.start_background(f"sleep 60 & echo $! > {shlex.quote(pidfile)}; wait")
        child = self.read_pid(env, pidfile)
        assert self.alive(env, child)
        env.kill(pid)
        state = wait_for(lambda: p if not (p := env.poll(pid)).running else None)
        assert state.running is False
        wait_for(lambda: not self.alive(env, child), timeout=self.timeout_slack)

    def test_background_kill_of_finished_process_is_harmless(self, env: Environment) -> None:
        """Killing a finished background process keeps its exit code."""
        self._require_background(env)
        pid = env.start_background("true")
        self.wait_finished(env, pid)
        env.kill(pid)
        assert env.poll(pid).exit_code == 0

    def test_background_unknown_id(self, env: Environment) -> None:
        """An unknown background id raises ``KeyError``."""
        self._require_background(env)
        with pytest.raises(KeyError):
            env.poll("no-such-process")

    def test_list_background(self, env: Environment) -> None:
        """``list_background`` reports every background process, running or finished."""
        self._require_background(env)
        quick = env.start_background("true")
        slow = env.start_background("sleep 30")
        try:
            self.wait_finished(env, quick)
            listed = {p.id: p for p in env.list_background()}
            assert quick in listed and slow in listed
            assert listed[quick].running is False
            assert listed[slow].running is True
        finally:
            env.kill(slow)

    def test_foreground_runs_while_background_runs(self, env: Environment) -> None:
        """A foreground command runs at once while a background process runs."""
        self._require_background(env)
        pid = env.start_background("sleep 30")
        try:
            started = time.monotonic()
            assert self.out(env, "echo fg") == "fg"
            assert time.monotonic() - started < 5
        finally:
            env.kill(pid)

    # --- clean-up ------------------------------------------------------------------------------

    def test_cleanup_stops_everything(
        self, disposable_env: Environment, observer: Environment | None
    ) -> None:
        """``cleanup`` stops every process the environment started."""
        env = disposable_env
        tmp = self.out(env, "mktemp -d")
        pids = []
        if self.supports_background:
            env.start_background(f"sleep 120 & echo $! > {tmp}/bg.pid; wait")
            pids.append(self.read_pid(env, f"{tmp}/bg.pid"))
            env.start_background(f"echo $$ > {tmp}/bg2.pid; exec sleep 120")
            pids.append(self.read_pid(env, f"{tmp}/bg2.pid"))
        env.cleanup()
        if observer is None:
            pytest.skip("no observer environment to check that the processes stopped")

        def gone(pid: int) -> bool:
            return not self.alive(observer, pid)

        try:
            for pid in pids:
                wait_for(functools.partial(gone, pid), timeout=self.timeout_slack)
        finally:
            observer.run(f"rm -rf {shlex.quote(tmp)}")

    def test_cleanup_twice_is_harmless(self, disposable_env: Environment) -> None:
        """A second ``cleanup`` does nothing and raises nothing."""
        disposable_env.run("true")
        disposable_env.cleanup()
        disposable_env.cleanup()
