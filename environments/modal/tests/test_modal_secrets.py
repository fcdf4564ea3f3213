"""What the modal environment hands the Modal SDK: no secret of hermes' environment, in no
argument of ``Sandbox.create`` or ``sandbox.exec``; the variables ``terminal.env_passthrough``
names travel only on an exec's input, into the sandbox's saved state (see conftest.py's fake)."""

from __future__ import annotations

import pytest
from hermes_env_modal import ModalEnvironment

from hermes_runtime import secrets

OPENAI_KEY = "sk-modal-openai-3f2a"
TOKEN = "modal-dotenv-token-66de"


@pytest.fixture(autouse=True)
def host_secrets(monkeypatch):
    secrets.forget_secrets()
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.setenv("ACME_DOTENV_TOKEN", TOKEN)
    secrets.mark_secret("ACME_DOTENV_TOKEN", TOKEN)
    yield
    secrets.forget_secrets()


def make(tmp_path, **terminal):
    return ModalEnvironment({"terminal": {"modal_workdir": str(tmp_path), **terminal}}, "t")


def sent(env) -> tuple[str, str]:
    """(the create and exec arguments, the exec inputs) the environment gave the SDK."""
    sandbox = env.sandbox
    arguments = repr(sandbox.kwargs) + repr(sandbox.exec_calls)
    inputs = b"".join(bytes(p.stdin.written) for p in sandbox.execs).decode("utf-8", "replace")
    return arguments, inputs


def test_no_secret_is_handed_to_modal(fake_modal, tmp_path):
    env = make(tmp_path)
    try:
        env.run("true", env={"OPENAI_API_KEY": OPENAI_KEY, "ONE_OFF": "1"})
        env.run("cat", stdin="input")
        arguments, inputs = sent(env)
    finally:
        env.cleanup()
    for text in (OPENAI_KEY, TOKEN, "ACME_DOTENV_TOKEN", "OPENAI_API_KEY"):
        assert text not in arguments and text not in inputs
    assert "ONE_OFF" in arguments  # a one-off variable that is no secret still goes


def test_passthrough_values_go_on_the_input_only(fake_modal, tmp_path):
    env = make(tmp_path, env_passthrough=["ACME_DOTENV_TOKEN"])
    try:
        arguments, inputs = sent(env)
        state = f"{env.state_dir}/env"
        with open(state) as handle:  # the fake's sandbox is this machine
            saved = handle.read()
    finally:
        env.cleanup()
    assert TOKEN not in arguments
    assert f"export ACME_DOTENV_TOKEN={TOKEN}" in inputs
    assert f"ACME_DOTENV_TOKEN={TOKEN}" in saved
    assert OPENAI_KEY not in inputs + arguments
