"""No secret of hermes' environment reaches a container (real Docker engine): not the provider
keys, not what ``.env`` set; ``terminal.env_passthrough`` names the ones that may go in."""

from __future__ import annotations

import pytest

from hermes_runtime import secrets

OPENAI_KEY = "sk-docker-openai-5e1b"
TOKEN = "docker-dotenv-token-93f0"


def make_config(service, **terminal):
    return {
        "terminal": {"docker_host": service["host"], "docker_image": service["image"], **terminal}
    }


@pytest.fixture(autouse=True)
def host_secrets(monkeypatch):
    secrets.forget_secrets()
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ACME_DOTENV_TOKEN", TOKEN)
    monkeypatch.setenv("ACME_PLAIN_SETTING", "plain-setting")
    secrets.mark_secret("ACME_DOTENV_TOKEN", TOKEN)  # as loading .env does
    yield
    secrets.forget_secrets()


def test_no_secret_reaches_the_container(make_env, docker_service):
    import docker

    env = make_env()
    out = env.run('env; echo "key=${OPENAI_API_KEY-unset}"').output
    assert "key=unset" in out and "PATH=" in out
    for text in ("OPENAI_API_KEY", OPENAI_KEY, "ACME_DOTENV_TOKEN", TOKEN, "ACME_PLAIN_SETTING"):
        assert text not in out
    # nor a one-off variable a tool passes, nor the container's own configuration
    out = env.run("env", env={"OPENAI_API_KEY": OPENAI_KEY, "ONE_OFF": "1"}).output
    assert OPENAI_KEY not in out and "ONE_OFF=1" in out
    client = docker.DockerClient(base_url=docker_service["host"])
    try:
        inspected = str(client.api.inspect_container(env.container.id))
    finally:
        client.close()
    assert OPENAI_KEY not in inspected and TOKEN not in inspected


def test_env_passthrough_forwards_the_named_variables(make_env):
    env = make_env(env_passthrough=["ACME_DOTENV_TOKEN", "ACME_PLAIN_SETTING"])
    out = env.run("env").output
    assert f"ACME_DOTENV_TOKEN={TOKEN}" in out
    assert "ACME_PLAIN_SETTING=plain-setting" in out
    assert "OPENAI_API_KEY" not in out
    # it stays for the next commands, and a command may still change it
    assert env.run('echo "$ACME_DOTENV_TOKEN"').output == f"{TOKEN}\n"
    env.run("unset ACME_DOTENV_TOKEN")
    assert env.run('echo "${ACME_DOTENV_TOKEN-unset}"').output == "unset\n"
    # it never appears on a command line inside the container
    assert TOKEN not in env.run("cat /proc/[0-9]*/cmdline 2>/dev/null | tr '\\0' ' '").output
