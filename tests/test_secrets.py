"""Secrets through the real path: a scripted model asks the terminal tool to print the
environment of a local command; provider keys and whatever ``$HERMES_HOME/.env`` set never reach
it, unless ``terminal.env_passthrough`` names them. Also which names and values the core marks
as secrets when it loads ``.env``, the configuration and the provider."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from hermes_core.config.loading import load_config, load_dotenv, mark_config_secrets
from hermes_core.models.providers import fallback_configs, resolve_provider
from hermes_core.plugins.registry import Registry
from hermes_core.testing import make_agent, plugin_manager, text, tool_call
from hermes_runtime import secrets

OPENAI_KEY = "sk-openai-test-4d9f2b7c1e"
DOTENV_TOKEN = "dotenv-token-8a6c3e1f0b"


@pytest.fixture(autouse=True)
def clean_secrets() -> Iterator[None]:
    """No secret marked before; the process environment as it was after (``.env`` loading
    writes ``os.environ`` directly)."""
    saved = dict(os.environ)
    secrets.forget_secrets()
    yield
    secrets.forget_secrets()
    os.environ.clear()
    os.environ.update(saved)


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A hermes home whose .env sets ACME_SERVICE_TOKEN, with OPENAI_API_KEY in the shell."""
    home = tmp_path / "home"
    home.mkdir()
    (home / ".env").write_text(f"ACME_SERVICE_TOKEN={DOTENV_TOKEN}\n")
    work = tmp_path / "work"
    work.mkdir()
    (home / "config.yaml").write_text(yaml.safe_dump({"terminal": {"cwd": str(work)}}))
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    monkeypatch.delenv("ACME_SERVICE_TOKEN", raising=False)
    return home


def configure(home: Path, **terminal: object) -> None:
    data = yaml.safe_load((home / "config.yaml").read_text())
    data["terminal"].update(terminal)
    (home / "config.yaml").write_text(yaml.safe_dump(data))


def tool_results(home: Path, *commands: str) -> list[str]:
    """One agent turn through the real loop: the model runs ``commands`` with the terminal tool
    in the local environment; the tool results it was given."""
    script = [tool_call("terminal", {"command": c}) for c in commands]
    # yolo: environment dumps are asked about (the policy); here they show what a command gets
    agent = make_agent(*script, text("done"), plugins=["terminal", "local"], home=home, yolo=True)
    try:
        agent.chat("look at the environment")
        return [m["content"] for m in agent.messages if m["role"] == "tool"]
    finally:
        agent.close()


def sha(value: str) -> str:
    return hashlib.sha256(value.encode()).hexdigest()


def test_a_command_sees_neither_the_provider_key_nor_the_dotenv_variables(home: Path) -> None:
    env, printed, own = tool_results(
        home,
        "env",
        "printenv OPENAI_API_KEY; printenv ACME_SERVICE_TOKEN; echo status=$?",
        "cat /proc/self/environ | tr '\\0' '\\n' | cut -d= -f1",
    )
    assert "PATH=" in env and "[exit code: 0" in env  # the command ran, with an environment
    for output in (env, printed, own):
        assert "OPENAI_API_KEY" not in output
        assert "ACME_SERVICE_TOKEN" not in output
        assert OPENAI_KEY not in output and DOTENV_TOKEN not in output
    assert "status=1" in printed
    assert os.environ["ACME_SERVICE_TOKEN"] == DOTENV_TOKEN  # hermes itself still has it


def test_env_passthrough_lets_the_named_variables_through(home: Path) -> None:
    configure(home, env_passthrough=["OPENAI_API_KEY", "ACME_SERVICE_TOKEN"])
    names, digests = tool_results(
        home,
        "env | cut -d= -f1 | sort",
        'printf %s "$OPENAI_API_KEY" | sha256sum; printf %s "$ACME_SERVICE_TOKEN" | sha256sum',
    )
    assert "OPENAI_API_KEY" in names.split() and "ACME_SERVICE_TOKEN" in names.split()
    # the values arrive whole (compared by digest: the values themselves may be redacted)
    assert sha(OPENAI_KEY) in digests and sha(DOTENV_TOKEN) in digests


def test_env_passthrough_names_only_what_it_names(home: Path) -> None:
    configure(home, env_passthrough=["ACME_SERVICE_TOKEN"])
    [names] = tool_results(home, "env | cut -d= -f1")
    assert "ACME_SERVICE_TOKEN" in names.split()
    assert "OPENAI_API_KEY" not in names


def test_a_background_command_gets_no_secret_either(home: Path) -> None:
    script = [
        tool_call("terminal", {"command": "env", "background": True}),
        tool_call("process", {"action": "wait", "process_id": "bg-1", "timeout": 10}),
    ]
    agent = make_agent(*script, text("done"), plugins=["terminal", "local"], home=home, yolo=True)
    try:
        agent.chat("go")
        results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    finally:
        agent.close()
    assert "PATH=" in results[1]
    for name in ("OPENAI_API_KEY", "ACME_SERVICE_TOKEN", OPENAI_KEY, DOTENV_TOKEN):
        assert name not in results[1]


# --- what is marked ---------------------------------------------------------------------------


def test_every_dotenv_name_and_value_is_a_secret(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("HERMES_MODEL=some-model-name\nACME_TOKEN=acme-token-1234\n")
    environ = {"ACME_TOKEN": "shell-wins-5678"}
    load_dotenv(path, environ)
    assert {"HERMES_MODEL", "ACME_TOKEN"} <= secrets.secret_names()
    # the file's value and the one the shell kept are both redactable
    assert {"acme-token-1234", "shell-wins-5678"} <= secrets.secret_values()
    # hermes' own settings are kept out of commands, but their values are ordinary words
    assert "some-model-name" not in secrets.secret_values()
    assert environ["ACME_TOKEN"] == "shell-wins-5678"


def test_keys_in_the_configuration_are_secrets(tmp_path: Path) -> None:
    data = {
        "model": {"provider": "openai", "api_key": "sk-from-config-1111"},
        "fallback_providers": [{"provider": "openrouter", "key_env": "ROUTER_KEY_VAR"}],
        "auxiliary": {"vision": {"provider": "x", "api_key": "aux-key-22222222"}},
        "terminal": {"ssh_key_passphrase": "ssh-passphrase-333", "ssh_key": "/home/me/.ssh/id"},
        "plugins": {"acme": {"auth_token": "acme-auth-44444444", "max_tokens": 123456789}},
    }
    load_config(tmp_path, environ={}, file_data=data)
    values = secrets.secret_values()
    for value in ("sk-from-config-1111", "aux-key-22222222", "ssh-passphrase-333"):
        assert value in values
    assert "acme-auth-44444444" in values
    assert "/home/me/.ssh/id" not in values
    assert "ROUTER_KEY_VAR" in secrets.secret_names()


def test_a_secret_key_can_refer_to_a_variable(tmp_path: Path) -> None:
    data = {"auxiliary": {"vision": {"api_key": "${VISION_KEY}"}, "other": {"api_key": "${NOPE}"}}}
    config = load_config(tmp_path, environ={"VISION_KEY": "vision-key-5555"}, file_data=data)
    assert config.get("auxiliary.vision.api_key") == "vision-key-5555"
    assert config.get("auxiliary.other.api_key") is None  # unset variable: the key is left out
    assert "VISION_KEY" in secrets.secret_names()
    assert "vision-key-5555" in secrets.secret_values()
    # only secret keys are expanded
    plain = load_config(tmp_path, environ={"X": "y"}, file_data={"agent": {"platform": "${X}"}})
    assert plain.get("agent.platform") == "${X}"


def test_mark_config_secrets_walks_lists_and_references() -> None:
    mark_config_secrets({"a": [{"token": "${LIST_TOKEN}"}, {"secret": "list-secret-666"}]})
    assert "LIST_TOKEN" in secrets.secret_names()
    assert "list-secret-666" in secrets.secret_values()


def test_the_provider_key_and_every_provider_key_variable_are_secrets(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from hermes_hookspecs import Provider, hookimpl

    class Acme:
        @hookimpl
        def hermes_register_providers(self, register):
            register(
                Provider(
                    name="acme",
                    api_mode="chat_completions",
                    create_client=lambda settings: None,
                    key_env="ACME_PROVIDER_KEY",
                    default_model="m",
                )
            )

    registry = Registry.of(plugin_manager([Acme()]))
    _ = registry.providers
    assert "ACME_PROVIDER_KEY" in secrets.secret_names()  # as soon as it is registered
    monkeypatch.setenv("ACME_PROVIDER_KEY", "acme-provider-key-777")
    _, settings = resolve_provider(registry, {"provider": "acme"})
    assert settings.api_key == "acme-provider-key-777"
    assert "acme-provider-key-777" in secrets.secret_values()
    resolve_provider(registry, {"provider": "acme", "api_key": "explicit-key-8888"})
    assert "explicit-key-8888" in secrets.secret_values()
    monkeypatch.setenv("FALLBACK_VAR", "fallback-key-9999")
    fallback_configs({"fallback_providers": [{"provider": "acme", "key_env": "FALLBACK_VAR"}]})
    assert "FALLBACK_VAR" in secrets.secret_names()
    assert "fallback-key-9999" in secrets.secret_values()


def test_an_embedded_agent_makes_its_new_home_private(tmp_path: Path) -> None:
    home = tmp_path / "fresh-home"
    with make_agent(text("hi"), home=home) as agent:
        assert agent.chat("hello") == "hi"
    assert oct(home.stat().st_mode & 0o777) == "0o700"
    assert oct((home / "sessions.db").stat().st_mode & 0o777) == "0o600"
