"""What a person meets in the first hour of using hermes, seen from the command line: a broken
line in ``.env``, a typo in ``hermes config set``, ``hermes model``, ``hermes setup`` checking its
endpoint. Every refusal is one readable line and a non-zero exit, never a traceback."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest
import yaml

from hermes_runtime import secrets

CANARY = "sk-first-hour-canary-0123456789"


@pytest.fixture(autouse=True)
def clean_environ(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each in-process run reads ``.env`` into os.environ: put it back after the test."""
    saved = dict(os.environ)
    secrets.forget_secrets()
    for name in ("OPENAI_API_KEY", "CUSTOM_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    yield
    secrets.forget_secrets()
    os.environ.clear()
    os.environ.update(saved)


# --- .env with a malformed line ------------------------------------------------------------


def test_a_malformed_env_line_is_named_once_and_the_other_keys_still_work(
    hermes_cli, hermes_home, fake_llm
):
    env_file = hermes_home / ".env"
    env_file.write_text(f"# keys\nexport OOPS\njust some words\nCUSTOM_API_KEY={CANARY}\n")
    fake_llm.add("hello from the model")
    result = hermes_cli(
        "chat", "-q", "hi", "--provider", "custom",
        "--base-url", fake_llm.openai_base_url, "--model", "any",
    )  # fmt: skip
    assert result.exit_code == 0, result.stderr
    assert "hello from the model" in result.stdout
    # the key after the broken lines was read and sent
    assert fake_llm.last_request.headers["authorization"] == f"Bearer {CANARY}"
    lines = result.stderr.splitlines()
    assert (
        f"hermes: warning: {env_file}:2: malformed line (expected KEY=VALUE); the line is ignored"
        in lines
    )
    assert any(line.startswith(f"hermes: warning: {env_file}:3: ") for line in lines)
    assert len([line for line in lines if ".env:" in line]) == 2
    assert "Traceback" not in result.stderr and CANARY not in result.stderr


# --- hermes config set: names of things that must be installed ----------------------------


@pytest.mark.parametrize(
    ("key", "value", "named"),
    [
        ("toolsets", "[weather-radar, terminal]", "unknown toolset 'weather-radar'"),
        ("toolsets", "[termnal]", "unknown toolset 'termnal' (did you mean 'terminal'? known: "),
        ("disabled_toolsets", "[memroy]", "did you mean 'memory'?"),
        ("terminal.backend", "dockr", "unknown backend 'dockr' (did you mean 'docker'? known: "),
    ],
)
def test_config_set_refuses_an_unknown_name(hermes_cli, hermes_home, key, value, named):
    config_file = hermes_home / "config.yaml"
    config_file.write_text("agent:\n  max_turns: 7\n")
    before = config_file.read_bytes()
    result = hermes_cli("config", "set", key, value)
    assert result.exit_code != 0
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert named in result.stderr and "nothing written" in result.stderr
    assert "Traceback" not in result.stderr
    assert config_file.read_bytes() == before


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("toolsets", "[terminal, file]"),
        ("toolsets", "[default]"),
        ("toolsets", "[hermes-cli]"),  # the Hermes agent's platform toolset: the default bundle
        ("terminal.backend", "local"),
        ("terminal.backend", "docker"),  # known, installable: `hermes doctor` says how
    ],
)
def test_config_set_accepts_known_names(hermes_cli, hermes_home, key, value):
    result = hermes_cli("config", "set", key, value)
    assert result.exit_code == 0, result.stderr


# --- hermes model and a provider without an endpoint --------------------------------------


def test_hermes_model_provider_slash_model_sets_both_in_one_step(hermes_cli, hermes_home):
    result = hermes_cli("model", "anthropic/claude-test-1")
    assert result.exit_code == 0, result.stderr
    assert yaml.safe_load((hermes_home / "config.yaml").read_text())["model"] == {
        "provider": "anthropic",
        "default": "claude-test-1",
    }
    assert hermes_cli("model").stdout.strip() == "anthropic / claude-test-1"


CHAT_CUSTOM = ("chat", "-q", "hi", "--provider", "custom", "--model", "any")


@pytest.mark.parametrize(
    ("argv", "env_text"),
    [
        (CHAT_CUSTOM, f"CUSTOM_API_KEY={CANARY}\n"),
        (CHAT_CUSTOM, ""),  # no key either: the URL is still what is said first
        (("model", "--provider", "custom", "any"), f"CUSTOM_API_KEY={CANARY}\n"),
        (("setup", "--provider", "custom", "--model", "any", "--api-key", CANARY), ""),
    ],
)
def test_the_custom_provider_without_a_base_url_says_the_url_is_missing(
    hermes_cli, hermes_home, argv, env_text
):
    (hermes_home / ".env").write_text(env_text)
    result = hermes_cli(*argv)
    assert result.exit_code != 0
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "error: provider 'custom' needs a base URL: pass --base-url" in result.stderr
    assert "no API key" not in result.stderr and CANARY not in result.stderr
    assert not (hermes_home / "config.yaml").exists()
    assert (hermes_home / ".env").read_text() == env_text  # nothing saved


def test_a_first_chat_with_nothing_set_up_names_the_set_up_command(hermes_cli, hermes_home):
    result = hermes_cli("--plugins", "openai,anthropic", "chat", "-q", "hi")
    assert result.exit_code == 1
    [line] = result.stderr.splitlines()
    assert line.startswith("hermes: error: no provider chosen (installed: anthropic, custom")
    assert "run `hermes setup`" in line and "--provider NAME" in line


# --- hermes setup checks the endpoint it was given ----------------------------------------


def _setup(hermes_cli, url: str, key: str = CANARY):
    return hermes_cli(
        "setup", "--provider", "custom", "--base-url", url, "--model", "fake-model",
        "--api-key", key,
    )  # fmt: skip


def test_setup_checks_the_endpoint_through_the_providers_client(hermes_cli, fake_llm):
    fake_llm.add("ok")
    result = _setup(hermes_cli, fake_llm.openai_base_url)
    assert result.exit_code == 0, result.stderr
    assert "checked: provider custom at " in result.stdout
    request = fake_llm.last_request
    assert request.path.endswith("/chat/completions")
    assert request.headers["authorization"] == f"Bearer {CANARY}"
    assert request.json["model"] == "fake-model"


def test_setup_with_a_wrong_key_says_so_at_once(hermes_cli, hermes_home, fake_llm):
    fake_llm.add({"error": {"status": 401, "message": "Incorrect API key provided"}})
    result = _setup(hermes_cli, fake_llm.openai_base_url, key="sk-wrong-key-0000")
    assert result.exit_code != 0
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert result.stderr.startswith("hermes: error: check failed: provider custom at ")
    assert "Traceback" not in result.stderr and "sk-wrong-key-0000" not in result.stderr
    assert (hermes_home / "config.yaml").exists()  # the settings stay saved


def test_setup_with_a_wrong_url_says_so_at_once(hermes_cli):
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        url = f"http://127.0.0.1:{probe.getsockname()[1]}/v1"
    result = _setup(hermes_cli, url)
    assert result.exit_code != 0
    assert len(result.stderr.splitlines()) == 1, result.stderr
    assert "check failed" in result.stderr and url in result.stderr
    assert "Traceback" not in result.stderr
