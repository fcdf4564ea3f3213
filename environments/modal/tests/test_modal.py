"""The modal environment: the shared behaviour suite against a fake of the ``modal`` SDK (see
conftest.py), what the environment asks Modal for, failing closed, and one test against the real
service that runs only when Modal credentials are set."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from hermes_env_modal import ModalEnvironment, ModalSettings, hermes_register_environments

from hermes_core.testing.environment_suite import EnvironmentBehaviour
from hermes_hookspecs import EnvironmentUnavailable


def make_config(workdir, **terminal):
    settings = {"modal_workdir": str(workdir)}
    settings.update(terminal)
    return {"terminal": settings}


class TestModalBehaviour(EnvironmentBehaviour):
    """Each exec of the fake is a session leader, as in docker and over ssh."""

    timeout_slack = 3.0
    new_session = True

    @pytest.fixture(autouse=True)
    def _sessions(self, fake_modal, monkeypatch):
        monkeypatch.setattr(fake_modal.Sandbox, "new_session", self.new_session)

    @pytest.fixture
    def env(self, fake_modal, tmp_path, _sessions):
        environment = ModalEnvironment(make_config(tmp_path / "work"), "suite")
        yield environment
        environment.cleanup()

    @pytest.fixture
    def observer(self, fake_modal, tmp_path, _sessions):
        environment = ModalEnvironment(make_config(tmp_path / "observer"), "observer")
        yield environment
        environment.cleanup()


class TestModalBehaviourWithoutSessions(TestModalBehaviour):
    """Each exec shares the caller's process group: timeouts and kills must find the process
    tree through /proc instead of a process group."""

    new_session = False


# --- what the environment asks Modal for ------------------------------------------------------


def test_sandbox_settings(fake_modal, tmp_path):
    config = make_config(
        tmp_path,
        modal_image="python:3.12-slim",
        modal_app="my-app",
        container_cpu=2,
        container_memory="2g",
        lifetime_seconds=600,
        modal_block_network=True,
    )
    env = ModalEnvironment(config, "settings")
    try:
        (created,) = fake_modal.Sandbox.created
        assert created["image"].tag == "python:3.12-slim"
        assert created["app"].name == "my-app"
        assert created["cpu"] == 2.0 and created["memory"] == 2048
        assert created["timeout"] == 600 and created["block_network"] is True
        assert created["workdir"] == str(tmp_path)
        assert "name" not in created
        assert fake_modal.App.looked_up == [("my-app", {"create_if_missing": True})]
        assert env.run("pwd").output.strip() == str(tmp_path)
    finally:
        env.cleanup()


def test_defaults():
    settings = ModalSettings.from_config({})
    assert settings.image == "python:3.11-slim"
    assert settings.app == "hermes-agent"
    assert settings.lifetime == 3600
    assert settings.block_network is False and settings.persistent is False


def test_cleanup_terminates_the_sandbox(fake_modal, tmp_path):
    env = ModalEnvironment(make_config(tmp_path), "terminate")
    sandbox = env.sandbox
    env.start_background("sleep 300")
    env.cleanup()
    assert sandbox.terminated is True
    assert all(p.poll() is not None for p in sandbox.execs)
    with pytest.raises(EnvironmentUnavailable):
        env.run("true")


def test_persistent_sandbox_is_named_kept_and_found_again(fake_modal, tmp_path):
    config = make_config(tmp_path, container_persistent=True)
    first = ModalEnvironment(config, "keep me")
    first.write_file("kept.txt", b"kept")
    sandbox = first.sandbox
    first.cleanup()
    assert sandbox.terminated is False
    assert fake_modal.Sandbox.created[0]["name"] == "hermes-keep-me"
    second = ModalEnvironment(config, "keep me")
    try:
        assert second.sandbox is sandbox
        assert len(fake_modal.Sandbox.created) == 1
        assert second.read_file("kept.txt") == b"kept"
    finally:
        second.cleanup()
        sandbox.terminate()


def test_commands_go_through_sandbox_exec(fake_modal, tmp_path):
    env = ModalEnvironment(make_config(tmp_path), "exec")
    try:
        before = len(env.sandbox.exec_calls)
        env.run("echo through exec", stdin="ignored")
        (call,) = env.sandbox.exec_calls[before:]
        assert call["argv"][1] == "-c" and "echo through exec" in call["argv"][2]
    finally:
        env.cleanup()


# --- fail closed --------------------------------------------------------------------------------


def test_no_credentials(fake_modal, monkeypatch, tmp_path):
    monkeypatch.delenv("MODAL_TOKEN_ID")
    monkeypatch.delenv("MODAL_TOKEN_SECRET")
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(tmp_path / "absent.toml"))
    with pytest.raises(EnvironmentUnavailable, match="modal token new"):
        ModalEnvironment(make_config(tmp_path), "no-credentials")
    assert fake_modal.Sandbox.created == []


def test_rejected_credentials(fake_modal, monkeypatch, tmp_path):
    def refuse(name, **kwargs):
        raise fake_modal.exception.AuthError("Token ID is malformed")

    monkeypatch.setattr(fake_modal.App, "lookup", refuse)
    with pytest.raises(EnvironmentUnavailable, match="check the Modal token"):
        ModalEnvironment(make_config(tmp_path), "bad-token")


def test_sandbox_creation_failure(fake_modal, monkeypatch, tmp_path):
    def fail(*args, **kwargs):
        raise RuntimeError("image build failed: no such tag")

    monkeypatch.setattr(fake_modal.Sandbox, "create", fail)
    with pytest.raises(EnvironmentUnavailable, match="cannot create a sandbox.*no such tag"):
        ModalEnvironment(make_config(tmp_path), "no-sandbox")


def test_bad_setting(tmp_path):
    with pytest.raises(EnvironmentUnavailable, match="bad setting"):
        ModalSettings.from_config(make_config(tmp_path, container_memory="plenty"))


# --- doctor, registration, start-up cost ------------------------------------------------------


def test_check(fake_modal, monkeypatch, tmp_path):
    assert "credentials configured" in ModalEnvironment.check({})
    monkeypatch.delenv("MODAL_TOKEN_ID")
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(tmp_path / "absent.toml"))
    with pytest.raises(EnvironmentUnavailable, match="no Modal credentials"):
        ModalEnvironment.check({})


def test_check_config(fake_modal, monkeypatch, tmp_path):
    assert ModalEnvironment.check_config({}) == []
    assert ModalEnvironment.check_config(make_config(tmp_path, lifetime_seconds="long")) == [
        "modal backend: bad setting: invalid literal for int() with base 10: 'long'"
    ]
    monkeypatch.delenv("MODAL_TOKEN_ID")
    monkeypatch.setenv("MODAL_CONFIG_PATH", str(tmp_path / "absent.toml"))
    monkeypatch.setitem(sys.modules, "modal", None)  # not installed
    problems = ModalEnvironment.check_config({})
    assert len(problems) == 2
    assert "the modal SDK is not installed" in problems[0]
    assert "no Modal credentials" in problems[1]


def test_registers_the_modal_backend():
    registered = {}
    hermes_register_environments(lambda name, factory: registered.setdefault(name, factory))
    assert registered == {"modal": ModalEnvironment}


def test_importing_the_plugin_does_not_import_the_sdk():
    code = "import sys, hermes_env_modal; print('modal' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


# --- the real service -------------------------------------------------------------------------


@pytest.mark.skipif(
    not os.environ.get("MODAL_TOKEN_ID"),
    reason="MODAL_TOKEN_ID is not set: the real Modal service is not tried",
)
def test_real_modal_sandbox():
    env = ModalEnvironment({"terminal": {"lifetime_seconds": 600}}, "hermes-real-test")
    try:
        assert env.run("echo hello from modal").output.strip() == "hello from modal"
        env.run("cd /tmp && export REAL=1")
        assert env.run('pwd; echo "$REAL"').output.split() == ["/tmp", "1"]
        env.write_file("/tmp/round-trip.bin", bytes(range(256)))
        assert env.read_file("/tmp/round-trip.bin") == bytes(range(256))
        result = env.run("sleep 30", timeout=2)
        assert result.timed_out is True
    finally:
        env.cleanup()
