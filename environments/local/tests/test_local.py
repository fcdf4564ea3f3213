"""The local environment: the shared behaviour suite plus what only a local backend can show."""

from __future__ import annotations

import os
import time

import pytest
from hermes_env_local import (
    BACKEND,
    LocalEnvironment,
    check_config,
    create,
)
from hermes_env_local.exports import _parse_exports
from hermes_env_local.processes import current_umask as _umask
from hermes_env_sandbox import SandboxSettings

from hermes_core.testing import load_plugin, make_agent
from hermes_core.testing.environment_suite import EnvironmentBehaviour, process_alive, wait_for
from hermes_hookspecs import EnvironmentUnavailable

OFF = SandboxSettings(profile="off")


class TestLocalBehaviour(EnvironmentBehaviour):
    """The shared suite with the sandbox off (``terminal.sandbox: off``): processes of one
    command are visible to the next, so the suite's process checks apply as written."""

    timeout_slack = 3.0

    @pytest.fixture
    def env(self, tmp_path):
        environment = LocalEnvironment(str(tmp_path), sandbox=OFF)
        yield environment
        environment.cleanup()

    @pytest.fixture
    def observer(self, tmp_path):
        other = LocalEnvironment(str(tmp_path), sandbox=OFF)
        yield other
        other.cleanup()


class TestSandboxedLocalBehaviour(EnvironmentBehaviour):
    """The shared suite in the default sandbox. Each command has a PID namespace of its own,
    so the suite's checks that read another command's pids are made from this machine's side
    (``host_pids``) instead."""

    timeout_slack = 3.0

    @pytest.fixture
    def env(self, tmp_path):
        environment = LocalEnvironment(str(tmp_path))
        yield environment
        environment.cleanup()

    def test_background_kill_stops_process_and_children(self, env):
        process_id = env.start_background("sleep 61.25 & wait")
        wait_for(lambda: host_pids("61.25"))
        env.kill(process_id)
        wait_for(lambda: not host_pids("61.25"), timeout=self.timeout_slack)

    def test_cleanup_stops_everything(self, disposable_env):
        disposable_env.start_background("sleep 62.25 & wait")
        disposable_env.start_background("exec sleep 62.25")
        wait_for(lambda: len(host_pids("62.25")) >= 2)
        disposable_env.cleanup()
        wait_for(lambda: not host_pids("62.25"), timeout=self.timeout_slack)


def host_pids(marker: str) -> list[int]:
    """This machine's pids of the live processes whose command line holds ``marker``."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as handle:
                line = handle.read().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        if marker in line and "bwrap" not in line and process_alive(int(entry)):
            found.append(int(entry))
    return found


# --- what only the local backend shows ----------------------------------------------------------


@pytest.fixture
def env(tmp_path):
    environment = LocalEnvironment(str(tmp_path), sandbox=OFF)
    yield environment
    environment.cleanup()


def test_loads_through_its_entry_point_and_reads_config(tmp_path):
    record = load_plugin("local")
    assert record.hooks == ["hermes_register_config", "hermes_register_environments"]
    agent = make_agent(plugins=["local"], config={"terminal": {"cwd": str(tmp_path), "timeout": 7}})
    try:
        environment = agent.environments.get("task-1")
        assert isinstance(environment, LocalEnvironment)
        assert environment.cwd == str(tmp_path) and environment.timeout == 7
        assert agent.environments.get("task-1") is environment
        assert agent.environments.get("task-2") is not environment
    finally:
        agent.close()


def test_config_defaults_and_missing_folder(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert create({}, "t").cwd == str(tmp_path)
    assert create({"terminal": {"cwd": "."}}, "t").cwd == str(tmp_path)
    with pytest.raises(EnvironmentUnavailable, match="does not exist; set terminal.cwd"):
        create({"terminal": {"cwd": str(tmp_path / "nope")}}, "t")


def test_check_config(tmp_path):
    assert check_config({}) == [] and check_config({"terminal": {"cwd": str(tmp_path)}}) == []
    [missing] = check_config({"terminal": {"cwd": str(tmp_path / "nope")}})
    assert "does not exist; set terminal.cwd" in missing
    (tmp_path / "file").write_text("")
    [not_a_folder] = check_config({"terminal": {"cwd": str(tmp_path / "file")}})
    assert "is not a folder" in not_a_folder
    [timeout] = check_config({"terminal": {"timeout": "soon"}})
    assert timeout == "terminal.timeout must be a number of seconds, got 'soon'"


def test_the_registered_factory_checks_first(tmp_path):
    assert BACKEND.check_config is not None
    with pytest.raises(EnvironmentUnavailable, match="terminal.timeout must be a number"):
        BACKEND({"terminal": {"cwd": str(tmp_path), "timeout": "soon"}}, "t")
    assert BACKEND({"terminal": {"cwd": str(tmp_path)}}, "t").cwd == str(tmp_path)


def test_timeout_kills_the_whole_process_group(env, tmp_path):
    result = env.run(
        f"sleep 60 & echo $! > {tmp_path}/a; (sleep 60 & echo $! > {tmp_path}/b; wait) & wait",
        timeout=0.5,
    )
    assert result.timed_out and result.exit_code == -1
    pids = [int((tmp_path / n).read_text()) for n in ("a", "b")]
    wait_for(lambda: not any(process_alive(p) for p in pids), timeout=3)


def test_leftover_processes_are_stopped_and_reported(env, tmp_path):
    result = env.run(f"nohup sleep 60 > /dev/null 2>&1 & echo $! > {tmp_path}/pid; echo done")
    assert result.exit_code == 0 and result.output.startswith("done\n")
    assert "stopped processes this command left running" in result.output
    assert "background=true" in result.output
    wait_for(lambda: not process_alive(int((tmp_path / "pid").read_text())), timeout=3)
    quiet = env.run("echo fine")
    assert quiet.output == "fine\n"


def test_chatty_leftover_processes_do_not_hold_the_command(env):
    started = time.monotonic()
    result = env.run("(while true; do echo tick; sleep 0.02; done) & echo started", timeout=30)
    assert time.monotonic() - started < 3
    assert "started\n" in result.output and not result.timed_out
    assert "stopped processes this command left running" in result.output


def test_vanished_working_directory_falls_back_to_a_parent(env, tmp_path):
    env.run(f"mkdir -p {tmp_path}/a/b && cd {tmp_path}/a/b")
    env.run(f"rm -rf {tmp_path}/a")
    result = env.run("pwd")
    assert result.output.splitlines() == [
        f"[hermes: the working directory {tmp_path}/a/b no longer exists; ran in {tmp_path}]",
        str(tmp_path),
    ]
    assert env.cwd == str(tmp_path)


def test_nothing_of_the_machinery_is_visible(env):
    out = env.run('echo "[$BASH_ENV][$__HERMES_STATE]"; bash -c "exit 3"; echo $?').output
    assert out.split() == ["[][]", "3"]
    env.run("export HERMES_LOCAL_X=1")
    assert "__HERMES_STATE" not in env.exported and "BASH_ENV" not in env.exported
    assert env.exported["HERMES_LOCAL_X"] == "1"


def test_exports_survive_any_locale_and_odd_values(env):
    env.run("export LANG=C LC_ALL=C; export ODD=$'h\\xc3\\xa9llo\\x01\\ttab'")
    assert env.exported["ODD"] == "héllo\x01\ttab"
    assert env.run('printf %s "$ODD"').output == "héllo\x01\ttab"
    env.run("export -n ODD; declare -rx READONLY_X=1")
    assert "ODD" not in env.exported and env.exported["READONLY_X"] == "1"


def test_parse_exports():
    data = (
        b'declare -x A="x\\"y\\\\z\\$w\\`q"\n'
        b"declare -x B=$'l1\\nl2\\303\\251\\x41'\n"
        b'declare -x EMPTY=""\n'
        b"declare -x UNSET\n"
        b'declare -rx SHLVL="3"\n'
        b'declare -x MULTI="line1\nline2"\n'
        b'export POSIX="mode"\n'
    )
    assert _parse_exports(data) == {
        "A": 'x"y\\z$w`q',
        "B": "l1\nl2éA",
        "EMPTY": "",
        "MULTI": "line1\nline2",
        "POSIX": "mode",
    }


def test_write_file_is_atomic_and_keeps_mode_and_symlinks(env, tmp_path):
    target = tmp_path / "real.txt"
    target.write_text("old")
    target.chmod(0o640)
    (tmp_path / "link.txt").symlink_to(target)
    env.write_file("link.txt", b"new")
    assert (tmp_path / "link.txt").is_symlink()
    assert target.read_bytes() == b"new" and target.stat().st_mode & 0o777 == 0o640
    env.write_file("fresh.txt", b"x")
    assert (tmp_path / "fresh.txt").stat().st_mode & 0o777 == 0o666 & ~_umask()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fresh.txt", "link.txt", "real.txt"]


def test_list_files_recursive_glob(env, tmp_path):
    for name in ("a.py", "pkg/b.py", "pkg/sub/c.py", ".hidden.py"):
        env.write_file(name, b"")
    assert env.list_files("**/*.py") == ["a.py", "pkg/b.py", "pkg/sub/c.py"]
    assert env.list_files("*.py", cwd="pkg") == ["b.py"]


def test_concurrent_commands_in_one_environment(env):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(lambda i: env.run(f"sleep 0.2; echo {i}"), range(8)))
    assert [r.output.strip() for r in results] == [str(i) for i in range(8)]


def test_cleanup_stops_running_foreground_commands(env):
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(1) as pool:
        started = time.monotonic()
        future = pool.submit(env.run, "sleep 30")
        time.sleep(0.3)
        env.cleanup()
        result = future.result(timeout=10)
    assert time.monotonic() - started < 5
    assert result.exit_code != 0


def test_background_with_missing_directory(env, tmp_path):
    with pytest.raises(FileNotFoundError):
        env.start_background("true", cwd=str(tmp_path / "missing"))


def test_overhead_over_a_bare_subprocess_is_small(env):
    """A loose guard (the benchmark measures the real figure): under 15 ms median overhead."""
    import statistics
    import subprocess

    def bare():
        subprocess.run(["bash", "-c", "true"], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

    def timed(fn):
        out = []
        for _ in range(30):
            started = time.perf_counter()
            fn()
            out.append(time.perf_counter() - started)
        return statistics.median(out)

    assert timed(lambda: env.run("true")) - timed(bare) < 0.015
