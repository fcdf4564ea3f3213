"""Plugins own their configuration: ``hermes_register_config`` declarations, their defaults, the
one validator (wrong types, unknown keys, duplicate keys), through the API and the CLI."""

from __future__ import annotations

import io
import json
import sys
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from hermes_core.cli import app
from hermes_core.config import loading as config_module
from hermes_core.config.loading import (
    ConfigError,
    ConfigWarning,
    load_config,
    store_value,
    warn_unknown_keys,
)
from hermes_core.config.schema import ConfigSchema, SchemaError
from hermes_core.plugins.manager import PluginManager
from hermes_core.plugins.registry import Registry
from hermes_core.testing import make_agent, text, tool_call
from hermes_hookspecs import (
    NO_DEFAULT,
    ConfigKey,
    ConfigSection,
    Tool,
    Toolset,
    hookimpl,
)


class AcmePlugin:
    """A third-party plugin with its own section and a tool that reads it."""

    seen: list[Any]

    def __init__(self) -> None:
        self.seen = []

    @hookimpl
    def hermes_register_config(self, register: Callable[[ConfigSection], None]) -> None:
        register(
            ConfigSection(
                "acme",
                [
                    ConfigKey("retries", "integer", 2, "times a lookup is retried", minimum=0),
                    ConfigKey(
                        "units",
                        "string",
                        "metric",
                        "units of the answers",
                        enum=("metric", "imperial"),
                    ),
                    ConfigKey("api_token", "string", doc="the Acme API token", secret=True),
                ],
                doc="the acme weather tools",
            )
        )

    @hookimpl
    def hermes_register_toolsets(self, register: Callable[[Toolset], None]) -> None:
        def lookup(args: dict[str, Any], ctx: Any) -> str:
            self.seen.append(ctx.config["acme"]["retries"])
            return "sunny"

        register(
            Toolset(
                name="acme",
                description="Acme weather",
                tools=[
                    Tool(
                        name="acme_lookup",
                        description="Weather",
                        parameters={"type": "object", "properties": {}},
                        handler=lookup,
                    )
                ],
            )
        )


class Vault:
    """A plugin with a key that is a secret only because it says so (not by its name)."""

    @hookimpl
    def hermes_register_config(self, register: Callable[[ConfigSection], None]) -> None:
        register(ConfigSection("vault", [ConfigKey("pin_code", "string", secret=True)]))


class Rival:
    """A plugin that declares a key the acme plugin already declares."""

    @hookimpl
    def hermes_register_config(self, register: Callable[[ConfigSection], None]) -> None:
        register(
            ConfigSection(
                "acme",
                [ConfigKey("retries", "integer", 5), ConfigKey("colour", "string", "blue")],
            )
        )


def manager(*plugins: tuple[str, object]) -> PluginManager:
    return PluginManager(entry_points=False, extra=list(plugins), environ={})


@pytest.fixture(autouse=True)
def fresh_warnings(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test sees its warnings afresh ("once per process" is per test here)."""
    monkeypatch.setattr(config_module, "_warned", set())


# --- the contract types ----------------------------------------------------------------------


def test_config_key_checks_its_declaration() -> None:
    key = ConfigKey("retries", "integer", 2, "doc")
    assert key.type == ("integer",) and key.has_default
    assert not ConfigKey("x").has_default and ConfigKey("x").default is NO_DEFAULT
    with pytest.raises(ValueError, match="unknown type 'int'"):
        ConfigKey("x", "int")
    with pytest.raises(ValueError, match="expected names separated by dots"):
        ConfigKey("a..b")
    with pytest.raises(TypeError, match="expected ConfigKey items"):
        ConfigSection("acme", ["retries"])  # type: ignore[list-item]
    assert ConfigSection("acme", [key]).path(key) == "acme.retries"
    assert ConfigSection("", [key]).path(key) == "retries"


# --- through the API ---------------------------------------------------------------------------


def test_third_party_section_gives_its_defaults_to_the_agent_and_its_tools() -> None:
    plugin = AcmePlugin()
    agent = make_agent(
        tool_call("acme_lookup", {}), text("done"), plugin_manager=manager(("acme", plugin))
    )
    assert agent.config.get("acme.retries") == 2
    assert agent.config.get("acme.units") == "metric"
    assert agent.config.get("acme.api_token") is None  # no default: absent
    assert agent.config.sources["acme.retries"] == "default"
    agent.chat("weather?")
    assert plugin.seen == [2]
    assert agent.registry.config_schema.get("acme.retries").owner == "acme"  # type: ignore[union-attr]


def test_a_set_value_wins_over_the_plugin_default() -> None:
    agent = make_agent(
        config={"acme": {"retries": 7}}, plugin_manager=manager(("acme", AcmePlugin()))
    )
    assert agent.config.get("acme.retries") == 7
    assert agent.config.get("acme.units") == "metric"


def test_a_wrong_type_for_a_plugin_key_is_one_config_error() -> None:
    with pytest.raises(ConfigError) as info:
        make_agent(
            config={"acme": {"retries": "three"}}, plugin_manager=manager(("acme", AcmePlugin()))
        )
    assert str(info.value) == "acme.retries: expected an integer, got 'three'"
    with pytest.raises(ConfigError, match="acme.units: expected one of 'metric', 'imperial'"):
        make_agent(config={"acme": {"units": "si"}}, plugin_manager=manager(("acme", AcmePlugin())))


def test_a_wrong_type_in_the_file_names_the_file_and_line(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("agent:\n  max_turns: 3\nacme:\n  retries: -1\n")
    with pytest.raises(ConfigError) as info:
        make_agent(home=tmp_path, plugin_manager=manager(("acme", AcmePlugin())))
    assert str(info.value) == (
        f"{tmp_path / 'config.yaml'}:4: acme.retries: expected an integer >= 0, got -1"
    )


def test_builtin_defaults_are_the_same_as_before() -> None:
    agent = make_agent(plugins=["terminal", "delegation", "compressor"])
    cfg = agent.config
    assert cfg.get("terminal.timeout") == 180
    assert cfg.get("terminal.backend") == "local"
    assert cfg.get("delegation.max_iterations") == 50
    assert cfg.section("compression") == {
        "enabled": True,
        "threshold": 0.5,
        "protect_first_n": 3,
        "protect_last_n": 20,
    }
    assert cfg.get("approvals.mode") == "manual"


def test_duplicate_declaration_is_refused_naming_both_plugins() -> None:
    plugins = manager(("acme", AcmePlugin()), ("rival", Rival()))
    schema = Registry.of(plugins).config_schema
    assert schema.get("acme.retries").owner == "acme"  # type: ignore[union-attr]
    assert schema.get("acme.colour").owner == "rival"  # type: ignore[union-attr]
    errors = plugins.records["rival"].hook_errors
    assert errors == [
        "hermes_register_config: SchemaError: config key 'acme.retries' is declared by both"
        " 'acme' and 'rival'"
    ]


def test_a_plugin_cannot_redeclare_a_core_key() -> None:
    class Grabby:
        @hookimpl
        def hermes_register_config(self, register: Callable[[ConfigSection], None]) -> None:
            register(ConfigSection("agent", [ConfigKey("max_turns", "integer", 5)]))

    plugins = manager(("grabby", Grabby()))
    assert Registry.of(plugins).config_schema.get("agent.max_turns").owner == "hermes"  # type: ignore[union-attr]
    assert "declared by both 'hermes' and 'grabby'" in plugins.records["grabby"].hook_errors[0]


def test_shared_keys_may_be_declared_alike_by_several_plugins() -> None:
    schema = ConfigSchema()
    shared = ConfigKey("size", "integer", 1, shared=True)
    schema.declare(ConfigSection("box", [shared]), "one")
    schema.declare(ConfigSection("box", [ConfigKey("size", "integer", 1, shared=True)]), "two")
    assert schema.get("box.size").owner == "one, two"  # type: ignore[union-attr]
    with pytest.raises(SchemaError, match="declared by both 'one, two' and 'three'"):
        schema.declare(
            ConfigSection("box", [ConfigKey("size", "integer", 2, shared=True)]), "three"
        )


def test_unknown_key_warns_once_with_the_closest_known_key(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("agnet:\n  max_turns: 3\nacme:\n  retrys: 1\n")
    plugins = manager(("acme", AcmePlugin()))
    with pytest.warns(ConfigWarning) as caught:
        make_agent(home=tmp_path, plugin_manager=plugins)
    path = tmp_path / "config.yaml"
    assert [str(w.message) for w in caught] == [
        f"{path}:1: unknown config key 'agnet' (did you mean 'agent'?)",
        f"{path}:4: unknown config key 'acme.retrys' (did you mean 'acme.retries'?)",
    ]
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a second agent in the process warns no more
        make_agent(home=tmp_path, plugin_manager=plugins)


def test_keys_of_a_plugin_that_is_not_installed_are_kept_with_a_warning(tmp_path: Path) -> None:
    # (keys the Hermes agent writes, such as cron: or terminal.cwd, are accepted silently:
    # tests/test_hermes_agent_config.py)
    (tmp_path / "config.yaml").write_text("acme_jobs:\n  tick_seconds: 5\n")
    with pytest.warns(ConfigWarning) as caught:
        agent = make_agent(home=tmp_path, plugin_manager=manager())
    assert [str(w.message) for w in caught] == [
        f"{tmp_path / 'config.yaml'}:1: config section 'acme_jobs': no installed plugin declares it"
        " (kept)"
    ]
    assert agent.config.get("acme_jobs.tick_seconds") == 5


def test_duplicate_yaml_key_is_an_error_naming_both_lines(tmp_path: Path) -> None:
    path = tmp_path / "config.yaml"
    path.write_text("agent:\n  max_turns: 3\n  stream: true\n  max_turns: 4\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, {})
    assert str(info.value) == (
        f"{path}:4: duplicate key 'agent.max_turns' (first written at line 2)"
    )
    path.write_text("fallback_providers:\n  - provider: a\n    model: m\n    provider: b\n")
    with pytest.raises(ConfigError, match=r":4: duplicate key 'fallback_providers\[0\]\.provider'"):
        load_config(tmp_path, {})
    path.write_text("model: a\nagent: {}\nmodel: b\n")
    with pytest.raises(ConfigError, match=r":3: duplicate key 'model' \(first written at line 1\)"):
        load_config(tmp_path, {})


def test_store_value_checks_plugin_keys_before_writing(tmp_path: Path) -> None:
    schema = Registry.of(manager(("acme", AcmePlugin()))).config_schema
    path = tmp_path / "config.yaml"
    store_value(path, "acme.retries", 4, schema)
    with pytest.raises(ConfigError, match="acme.retries: expected an integer, got 'x'"):
        store_value(path, "acme.retries", "x", schema)
    assert yaml.safe_load(path.read_text()) == {"acme": {"retries": 4}}


def test_warn_unknown_keys_returns_the_lines(tmp_path: Path) -> None:
    config = load_config(tmp_path, {}, file_data={"agent": {"max_turn": 3}})
    with pytest.warns(ConfigWarning):
        assert warn_unknown_keys(config) == [
            "unknown config key 'agent.max_turn' (did you mean 'agent.max_turns'?)"
        ]


# --- through the CLI -----------------------------------------------------------------------


@dataclass
class Run:
    code: int
    out: str
    err: str


@pytest.fixture
def hermes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Run]:
    """``hermes(*argv)`` runs the CLI in an isolated home with only the acme plugin."""
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    monkeypatch.setenv("HERMES_PLUGINS", "")
    for name in [n for n in list(__import__("os").environ) if n.startswith("HERMES_")]:
        if name not in ("HERMES_HOME", "HERMES_PLUGINS"):
            monkeypatch.delenv(name)
    real = app.build_cli

    def run(*argv: str, plugins: Sequence[tuple[str, object]] = ()) -> Run:
        def build_cli(argv: Any = None, extra_plugins: Any = ()) -> Any:
            return real(argv, extra_plugins=[("acme", AcmePlugin()), *plugins])

        monkeypatch.setattr(app, "build_cli", build_cli)
        monkeypatch.setattr(sys, "stdin", io.StringIO(""))
        capsys.readouterr()
        code = app.main(list(argv))
        out, err = capsys.readouterr()
        return Run(code, out, err)

    return run


def test_cli_show_defaults_lists_every_key_with_its_plugin(hermes: Callable[..., Run]) -> None:
    run = hermes("config", "show", "--defaults")
    assert run.code == 0, run.err
    rows = {line.split()[0]: line for line in run.out.splitlines()[1:]}
    assert "acme" in rows["acme.retries"] and "times a lookup is retried" in rows["acme.retries"]
    assert "an integer >= 0" in rows["acme.retries"]
    assert "hermes" in rows["agent.max_turns"] and "90" in rows["agent.max_turns"]
    listed = json.loads(hermes("config", "show", "--defaults", "--json").out)
    entry = next(r for r in listed if r["key"] == "acme.api_token")
    assert entry == {
        "key": "acme.api_token",
        "type": "a string",
        "default": None,
        "has_default": False,
        "plugin": "acme",
        "secret": True,
        "doc": "the Acme API token",
    }


def test_cli_show_includes_plugin_defaults(hermes: Callable[..., Run]) -> None:
    shown = yaml.safe_load(hermes("config", "show").out)
    assert shown["acme"] == {"retries": 2, "units": "metric"}


def test_cli_set_checks_the_value_against_the_plugin_schema(
    hermes: Callable[..., Run], tmp_path: Path
) -> None:
    run = hermes("config", "set", "acme.retries", "lots")
    assert run.code == 2
    assert run.err.strip() == (
        f"hermes: error: {tmp_path / 'config.yaml'}: acme.retries: expected an integer, got 'lots'"
    )
    assert "Traceback" not in run.err
    assert not (tmp_path / "config.yaml").exists()
    assert hermes("config", "set", "acme.retries", "5").code == 0
    assert hermes("config", "get", "acme.retries").out.strip() == "5"


def test_cli_set_refuses_an_unknown_key_unless_forced(
    hermes: Callable[..., Run], tmp_path: Path
) -> None:
    run = hermes("config", "set", "agnet.max_turns", "5")
    assert run.code == 2
    assert run.err.strip() == (
        "hermes: error: unknown config key 'agnet.max_turns' (did you mean 'agent.max_turns'?);"
        " nothing written (--force writes it anyway)"
    )
    run = hermes("config", "set", "zebra.stripes", "5")
    assert "no installed plugin declares it" in run.err and run.code == 2
    assert not (tmp_path / "config.yaml").exists()
    run = hermes("config", "set", "--force", "zebra.stripes", "5")
    assert run.code == 0, run.err
    assert yaml.safe_load((tmp_path / "config.yaml").read_text()) == {"zebra": {"stripes": 5}}


def test_cli_wrong_type_in_the_file_is_one_line_and_exit_2(
    hermes: Callable[..., Run], tmp_path: Path
) -> None:
    (tmp_path / "config.yaml").write_text("acme:\n  retries: many\n")
    run = hermes("config", "show")
    assert run.code == 2
    assert run.err.strip() == (
        f"hermes: error: {tmp_path / 'config.yaml'}:2: acme.retries: expected an integer,"
        " got 'many'"
    )


def test_cli_unknown_key_is_warned_once(hermes: Callable[..., Run], tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("agnet:\n  max_turns: 3\n")
    run = hermes("config", "show")
    assert run.code == 0
    assert run.err.splitlines() == [
        f"hermes: warning: {tmp_path / 'config.yaml'}:1: unknown config key 'agnet'"
        " (did you mean 'agent'?)"
    ]


def test_cli_duplicate_yaml_key(hermes: Callable[..., Run], tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("acme:\n  retries: 1\n  retries: 2\n")
    run = hermes("config", "show")
    assert run.code == 2
    assert run.err.strip() == (
        f"hermes: error: {tmp_path / 'config.yaml'}:3: duplicate key 'acme.retries'"
        " (first written at line 2)"
    )


def test_cli_masks_keys_a_plugin_declares_secret(
    hermes: Callable[..., Run], tmp_path: Path
) -> None:
    (tmp_path / "config.yaml").write_text("acme:\n  api_tkn: x\n")
    # not a secret by its name, nor declared: shown as written (and warned about)
    assert "api_tkn: x" in hermes("config", "show").out

    (tmp_path / "config.yaml").write_text("vault:\n  pin_code: abcdefghijklmnop\n")
    run = hermes("config", "show", plugins=[("vault", Vault())])
    assert run.code == 0, run.err
    assert "abcdefghijklmnop" not in run.out
    assert (
        "abcdefghijklmnop"
        not in hermes("config", "get", "vault.pin_code", plugins=[("vault", Vault())]).out
    )


def test_a_declared_secret_written_as_a_reference_takes_the_variable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from hermes_runtime.secrets import secret_values

    monkeypatch.setenv("VAULT_PIN", "pin-0123456789")
    (tmp_path / "config.yaml").write_text("vault:\n  pin_code: ${VAULT_PIN}\n")
    agent = make_agent(home=tmp_path, plugin_manager=manager(("vault", Vault())))
    assert agent.config.get("vault.pin_code") == "pin-0123456789"
    assert "pin-0123456789" in secret_values()


def test_cli_set_stores_a_declared_secret_in_dotenv(
    hermes: Callable[..., Run], tmp_path: Path
) -> None:
    run = hermes(
        "config", "set", "vault.pin_code", "tok-abcdefghijkl", plugins=[("vault", Vault())]
    )
    assert run.code == 0, run.err
    assert "VAULT_PIN_CODE=tok-abcdefghijkl" in (tmp_path / ".env").read_text()
    assert "${VAULT_PIN_CODE}" in (tmp_path / "config.yaml").read_text()
    assert "tok-abcdefghijkl" not in (tmp_path / "config.yaml").read_text()
    assert "tok-abcdefghijkl" not in run.out


def test_suggestions_are_keys_alike_never_the_section_a_key_is_in() -> None:
    schema = ConfigSchema()
    schema.declare(
        ConfigSection(
            "terminal", [ConfigKey("backend", "string"), ConfigKey("timeout", "integer")]
        ),
        "core",
    )
    schema.declare(ConfigSection("", [ConfigKey("toolsets", "array")]), "core")
    assert schema.closest("terminal.timout") == "terminal.timeout"
    assert schema.closest("termnal.timeout") == "terminal.timeout"
    assert schema.closest("toolset") == "toolsets"
    assert schema.closest("terminal.wd") is None
    assert list(schema.unknown({"terminal": {"wd": "/w"}})) == [
        (
            "terminal.wd",
            "config key 'terminal.wd': no installed plugin declares it (kept)",
        )
    ]
