"""The shared helpers of the remote environments: config parsing, and the command channel
machinery on a scripted channel (the behaviour suite runs through it in the docker, ssh and modal
tests)."""

from __future__ import annotations

import subprocess
import threading

import pytest
from hermes_env_common import (
    Channel,
    ShellEnvironment,
    parse_bool,
    parse_memory_mb,
    safe_name,
    terminal_config,
)

from hermes_hookspecs import EnvironmentUnavailable


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, None),
        (0, None),
        (512, 512),
        (1.5, 1),
        ("512m", 512),
        ("2g", 2048),
        ("2GiB", 2048),
        ("1024k", 1),
        ("1t", 1024 * 1024),
        (" 300 ", 300),
    ],
)
def test_parse_memory_mb(value, expected):
    assert parse_memory_mb(value) == expected


@pytest.mark.parametrize("value", ["lots", "12q", True, "-5m"])
def test_parse_memory_mb_refuses(value):
    with pytest.raises(ValueError):
        parse_memory_mb(value)


def test_parse_bool():
    assert parse_bool(None, True) is True
    assert parse_bool("yes") is True and parse_bool("Off") is False
    assert parse_bool(1) is True
    with pytest.raises(ValueError):
        parse_bool("maybe")


def test_safe_name_and_terminal_config():
    assert safe_name("my task/with spaces:1") == "my-task-with-spaces-1"
    assert safe_name("///") == "task"
    assert len(safe_name("x" * 100)) == 40
    assert terminal_config({"terminal": {"a": 1}}) == {"a": 1}
    assert terminal_config({"terminal": None}) == {}
    assert terminal_config({}) == {}


class PipeChannel(Channel):
    def __init__(self, argv, stdin):
        self.proc = subprocess.Popen(
            argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE, start_new_session=True
        )
        threading.Thread(target=self._feed, args=(stdin,), daemon=True).start()

    def _feed(self, data):
        try:
            if data:
                self.proc.stdin.write(data)
        finally:
            self.proc.stdin.close()

    def chunks(self):
        while True:
            data = self.proc.stdout.read1(65536)
            if not data:
                return
            yield data

    def exit_status(self, wait):
        try:
            return self.proc.wait(wait)
        except subprocess.TimeoutExpired:
            return None

    def close(self):
        pass


class PipeEnvironment(ShellEnvironment):
    name = "pipe"

    def __init__(self, tmp_path, **kwargs):
        super().__init__(task_id="t", workdir=str(tmp_path), **kwargs)
        self.opened = []
        self.prepare_shell()

    def open_channel(self, argv, stdin):
        self.opened.append(argv)
        return PipeChannel(argv, stdin)


def test_start_finds_state_folder_shell_and_workdir(tmp_path):
    env = PipeEnvironment(tmp_path / "work")
    try:
        assert env.home_cwd == str(tmp_path / "work")
        assert env.state_dir.startswith("/") and "hermes-env." in env.state_dir
        assert env.shell.endswith(("bash", "/bin/sh"))
        assert env.run("pwd").output.strip() == str(tmp_path / "work")
    finally:
        env.cleanup()


def test_output_is_capped_keeping_head_and_tail(tmp_path):
    env = PipeEnvironment(tmp_path, max_output_bytes=64 * 1024)
    try:
        result = env.run("seq 1 400000")  # about 2.6 MB
        assert result.exit_code == 0
        assert result.output.startswith("1\n2\n3\n")
        assert result.output.rstrip().endswith("399999\n400000")
        assert "bytes of output dropped" in result.output
        assert len(result.output) < 1024 * 1024 + 64 * 1024
    finally:
        env.cleanup()


def test_environment_after_cleanup_says_so(tmp_path):
    env = PipeEnvironment(tmp_path)
    env.cleanup()
    with pytest.raises(EnvironmentUnavailable, match="cleaned up"):
        env.run("true")


def test_bad_variable_name_is_refused(tmp_path):
    env = PipeEnvironment(tmp_path)
    try:
        with pytest.raises(ValueError, match="variable name"):
            env.run("true", env={"NOT-VALID": "x"})
    finally:
        env.cleanup()


def test_missing_working_folder_that_cannot_be_made(tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(EnvironmentUnavailable, match="cannot enter the working folder"):
        PipeEnvironment(blocker / "sub")


def test_one_channel_per_command(tmp_path):
    env = PipeEnvironment(tmp_path)
    try:
        before = len(env.opened)
        env.run("echo a")
        env.run("echo b")
        assert len(env.opened) == before + 2
        assert all(argv[1] == "-c" for argv in env.opened)
    finally:
        env.cleanup()


def test_forwarded_environ_is_only_what_env_passthrough_names():
    from hermes_env_common import forwarded_environ

    environ = {"OPENAI_API_KEY": "k", "GITHUB_TOKEN": "t", "PATH": "/bin", "LANG": "C"}
    assert forwarded_environ({}, environ) == {}
    config = {"terminal": {"env_passthrough": ["GITHUB_TOKEN", "LANG", "UNSET", "bad name"]}}
    assert forwarded_environ(config, environ) == {"GITHUB_TOKEN": "t", "LANG": "C"}


def test_a_backend_without_open_channel_is_refused():
    class Incomplete(ShellEnvironment):
        pass

    with pytest.raises(TypeError, match="must implement open_channel"):
        Incomplete(task_id="t")


def test_run_script_reports_pid_and_marker(tmp_path):
    env = PipeEnvironment(tmp_path)
    try:
        outcome = env.run_script("echo out; echo err >&2; exit 3")
        assert outcome.output == b"out\nerr\n" and outcome.exit_code == 3
        assert outcome.finished and not outcome.timed_out and outcome.pid > 0
        slow = env.run_script("echo before; sleep 30", timeout=0.5)
        assert slow.timed_out and slow.exit_code == -1 and slow.output == b"before\n"
    finally:
        env.cleanup()
