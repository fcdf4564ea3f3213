"""A backend checks its configuration without starting (``factory.check_config(config)``): ``hermes
doctor`` reports each problem, then runs the live probe (``factory.check``) when there is none; an
environment whose factory fails unexpectedly is reported with the check's problems instead."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from hermes_core.cli.doctor_checks import backend_report
from hermes_core.testing import make_agent, text, tool_call
from hermes_core.tools.environments import config_problems
from hermes_hookspecs import EnvironmentUnavailable, hookimpl


class Checked:
    """A factory class with both checks, each answering what the test sets."""

    problems: list[str] = []
    report = "engine 1.0 answers"

    def __init__(self, config, task_id):
        raise RuntimeError("KeyError: 'sock'")

    @classmethod
    def check_config(cls, config):
        return list(cls.problems)

    @classmethod
    def check(cls, config):
        if isinstance(cls.report, Exception):
            raise cls.report
        return cls.report


def test_doctor_lists_every_problem_and_skips_the_probe():
    Checked.problems = ["fake backend: no engine socket", "fake backend: bad image name"]
    assert backend_report("fake", Checked, {}) == [
        (False, "execution backend fake: fake backend: no engine socket"),
        (False, "execution backend fake: fake backend: bad image name"),
    ]


def test_doctor_probes_when_the_configuration_is_fine():
    Checked.problems, Checked.report = [], "engine 1.0 answers"
    assert backend_report("fake", Checked, {}) == [
        (True, "execution backend fake: engine 1.0 answers")
    ]
    Checked.report = EnvironmentUnavailable("fake backend: the engine refused the login")
    assert backend_report("fake", Checked, {}) == [
        (False, "execution backend fake: fake backend: the engine refused the login")
    ]


def test_doctor_with_a_factory_that_has_no_checks():
    def plain(config, task_id):
        raise AssertionError("doctor must not start the backend")

    assert backend_report("plain", plain, {}) == [(True, "execution backend plain")]


def test_a_check_that_breaks_is_a_problem_not_a_crash():
    class Broken:
        @staticmethod
        def check_config(config):
            raise KeyError("terminal")

    [problem] = config_problems(Broken, {})
    assert problem == "the configuration check failed: KeyError: 'terminal'"


def test_an_unexpected_start_failure_is_explained_by_the_check():
    Checked.problems = ["fake backend: terminal.fake_socket is not set; set it to the engine"]

    class Plugin:
        @hookimpl
        def hermes_register_environments(self, register):
            register("fake", Checked)

    agent = make_agent(
        tool_call("terminal", {"command": "ls"}),
        text("done"),
        plugins=["terminal", Plugin()],
        config={"terminal": {"backend": "fake"}, "approvals": {"mode": "yolo"}},
    )
    try:
        agent.chat("go")
        [result] = [m["content"] for m in agent.messages if m["role"] == "tool"]
    finally:
        agent.close()
    assert "execution backend 'fake' could not start: fake backend: terminal.fake_socket" in result
    assert "KeyError" not in result


# --- the real backends through `hermes doctor` ------------------------------------------------


def doctor(home: Path, plugins: str, config: str) -> list[str]:
    (home / "config.yaml").write_text(config, encoding="utf-8")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("HERMES_", "DOCKER_"))}
    env["HERMES_HOME"] = str(home)
    hermes = Path(sys.executable).parent / "hermes"
    done = subprocess.run(
        [str(hermes), "--plugins", plugins, "doctor", "--no-network"],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert "Traceback" not in done.stderr, done.stderr
    lines = [line for line in done.stdout.splitlines() if "execution backend" in line]
    if any(line.startswith("ERR  execution backend") for line in lines):
        assert done.returncode == 1
    return lines


def test_doctor_checks_the_local_working_folder(tmp_path):
    missing = tmp_path / "missing"
    lines = doctor(tmp_path, "local", f"terminal:\n  backend: local\n  cwd: {missing}\n")
    assert lines == [
        f"ERR  execution backend local: the local working directory '{missing}' does not exist;"
        " set terminal.cwd to an existing folder"
    ]
    lines = doctor(tmp_path, "local", f"terminal:\n  backend: local\n  cwd: {tmp_path}\n")
    [line] = lines
    assert line.startswith("ok   execution backend local: commands run in the sandbox (workspace")


def test_doctor_names_each_unsafe_docker_setting_and_the_missing_engine(tmp_path):
    config = (
        "terminal:\n  backend: docker\n  docker_privileged: true\n  docker_network: host\n"
        f"  docker_host: unix://{tmp_path}/no-engine.sock\n"
    )
    lines = doctor(tmp_path, "docker", config)
    assert len(lines) == 3, lines
    assert "unsafe setting refused: terminal.docker_privileged is true" in lines[0]
    assert "unsafe setting refused: terminal.docker_network is host" in lines[1]
    assert "set terminal.docker_allow_unsafe: true to allow it" in lines[0]
    assert "cannot reach a Docker engine" in lines[2]
    assert all(line.startswith("ERR  execution backend docker: docker backend: ") for line in lines)
