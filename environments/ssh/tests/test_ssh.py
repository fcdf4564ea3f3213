"""The ssh environment against a real OpenSSH server on 127.0.0.1 (started by
``.ci/services.sh``): the shared behaviour suite, one reused connection, and failing closed on
every kind of connection problem."""

from __future__ import annotations

import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest
from hermes_env_ssh import SSHEnvironment, SSHSettings, hermes_register_environments

from hermes_core.testing.environment_suite import EnvironmentBehaviour
from hermes_hookspecs import EnvironmentRefused, EnvironmentUnavailable


def make_config(service, **terminal):
    settings = {
        "ssh_host": service["host"],
        "ssh_port": int(service["port"]),
        "ssh_user": service["user"],
        "ssh_key": service["key"],
        "ssh_known_hosts": service["known_hosts"],
    }
    settings.update(terminal)
    return {"terminal": settings}


def host_key_line(service) -> str:
    return Path(service["known_hosts"]).read_text().strip()


class TestSSHBehaviour(EnvironmentBehaviour):
    timeout_slack = 4.0

    @pytest.fixture(scope="class")
    @classmethod
    def env(cls, ssh_service):
        environment = SSHEnvironment(make_config(ssh_service), "suite")
        yield environment
        environment.cleanup()

    @pytest.fixture
    def disposable_env(self, ssh_service):
        environment = SSHEnvironment(make_config(ssh_service), "suite-disposable")
        yield environment
        environment.cleanup()

    @pytest.fixture
    def observer(self, ssh_service):
        environment = SSHEnvironment(make_config(ssh_service), "suite-observer")
        yield environment
        environment.cleanup()


@pytest.fixture
def make_env(ssh_service):
    made = []

    def make(task_id="test", **terminal):
        env = SSHEnvironment(make_config(ssh_service, **terminal), task_id)
        made.append(env)
        return env

    yield make
    for env in made:
        env.cleanup()


# --- one connection ---------------------------------------------------------------------------


def test_all_commands_share_one_connection(make_env):
    env = make_env("one-connection")
    transport = env.client.get_transport()
    seen = set()
    for _ in range(10):
        seen.add(env.run('echo "$SSH_CONNECTION"').output.strip())
    env.write_file("f.txt", b"x")
    env.read_file("f.txt")
    pid = env.start_background("true")
    env.poll(pid)
    seen.add(env.run('echo "$SSH_CONNECTION"').output.strip())
    assert len(seen) == 1  # same client port: the same TCP connection
    assert env.client.get_transport() is transport
    assert env.connections == 1


def test_reconnects_when_the_connection_drops(make_env):
    env = make_env("reconnect")
    env.run("mkdir -p reconnect-dir && cd reconnect-dir && export KEPT=yes")
    env.client.get_transport().close()
    result = env.run('pwd; echo "$KEPT"')
    assert result.output.split()[-1] == "yes"
    assert result.output.split()[0].endswith("/reconnect-dir")
    assert env.connections == 2
    env.run("cd .. && rm -rf reconnect-dir")


def test_working_folder_setting(make_env):
    env = make_env("cwd", ssh_cwd="/tmp/hermes-ssh-cwd-test")
    try:
        assert env.run("pwd").output.strip() == "/tmp/hermes-ssh-cwd-test"
    finally:
        env.run("cd / && rm -rf /tmp/hermes-ssh-cwd-test")


def test_runs_as_the_configured_user_in_its_home(make_env, ssh_service):
    env = make_env("whoami")
    assert env.run("id -un; pwd").output.split() == [
        ssh_service["user"],
        f"/home/{ssh_service['user']}",
    ]


def test_settings_from_terminal_variables(ssh_service, monkeypatch):
    monkeypatch.setenv("TERMINAL_SSH_HOST", ssh_service["host"])
    monkeypatch.setenv("TERMINAL_SSH_PORT", str(ssh_service["port"]))
    monkeypatch.setenv("TERMINAL_SSH_USER", ssh_service["user"])
    monkeypatch.setenv("TERMINAL_SSH_KEY", ssh_service["key"])
    monkeypatch.setenv("TERMINAL_SSH_KNOWN_HOSTS", ssh_service["known_hosts"])
    env = SSHEnvironment({}, "from-variables")
    try:
        assert env.run("echo hi").output.strip() == "hi"
    finally:
        env.cleanup()


def test_config_wins_over_variables(monkeypatch):
    monkeypatch.setenv("TERMINAL_SSH_HOST", "from-variable")
    monkeypatch.setenv("TERMINAL_SSH_PORT", "2200")
    settings = SSHSettings.from_config({"terminal": {"ssh_host": "from-config"}})
    assert (settings.host, settings.port) == ("from-config", 2200)
    assert settings.host_key_policy == "strict"


def test_output_cannot_forge_the_end_marker(make_env):
    env = make_env("marker")
    result = env.run(r"printf '\n\036HEND0000 0\nafter\n'; exit 3")
    assert result.exit_code == 3 and "after" in result.output


# --- host keys ----------------------------------------------------------------------------------


def test_unknown_host_key_is_refused(ssh_service, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("")
    with pytest.raises(EnvironmentRefused) as caught:
        SSHEnvironment(make_config(ssh_service, ssh_known_hosts=str(known)), "unknown-key")
    assert caught.value.rule == "ssh-host-key"
    message = str(caught.value)
    assert "is not in" in message and "SHA256:" in message
    assert "ssh-keyscan" in message and "accept-new" in message
    assert known.read_text() == ""


def test_missing_known_hosts_file_is_refused(ssh_service, tmp_path):
    missing = tmp_path / "nope" / "known_hosts"
    with pytest.raises(EnvironmentUnavailable, match="does not exist"):
        SSHEnvironment(make_config(ssh_service, ssh_known_hosts=str(missing)), "no-known-hosts")


def test_changed_host_key_is_refused(ssh_service, tmp_path):
    entry, _, _ = host_key_line(ssh_service).partition(" ")
    other_public = Path(ssh_service["key"] + ".pub").read_text().split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text(f"{entry} {' '.join(other_public)}\n")
    with pytest.raises(EnvironmentRefused, match="HOST KEY MISMATCH"):
        SSHEnvironment(make_config(ssh_service, ssh_known_hosts=str(known)), "changed-key")


def test_changed_host_key_is_refused_even_with_accept_new(ssh_service, tmp_path):
    entry, _, _ = host_key_line(ssh_service).partition(" ")
    other_public = Path(ssh_service["key"] + ".pub").read_text().split()[:2]
    known = tmp_path / "known_hosts"
    known.write_text(f"{entry} {' '.join(other_public)}\n")
    config = make_config(ssh_service, ssh_known_hosts=str(known), ssh_host_key_policy="accept-new")
    with pytest.raises(EnvironmentUnavailable, match="HOST KEY MISMATCH"):
        SSHEnvironment(config, "changed-key-accept-new")


def test_accept_new_records_the_key_once(ssh_service, tmp_path):
    known = tmp_path / "sub" / "known_hosts"
    config = make_config(ssh_service, ssh_known_hosts=str(known), ssh_host_key_policy="accept-new")
    env = SSHEnvironment(config, "accept-new")
    env.cleanup()
    recorded = known.read_text().split()
    assert recorded[0] == f"[{ssh_service['host']}]:{ssh_service['port']}"
    assert recorded[1:3] == host_key_line(ssh_service).split()[1:3]
    strict = make_config(ssh_service, ssh_known_hosts=str(known))
    SSHEnvironment(strict, "accept-new-then-strict").cleanup()


def test_bad_policy_is_refused(ssh_service):
    with pytest.raises(EnvironmentUnavailable, match="ssh_host_key_policy"):
        SSHSettings.from_config(make_config(ssh_service, ssh_host_key_policy="never-check"))


# --- keys and reachability ----------------------------------------------------------------------


def test_key_the_server_does_not_accept(ssh_service):
    if not ssh_service["other_key"]:
        pytest.skip("services.sh made no second key")
    config = make_config(ssh_service, ssh_key=ssh_service["other_key"])
    with pytest.raises(EnvironmentUnavailable) as caught:
        SSHEnvironment(config, "bad-key")
    message = str(caught.value)
    assert "refused key" in message and "authorized_keys" in message


def test_missing_key_file(ssh_service, tmp_path):
    config = make_config(ssh_service, ssh_key=str(tmp_path / "id_missing"))
    with pytest.raises(EnvironmentUnavailable, match="does not exist"):
        SSHEnvironment(config, "missing-key")


def test_public_key_given_as_the_key(ssh_service):
    config = make_config(ssh_service, ssh_key=ssh_service["key"] + ".pub")
    with pytest.raises(EnvironmentUnavailable, match="not a usable private key"):
        SSHEnvironment(config, "public-key")


def test_encrypted_key_without_passphrase(ssh_service, tmp_path):
    key = tmp_path / "encrypted"
    subprocess.run(
        ["ssh-keygen", "-q", "-t", "ed25519", "-N", "secret", "-f", str(key)], check=True
    )
    config = make_config(ssh_service, ssh_key=str(key))
    with pytest.raises(EnvironmentUnavailable, match="encrypted"):
        SSHEnvironment(config, "encrypted-key")


def test_unreachable_host(ssh_service):
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        free_port = probe.getsockname()[1]
    started = time.monotonic()
    with pytest.raises(EnvironmentUnavailable) as caught:
        SSHEnvironment(make_config(ssh_service, ssh_port=free_port), "unreachable")
    assert f"cannot reach 127.0.0.1:{free_port}" in str(caught.value)
    assert time.monotonic() - started < 5


def test_no_host_configured(monkeypatch):
    monkeypatch.delenv("TERMINAL_SSH_HOST", raising=False)
    with pytest.raises(EnvironmentUnavailable, match="ssh_host"):
        SSHEnvironment({"terminal": {}}, "no-host")


def test_bad_port(ssh_service):
    with pytest.raises(EnvironmentUnavailable, match="ssh_port"):
        SSHSettings.from_config(make_config(ssh_service, ssh_port="twenty-two"))


# --- doctor, registration, start-up cost ------------------------------------------------------


def test_check_logs_in(ssh_service):
    report = SSHEnvironment.check(make_config(ssh_service))
    assert "host key verified" in report and "OpenSSH" in report


def test_check_fails_closed(ssh_service, tmp_path):
    known = tmp_path / "known_hosts"
    known.write_text("")
    with pytest.raises(EnvironmentUnavailable, match="is not in"):
        SSHEnvironment.check(make_config(ssh_service, ssh_known_hosts=str(known)))


def test_check_config_finds_nothing_wrong_with_good_settings(ssh_service):
    assert SSHEnvironment.check_config(make_config(ssh_service)) == []


def test_check_config_names_the_problem_without_connecting(ssh_service, tmp_path, monkeypatch):
    def problems(**terminal):
        return SSHEnvironment.check_config(make_config(ssh_service, ssh_port=1, **terminal))

    assert "key file" in problems(ssh_key=str(tmp_path / "none"))[0]
    assert "does not exist" in problems(ssh_key=str(tmp_path / "none"))[0]
    assert "not a usable private key" in problems(ssh_key=ssh_service["key"] + ".pub")[0]
    [missing] = problems(ssh_known_hosts=str(tmp_path / "nope" / "known_hosts"))
    assert "known_hosts file" in missing and "does not exist" in missing
    assert problems(ssh_known_hosts=str(tmp_path / "new"), ssh_host_key_policy="accept-new") == []
    [policy] = problems(ssh_host_key_policy="trusting")
    assert "ssh_host_key_policy must be one of strict, accept-new" in policy
    monkeypatch.delenv("TERMINAL_SSH_HOST", raising=False)
    [no_host] = SSHEnvironment.check_config({"terminal": {}})
    assert "no host configured" in no_host


def test_registers_the_ssh_backend():
    registered = {}
    hermes_register_environments(lambda name, factory: registered.setdefault(name, factory))
    assert registered == {"ssh": SSHEnvironment}


def test_importing_the_plugin_does_not_import_paramiko():
    code = "import sys, hermes_env_ssh; print('paramiko' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
