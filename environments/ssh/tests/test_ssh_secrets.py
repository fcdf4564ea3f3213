"""No secret of hermes' environment reaches the remote host (real OpenSSH server): not the
provider keys, not what ``.env`` set; ``terminal.env_passthrough`` names the ones that may go."""

from __future__ import annotations

import pytest
from hermes_env_ssh import SSHEnvironment

from hermes_runtime import secrets

OPENAI_KEY = "sk-ssh-openai-0c4d"
TOKEN = "ssh-dotenv-token-71ab"


def make_config(service, **terminal):
    settings = {
        "ssh_host": service["host"],
        "ssh_port": int(service["port"]),
        "ssh_user": service["user"],
        "ssh_key": service["key"],
        "ssh_known_hosts": service["known_hosts"],
    }
    return {"terminal": {**settings, **terminal}}


@pytest.fixture(autouse=True)
def host_secrets(monkeypatch):
    secrets.forget_secrets()
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ACME_DOTENV_TOKEN", TOKEN)
    monkeypatch.setenv("LC_ACME", "sent-by-some-ssh-clients")  # sshd often accepts LC_*
    secrets.mark_secret("ACME_DOTENV_TOKEN", TOKEN)
    yield
    secrets.forget_secrets()


@pytest.fixture
def make_env(ssh_service):
    made = []

    def make(**terminal):
        env = SSHEnvironment(make_config(ssh_service, **terminal), "secrets")
        made.append(env)
        return env

    yield make
    for env in made:
        env.cleanup()


def test_no_secret_reaches_the_remote_host(make_env):
    env = make_env()
    out = env.run('env; echo "key=${OPENAI_API_KEY-unset}"').output
    assert "key=unset" in out and "PATH=" in out
    for text in ("OPENAI_API_KEY", OPENAI_KEY, "ACME_DOTENV_TOKEN", TOKEN, "LC_ACME"):
        assert text not in out
    out = env.run("env", env={"ACME_DOTENV_TOKEN": TOKEN, "ONE_OFF": "1"}).output
    assert TOKEN not in out and "ONE_OFF=1" in out


def test_env_passthrough_forwards_the_named_variables(make_env):
    env = make_env(env_passthrough=["ACME_DOTENV_TOKEN"])
    out = env.run("env").output
    assert f"ACME_DOTENV_TOKEN={TOKEN}" in out
    assert "OPENAI_API_KEY" not in out
    assert env.run('echo "$ACME_DOTENV_TOKEN"').output == f"{TOKEN}\n"
    # never on a command line on the remote host (other users could read it with ps)
    listing = env.run("ps -eo args 2>/dev/null || cat /proc/[0-9]*/cmdline").output
    assert TOKEN not in listing
