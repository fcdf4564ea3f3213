"""Secrets on the command line: ``hermes config set`` stores keys in ``.env`` and never prints
them, ``config show``/``get`` mask them, the home and its files are private, ``hermes doctor``
reports files others can read, and ``hermes sessions export`` redacts known secret values."""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
import yaml

from hermes_core.config.loading import load_dotenv
from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import ScriptedModel, text, tool_call
from hermes_hookspecs import SessionInfo
from hermes_runtime import secrets

KEY = "sk-cli-secret-key-0123456789abcdef"


@pytest.fixture(autouse=True)
def clean(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    saved = dict(os.environ)
    secrets.forget_secrets()
    for name in ("OPENAI_API_KEY", "CUSTOM_API_KEY", "AUXILIARY_VISION_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("HERMES_PLUGINS", "openai")  # the real providers, with their key variables
    yield
    secrets.forget_secrets()
    os.environ.clear()
    os.environ.update(saved)


Run = Callable[..., object]


def config_file(home: Path) -> dict:
    path = home / "config.yaml"
    return yaml.safe_load(path.read_text()) if path.exists() else {}


def test_config_set_model_api_key_goes_to_the_providers_variable(hermes_cli, hermes_home):
    assert hermes_cli("config", "set", "model.provider", "openai").exit_code == 0
    result = hermes_cli("config", "set", "model.api_key", KEY)
    assert result.exit_code == 0, result.stderr
    assert KEY not in result.stdout + result.stderr
    assert "OPENAI_API_KEY" in result.stdout
    assert load_dotenv(hermes_home / ".env", environ={}) == {"OPENAI_API_KEY": KEY}
    assert oct((hermes_home / ".env").stat().st_mode & 0o777) == "0o600"
    assert KEY not in (hermes_home / "config.yaml").read_text()
    assert "api_key" not in config_file(hermes_home)["model"]


def test_the_custom_provider_key_goes_to_custom_api_key(hermes_cli, hermes_home):
    hermes_cli("config", "set", "model.provider", "custom")
    result = hermes_cli("config", "set", "model.api_key", KEY)
    assert result.exit_code == 0, result.stderr
    assert load_dotenv(hermes_home / ".env", environ={}) == {"CUSTOM_API_KEY": KEY}


def test_a_key_already_in_config_yaml_is_moved_out(hermes_cli, hermes_home):
    (hermes_home / "config.yaml").write_text(
        yaml.safe_dump({"model": {"provider": "openai", "api_key": "sk-old-plaintext-key-999"}})
    )
    assert hermes_cli("config", "set", "model.api_key", KEY).exit_code == 0
    assert "sk-old-plaintext-key-999" not in (hermes_home / "config.yaml").read_text()
    assert config_file(hermes_home)["model"] == {"provider": "openai"}


def test_model_api_key_without_a_provider_is_refused(hermes_cli, hermes_home):
    result = hermes_cli("config", "set", "model.api_key", KEY)
    assert result.exit_code == 1
    assert "no provider is configured" in result.stderr and len(result.stderr.splitlines()) == 1
    assert KEY not in result.stderr
    assert not (hermes_home / ".env").exists() and not (hermes_home / "config.yaml").exists()


def test_a_key_asked_for_when_no_value_is_given(hermes_cli, hermes_home):
    hermes_cli("config", "set", "model.provider", "openai")
    result = hermes_cli("config", "set", "model.api_key", input=KEY + "\n")
    assert result.exit_code == 0, result.stderr
    assert KEY not in result.stdout  # the prompt hides what is typed
    assert load_dotenv(hermes_home / ".env", environ={})["OPENAI_API_KEY"] == KEY


def test_other_secret_keys_go_to_env_with_a_reference(hermes_cli, hermes_home):
    result = hermes_cli("config", "set", "auxiliary.vision.api_key", KEY)
    assert result.exit_code == 0, result.stderr
    assert KEY not in result.stdout
    assert load_dotenv(hermes_home / ".env", environ={}) == {"AUXILIARY_VISION_API_KEY": KEY}
    assert config_file(hermes_home)["auxiliary"]["vision"]["api_key"] == (
        "${AUXILIARY_VISION_API_KEY}"
    )
    # the effective configuration has the value, shown masked
    got = hermes_cli("config", "get", "auxiliary.vision.api_key")
    assert got.exit_code == 0 and KEY not in got.stdout
    assert got.stdout.strip() == f"{KEY[:3]}...{KEY[-4:]}"
    # a key that only looks like one is an ordinary value
    assert hermes_cli("config", "set", "model.max_tokens", "4096").stdout.strip() == (
        "model.max_tokens = 4096"
    )


def test_config_show_masks_every_secret(hermes_cli, hermes_home):
    (hermes_home / "config.yaml").write_text(
        yaml.safe_dump(
            {
                "model": {"provider": "openai", "api_key": KEY},
                "plugins": {"acme": {"auth_token": "acme-token-abcdefgh", "url": "https://x"}},
            }
        )
    )
    (hermes_home / ".env").write_text("ACME_DB_PASSWORD_VAR=dotenv-value-12345678\n")
    (hermes_home / "config.yaml").write_text(
        (hermes_home / "config.yaml").read_text() + "terminal:\n  note: dotenv-value-12345678\n"
    )
    for args in (
        ("config", "show"),
        ("config", "show", "--json"),
        ("config", "show", "--sources"),
        ("config", "get", "model"),
        ("config", "get", "model.api_key"),
    ):
        result = hermes_cli(*args)
        assert result.exit_code == 0, (args, result.stderr)
        shown = result.stdout
        assert KEY not in shown and "acme-token-abcdefgh" not in shown, args
        assert "dotenv-value-12345678" not in shown, args
    shown = json.loads(hermes_cli("config", "show", "--json").stdout)
    assert shown["model"]["api_key"] == f"{KEY[:3]}...{KEY[-4:]}"
    assert shown["plugins"]["acme"]["url"] == "https://x"
    assert shown["terminal"]["note"] == "[REDACTED]"


# --- file modes and doctor -----------------------------------------------------------------------


def test_a_home_hermes_creates_is_private(hermes_cli, tmp_path):
    old = os.umask(0o022)
    try:
        home = tmp_path / "fresh" / "home"
        result = hermes_cli("config", "set", "agent.max_turns", "5", env={"HERMES_HOME": str(home)})
        assert result.exit_code == 0, result.stderr
        assert home.stat().st_mode & 0o777 == 0o700
        assert (home / "config.yaml").stat().st_mode & 0o777 == 0o600
        other = tmp_path / "fresh2"
        store = hermes_cli("sessions", "list", env={"HERMES_HOME": str(other)})
        assert store.exit_code == 0, store.stderr
        assert other.stat().st_mode & 0o777 == 0o700
        for name in ("state.db", "state.db-wal", "state.db-shm"):
            if (other / name).exists():
                assert (other / name).stat().st_mode & 0o777 == 0o600, name
        third = tmp_path / "fresh3"
        hermes_cli(
            "-p", "work", "config", "set", "agent.max_turns", "5", env={"HERMES_HOME": str(third)}
        )
        assert (third / "profiles" / "work" / "config.yaml").exists()
        assert third.stat().st_mode & 0o777 == 0o700
        assert (third / "profiles" / "work").stat().st_mode & 0o777 == 0o700
    finally:
        os.umask(old)


def test_doctor_reports_files_others_can_read(hermes_cli, hermes_home):
    hermes_cli("config", "set", "model.provider", "custom")
    hermes_cli("config", "set", "model.base_url", "http://127.0.0.1:9/v1")
    hermes_cli("config", "set", "model.default", "local-model")
    clean = hermes_cli("doctor", "--no-network")
    assert "readable by their owner only" in clean.stdout, clean.stdout
    (hermes_home / ".env").write_text("CUSTOM_API_KEY=x\n")
    os.chmod(hermes_home / ".env", 0o644)
    SQLiteSessionStore(hermes_home / "state.db").close()
    os.chmod(hermes_home / "state.db", 0o640)
    (hermes_home / "state.db-wal").write_bytes(b"")
    os.chmod(hermes_home / "state.db-wal", 0o604)
    result = hermes_cli("doctor", "--no-network")
    assert result.exit_code == 1
    problems = [line for line in result.stdout.splitlines() if line.startswith("ERR")]
    assert len(problems) == 3, result.stdout
    env_line, db_line, wal_line = problems
    assert str(hermes_home / ".env") in env_line and "mode 644" in env_line
    assert f"chmod 600 {hermes_home / '.env'}" in env_line
    assert "state.db is open to its group (mode 640)" in db_line
    assert "state.db-wal is open to others (mode 604)" in wal_line
    assert result.stdout.splitlines()[-1] == "3 problem(s) found"


def test_doctor_reports_a_readable_config_holding_a_key(hermes_cli, hermes_home):
    path = hermes_home / "config.yaml"
    path.write_text(yaml.safe_dump({"model": {"provider": "custom", "api_key": KEY}}))
    os.chmod(path, 0o644)
    result = hermes_cli("doctor", "--no-network")
    assert result.exit_code == 1
    assert any(line.startswith("ERR") and str(path) in line for line in result.stdout.splitlines())
    assert KEY not in result.stdout
    path.write_text(yaml.safe_dump({"model": {"provider": "custom", "api_key": "${MY_KEY}"}}))
    os.chmod(path, 0o644)  # a reference is no secret
    lines = hermes_cli("doctor", "--no-network").stdout.splitlines()
    assert not any(line.startswith("ERR") and str(path) in line for line in lines)


# --- sessions export and logs --------------------------------------------------------------------


def test_sessions_export_redacts_known_secrets(hermes_cli, hermes_home, monkeypatch):
    (hermes_home / ".env").write_text("ACME_TOKEN=acme-dotenv-token-4242\n")
    (hermes_home / "config.yaml").write_text(
        yaml.safe_dump({"auxiliary": {"vision": {"api_key": "config-key-31337-abc"}}})
    )
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    store = SQLiteSessionStore(hermes_home / "state.db")
    store.create_session(SessionInfo(id="s1", title="keys acme-dotenv-token-4242"))
    for content in (
        f"my key is {KEY}",
        "token acme-dotenv-token-4242 and config-key-31337-abc",
    ):
        store.append_message("s1", {"role": "user", "content": content})
    store.close()
    for args in (
        ("sessions", "export", "s1"),
        ("sessions", "export", "s1", "--format", "md"),
        ("sessions", "show", "s1"),
        ("sessions", "show", "s1", "--json"),
        ("sessions", "search", "key"),
        ("sessions", "search", "token", "--json"),
    ):
        result = hermes_cli(*args)
        assert result.exit_code == 0, (args, result.stderr)
        for value in (KEY, "acme-dotenv-token-4242", "config-key-31337-abc"):
            assert value not in result.stdout, (args, value)
        assert "[REDACTED]" in result.stdout
    lines = hermes_cli("sessions", "export", "s1").stdout.splitlines()
    assert json.loads(lines[1])["content"] == "my key is [REDACTED]"


def test_log_lines_hermes_prints_are_redacted(hermes_cli, hermes_home, monkeypatch):
    import logging

    from hermes_core.cli.app import redact_log_handlers

    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    records: list[str] = []

    class Collect(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            records.append(self.format(record))

    handler = Collect()
    redact_log_handlers([handler])
    logger = logging.getLogger("hermes.test-secrets")
    logger.addHandler(handler)
    try:
        logger.warning("request failed with key %s", KEY)
        try:
            raise RuntimeError(f"bad key {KEY}")
        except RuntimeError:
            logger.exception("boom")
    finally:
        logger.removeHandler(handler)
    assert records[0] == "request failed with key [REDACTED]"
    assert KEY not in records[1] and "bad key [REDACTED]" in records[1]


def test_a_scripted_chat_through_the_cli_keeps_secrets_out_of_commands(
    hermes_cli, hermes_home, monkeypatch, tmp_path
):
    (hermes_home / ".env").write_text("ACME_TOKEN=acme-dotenv-token-4242\n")
    (hermes_home / "config.yaml").write_text(
        yaml.safe_dump({"terminal": {"cwd": str(tmp_path)}, "toolsets": ["terminal"]})
    )
    monkeypatch.setenv("OPENAI_API_KEY", KEY)
    monkeypatch.setenv("HERMES_PLUGINS", "terminal,local")
    model = ScriptedModel(tool_call("terminal", {"command": "env"}), text("done"))
    result = hermes_cli("chat", "-q", "env?", "--provider", "scripted", "--yolo", model=model)
    assert result.exit_code == 0, result.stderr
    [_, second] = model.requests
    [tool_result] = [m for m in second.messages if m["role"] == "tool"]
    assert "PATH=" in tool_result["content"]
    for text_ in ("OPENAI_API_KEY", KEY, "ACME_TOKEN", "acme-dotenv-token-4242"):
        assert text_ not in tool_result["content"]
