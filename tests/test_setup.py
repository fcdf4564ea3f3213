"""``hermes setup`` and ``hermes model``: config.yaml and .env written as a user expects."""

from __future__ import annotations

import stat

import pytest
import yaml

from hermes_core.cli import main
from hermes_core.config.loading import load_dotenv, write_dotenv
from hermes_hookspecs import Provider, hookimpl


class Providers:
    @hookimpl
    def hermes_register_providers(self, register):
        register(
            Provider(
                "acme",
                "chat_completions",
                lambda s: None,
                key_env="ACME_API_KEY",
                default_model="acme-large",
                default_base_url="https://acme.test/v1",
            )
        )
        register(Provider("local", "chat_completions", lambda s: None, default_model="llama"))
        register(
            Provider(
                "router",
                "chat_completions",
                lambda s: None,
                key_env="ROUTER_API_KEY",
                default_model="acme/acme-large",
                default_base_url="https://router.test/v1",
            )
        )


def run(*args, input=None, monkeypatch=None, capsys=None):
    if input is not None:
        import io

        monkeypatch.setattr("sys.stdin", io.StringIO(input))
    code = main(["--plugins", "", *args], extra_plugins=[("providers", Providers())])
    out, err = capsys.readouterr()
    return code, out, err


def test_setup_with_flags_writes_config_and_a_private_env(hermes_home, monkeypatch, capsys):
    code, out, err = run(
        "setup",
        "--no-check",
        "--provider",
        "acme",
        "--model",
        "acme-small",
        "--api-key",
        "sk-secret",
        monkeypatch=monkeypatch,
        capsys=capsys,
    )
    assert code == 0, err
    config = yaml.safe_load((hermes_home / "config.yaml").read_text())
    assert config["model"] == {"provider": "acme", "default": "acme-small"}
    assert "sk-secret" not in (hermes_home / "config.yaml").read_text()
    env_file = hermes_home / ".env"
    assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
    assert load_dotenv(env_file, {}) == {"ACME_API_KEY": "sk-secret"}


@pytest.mark.filterwarnings("ignore::getpass.GetPassWarning")  # no terminal to hide input on
def test_setup_asks_when_run_without_flags(hermes_home, monkeypatch, capsys):
    answers = "acme\nacme-mini\nhttps://proxy.test/v1\nsk-typed\n"
    code, out, err = run(
        "setup", "--no-check", input=answers, monkeypatch=monkeypatch, capsys=capsys
    )
    assert code == 0, err
    config = yaml.safe_load((hermes_home / "config.yaml").read_text())
    assert config["model"] == {
        "provider": "acme",
        "default": "acme-mini",
        "base_url": "https://proxy.test/v1",
    }
    assert load_dotenv(hermes_home / ".env", {}) == {"ACME_API_KEY": "sk-typed"}


def test_setup_rejects_unknown_provider_in_one_line(hermes_home, monkeypatch, capsys):
    code, out, err = run(
        "setup", "--provider", "nope", "--model", "x", monkeypatch=monkeypatch, capsys=capsys
    )
    assert code == 1
    assert err == "hermes: error: unknown provider 'nope' (installed: acme, local, router)\n"


def test_model_shows_and_switches(hermes_home, monkeypatch, capsys):
    (hermes_home / "config.yaml").write_text(
        "model:\n  provider: acme\n  default: a1\nagent:\n  max_turns: 5\n"
    )
    assert run("model", monkeypatch=monkeypatch, capsys=capsys)[1] == "acme / a1\n"
    code, out, err = run("model", "a2", monkeypatch=monkeypatch, capsys=capsys)
    assert code == 0, err
    code, out, err = run("model", "local/llama3", monkeypatch=monkeypatch, capsys=capsys)
    assert code == 0, err
    config = yaml.safe_load((hermes_home / "config.yaml").read_text())
    assert config["model"] == {"provider": "local", "default": "llama3"}
    assert config["agent"] == {"max_turns": 5}
    code, out, err = run("model", "x", "--provider", "nope", monkeypatch=monkeypatch, capsys=capsys)
    assert code == 1 and "unknown provider 'nope'" in err


def test_write_dotenv_keeps_other_lines_and_quotes_when_needed(tmp_path):
    path = tmp_path / ".env"
    path.write_text("# my keys\nOTHER=1\nACME_API_KEY=old\n")
    write_dotenv(path, {"ACME_API_KEY": "new key with spaces", "EXTRA": "plain-value"})
    assert path.read_text() == (
        '# my keys\nOTHER=1\nACME_API_KEY="new key with spaces"\nEXTRA=plain-value\n'
    )
    assert load_dotenv(path, {})["ACME_API_KEY"] == "new key with spaces"


@pytest.mark.filterwarnings("ignore::getpass.GetPassWarning")
def test_running_setup_again_shows_and_keeps_the_saved_values(hermes_home, monkeypatch, capsys):
    monkeypatch.delenv("ACME_API_KEY", raising=False)
    answers = "acme\nacme-mini\nhttps://proxy.test/v1\nsk-typed-0123456789\n"
    assert run("setup", "--no-check", input=answers, monkeypatch=monkeypatch, capsys=capsys)[0] == 0
    monkeypatch.setenv("ACME_API_KEY", "sk-typed-0123456789")  # what the next process loads
    code, out, err = run(
        "setup", "--no-check", input="\n\n\n\n", monkeypatch=monkeypatch, capsys=capsys
    )
    assert code == 0, err
    config = yaml.safe_load((hermes_home / "config.yaml").read_text())
    assert config["model"] == {
        "provider": "acme",
        "default": "acme-mini",
        "base_url": "https://proxy.test/v1",
    }
    assert load_dotenv(hermes_home / ".env", {}) == {"ACME_API_KEY": "sk-typed-0123456789"}
    assert "[acme-mini]" in out and "[https://proxy.test/v1]" in out
    assert "Enter keeps sk-...6789" in out + err
    assert "sk-typed-0123456789" not in out + err


def test_setup_without_a_key_for_a_provider_that_needs_one_says_so(
    hermes_home, monkeypatch, capsys
):
    monkeypatch.delenv("ACME_API_KEY", raising=False)
    code, out, err = run(
        "setup", "--provider", "acme", "--model", "m", monkeypatch=monkeypatch, capsys=capsys
    )
    assert code == 1
    assert err.startswith("hermes: error: no API key for acme: chats will fail until ACME_API_KEY")
    assert yaml.safe_load((hermes_home / "config.yaml").read_text())["model"]["default"] == "m"


def test_model_with_a_slash_keeps_a_router_provider(hermes_home, monkeypatch, capsys):
    (hermes_home / "config.yaml").write_text("model:\n  provider: router\n  default: x/y\n")
    code, out, err = run("model", "acme/acme-small", monkeypatch=monkeypatch, capsys=capsys)
    assert code == 0, err
    config = yaml.safe_load((hermes_home / "config.yaml").read_text())
    assert config["model"] == {"provider": "router", "default": "acme/acme-small"}
