"""Tests for hermes_core.config.loading: locations, .env, layering, validation and file edits."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from hermes_core.config.loading import (
    DEFAULTS,
    ENV_VARS,
    Config,
    ConfigError,
    ConfigWarning,
    load_config,
    load_dotenv,
    resolve_home,
    save_config,
    set_value,
    unset_value,
    validate,
)
from hermes_core.config.schema import ConfigSchema
from hermes_core.plugins.manager import PluginManager
from hermes_core.plugins.registry import Registry
from hermes_hookspecs import API_MODES, HermesError

ROOT = Path(__file__).resolve().parents[1]


def installed_schema() -> ConfigSchema:
    """The keys of the core and of every installed plugin (the builtin ones declare
    ``compression.*``, ``terminal.timeout``, ``delegation.*``...)."""
    return Registry.of(PluginManager(environ={})).config_schema


INSTALLED = installed_schema()


def write(home: Path, text: str) -> Path:
    home.mkdir(parents=True, exist_ok=True)
    path = home / "config.yaml"
    path.write_text(text, encoding="utf-8")
    return path


# --- resolve_home ----------------------------------------------------------


def test_home_from_hermes_home(tmp_path: Path) -> None:
    assert resolve_home(environ={"HERMES_HOME": str(tmp_path)}) == tmp_path


def test_home_defaults_to_dot_hermes(tmp_path: Path) -> None:
    assert resolve_home(environ={"HOME": str(tmp_path)}) == tmp_path / ".hermes"


def test_empty_hermes_home_is_ignored(tmp_path: Path) -> None:
    environ = {"HERMES_HOME": "", "HOME": str(tmp_path)}
    assert resolve_home(environ=environ) == tmp_path / ".hermes"


def test_profile_home_and_nothing_created(tmp_path: Path) -> None:
    home = resolve_home("work.v2", {"HERMES_HOME": str(tmp_path / "h")})
    assert home == tmp_path / "h" / "profiles" / "work.v2"
    assert not (tmp_path / "h").exists()


@pytest.mark.parametrize("name", ["", ".hidden", "-x", "a/b", "..", "a b", "x\n"])
def test_bad_profile_name(tmp_path: Path, name: str) -> None:
    with pytest.raises(ConfigError, match="invalid profile name"):
        resolve_home(name, {"HERMES_HOME": str(tmp_path)})


def test_profiles_are_isolated(tmp_path: Path) -> None:
    environ = {"HERMES_HOME": str(tmp_path)}
    write(tmp_path, "agent:\n  max_turns: 11\n")
    (tmp_path / ".env").write_text("HERMES_MODEL=root-model\n")
    profile = resolve_home("dev", environ)
    write(profile, "agent:\n  max_turns: 22\n")

    env: dict[str, str] = dict(environ)
    assert load_dotenv(profile / ".env", env) == {}
    config = load_config(profile, env)
    assert config.path == profile / "config.yaml"
    assert config.get("agent.max_turns") == 22
    assert config.get("model.default") is None
    assert load_config(tmp_path, environ).get("agent.max_turns") == 11


# --- load_dotenv -----------------------------------------------------------


def test_dotenv_parsing(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text(
        "# a comment\n"
        "\n"
        "PLAIN=value\n"
        "export EXPORTED=yes\n"
        "  SPACED  =  padded value  \n"
        "SINGLE='a # not a comment \\n'\n"
        'DOUBLE="line\\nbreak \\"q\\""  # comment\n'
        "TRAILING=abc # comment\n"
        "HASH=a#b\n"
        "EMPTY=\n"
        "EQUALS=a=b=c\n"
        "PLAIN=second wins\n",
        encoding="utf-8",
    )
    env: dict[str, str] = {}
    values = load_dotenv(path, env)
    assert values == {
        "PLAIN": "second wins",
        "EXPORTED": "yes",
        "SPACED": "padded value",
        "SINGLE": "a # not a comment \\n",
        "DOUBLE": 'line\nbreak "q"',
        "TRAILING": "abc",
        "HASH": "a#b",
        "EMPTY": "",
        "EQUALS": "a=b=c",
    }
    assert env == values


def test_dotenv_real_environment_wins(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("OPENAI_API_KEY=from-file\nOTHER=x\n")
    env = {"OPENAI_API_KEY": "from-env"}
    assert load_dotenv(path, env) == {"OPENAI_API_KEY": "from-file", "OTHER": "x"}
    assert env == {"OPENAI_API_KEY": "from-env", "OTHER": "x"}


def test_dotenv_missing_file(tmp_path: Path) -> None:
    env: dict[str, str] = {}
    assert load_dotenv(tmp_path / ".env", env) == {}
    assert env == {}


@pytest.mark.parametrize(
    "line",
    ["just words", "BAD-KEY=1", "=value", "KEY='unterminated", 'KEY="a" extra', "export"],
)
def test_dotenv_malformed_line(tmp_path: Path, line: str) -> None:
    path = tmp_path / ".env"
    path.write_text(f"GOOD=1\n{line}\nAFTER=2\n")
    env: dict[str, str] = {}
    with pytest.warns(ConfigWarning) as caught:
        values = load_dotenv(path, env)
    assert [str(w.message) for w in caught][0].startswith(f"{path}:2: ")
    assert len(caught) == 1
    assert values == env == {"GOOD": "1", "AFTER": "2"}  # the other lines are all kept


def test_dotenv_warning_does_not_echo_secret(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_text("sk-secret-value\n")
    with pytest.warns(ConfigWarning) as caught:
        load_dotenv(path, {})
    assert "sk-secret" not in str(caught[0].message)


def test_dotenv_unreadable_file_is_an_error(tmp_path: Path) -> None:
    path = tmp_path / ".env"
    path.write_bytes(b"KEY=\xff\xfe\n")
    with pytest.raises(ConfigError):
        load_dotenv(path, {})


# --- load_config: layers and sources -----------------------------------------


def test_defaults_without_file(tmp_path: Path) -> None:
    config = load_config(tmp_path, environ={})
    assert isinstance(config, Config)
    assert config.home == tmp_path
    assert config.path == tmp_path / "config.yaml"
    assert config.file_data == {}
    assert config.data == DEFAULTS
    assert config.data is not DEFAULTS
    assert config.get("agent.max_turns") == 90
    assert config.get("compression.threshold") is None  # the compressor plugin declares it
    config = config.with_schema(INSTALLED)
    assert config.get("compression.threshold") == 0.5
    assert config.sources["compression.threshold"] == "default"
    assert config.get("context.engine", "x") is None
    assert config.get("approvals.mode") == "manual"
    assert config.sources["agent.max_turns"] == "default"
    assert config.sources["plugins.disabled"] == "default"
    assert "model" not in config.sources


def test_defaults_are_not_shared(tmp_path: Path) -> None:
    config = load_config(tmp_path, environ={})
    config.data["plugins"]["disabled"].append("x")
    assert DEFAULTS["plugins"]["disabled"] == []


def test_precedence_and_sources(tmp_path: Path) -> None:
    write(
        tmp_path,
        "model:\n  default: file-model\n  provider: openrouter\n"
        "agent:\n  max_turns: 10\n  tool_concurrency: 2\n  stream: false\n",
    )
    environ = {"HERMES_MAX_TURNS": "20", "HERMES_PROVIDER": "anthropic"}
    overrides = {"agent.max_turns": 30, "model.default": None}
    config = load_config(tmp_path, environ, overrides=overrides)

    assert config.file_data["agent"]["max_turns"] == 10
    assert config.get("agent.max_turns") == 30
    assert config.sources["agent.max_turns"] == "cli"
    assert config.get("model.provider") == "anthropic"
    assert config.sources["model.provider"] == "env:HERMES_PROVIDER"
    assert config.get("model.default") == "file-model"  # None override is ignored
    assert config.sources["model.default"] == "file"
    assert config.get("agent.tool_concurrency") == 2
    assert config.sources["agent.tool_concurrency"] == "file"
    assert config.get("agent.platform") == "cli"
    assert config.sources["agent.platform"] == "default"

    without_cli = load_config(tmp_path, environ)
    assert without_cli.get("agent.max_turns") == 20
    assert without_cli.sources["agent.max_turns"] == "env:HERMES_MAX_TURNS"


def test_env_vars_convert_types(tmp_path: Path) -> None:
    environ = {
        "HERMES_MODEL": "m",
        "HERMES_PROVIDER": "p",
        "HERMES_BASE_URL": "http://localhost:8000/v1",
        "HERMES_API_MODE": API_MODES[0],
        "HERMES_MAX_TURNS": " 7 ",
        "HERMES_TOOLSETS": "web, file,,terminal",
        "HERMES_DISABLED_TOOLSETS": "browser",
        "HERMES_CONTEXT_ENGINE": "lcm",
        "HERMES_TERMINAL_BACKEND": "docker",
        "HERMES_STORE_URL": "postgresql://db/hermes",
    }
    config = load_config(tmp_path, environ)
    assert config.get("model.default") == "m"
    assert config.get("model.provider") == "p"
    assert config.get("model.base_url") == "http://localhost:8000/v1"
    assert config.get("model.api_mode") == API_MODES[0]
    assert config.get("agent.max_turns") == 7
    assert config.get("toolsets") == ["web", "file", "terminal"]
    assert config.get("disabled_toolsets") == ["browser"]
    assert config.get("context.engine") == "lcm"
    assert config.get("terminal.backend") == "docker"
    assert config.get("store.url") == "postgresql://db/hermes"
    assert {config.sources[key] for key in ENV_VARS.values()} == {f"env:{var}" for var in ENV_VARS}


def test_empty_env_var_is_not_set(tmp_path: Path) -> None:
    config = load_config(tmp_path, {"HERMES_MAX_TURNS": ""})
    assert config.sources["agent.max_turns"] == "default"


@pytest.mark.parametrize(
    ("var", "value", "expected"),
    [
        ("HERMES_MAX_TURNS", "abc", "expected an integer, got 'abc'"),
        ("HERMES_MAX_TURNS", "0", "expected an integer >= 1, got 0"),
        ("HERMES_API_MODE", "bogus", "expected one of"),
    ],
)
def test_bad_env_var(tmp_path: Path, var: str, value: str, expected: str) -> None:
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, {var: value})
    message = str(info.value)
    assert message.startswith(f"environment variable {var} ")
    assert expected in message


def test_overrides_convert_strings_and_validate(tmp_path: Path) -> None:
    config = load_config(
        tmp_path,
        {},
        overrides={"agent.max_turns": "12", "toolsets": ("a", "b"), "my_plugin.flag": "on"},
    )
    assert config.get("agent.max_turns") == 12
    assert config.get("toolsets") == ["a", "b"]
    assert config.get("my_plugin.flag") == "on"  # unknown keys are passed through untouched
    assert config.sources["my_plugin.flag"] == "cli"
    with pytest.raises(ConfigError, match=r"^command line: agent\.max_turns: expected an integer"):
        load_config(tmp_path, {}, overrides={"agent.max_turns": "many"})


def test_override_replaces_mapping_and_sources(tmp_path: Path) -> None:
    write(tmp_path, "extra:\n  a: 1\n  b: 2\n")
    config = load_config(tmp_path, {}, overrides={"extra": 5})
    assert config.get("extra") == 5
    assert config.sources["extra"] == "cli"
    assert "extra.a" not in config.sources


def test_file_data_given_instead_of_file(tmp_path: Path) -> None:
    write(tmp_path, "agent:\n  max_turns: 5\n")
    given = {"agent": {"max_turns": 6}, "extra": [1]}
    config = load_config(tmp_path, {}, {"agent.stream": True}, file_data=given)
    assert config.file_data == given
    assert config.file_data is not given
    assert config.get("agent.max_turns") == 6
    assert config.sources["agent.max_turns"] == "file"
    assert config.get("agent.stream") is True
    with pytest.raises(ConfigError, match=r"^agent\.max_turns: expected an integer"):
        load_config(tmp_path, {}, file_data={"agent": {"max_turns": "x"}})


def test_get_and_section(tmp_path: Path) -> None:
    write(tmp_path, "terminal:\n  backend: ssh\n  ssh_host: box\n")
    config = load_config(tmp_path, {}).with_schema(INSTALLED)
    assert config.get("terminal.ssh_host") == "box"
    assert config.get("terminal.missing", 1) == 1
    assert config.get("terminal.backend.deeper", "d") == "d"
    assert config.get("nope") is None
    section = config.section("terminal")
    assert section == {"backend": "ssh", "timeout": 180, "ssh_host": "box"}
    section["backend"] = "changed"
    assert config.get("terminal.backend") == "ssh"
    assert config.section("absent") == {}


HERMES_STYLE = """\
# Hermes Agent CLI configuration
model:
  default: "anthropic/claude-opus-4.6"
  provider: "auto"
  base_url: "https://openrouter.ai/api/v1"

terminal:
  backend: "local"
  cwd: "."
  timeout: 180
  lifetime_seconds: 300
  # docker_image: "python:3.11"

browser:
  inactivity_timeout: 120

compression:
  enabled: true
  threshold: 0.85
  summary_model: "google/gemini-3-flash-preview"

memory:
  memory_enabled: true
  memory_char_limit: 2200

session_reset:
  mode: both
  idle_minutes: 1440

agent:
  max_turns: 60
  verbose: false
  reasoning_effort: "xhigh"
  personalities:
    helpful: "You are a helpful assistant."

platform_toolsets:
  cli: [hermes-cli]
  telegram: [hermes-telegram]

display:
  compact: false
"""


def test_existing_hermes_file_with_unknown_keys(tmp_path: Path) -> None:
    write(tmp_path, HERMES_STYLE)
    config = load_config(tmp_path, {}).with_schema(INSTALLED)
    assert config.file_data == yaml.safe_load(HERMES_STYLE)
    assert config.get("model.default") == "anthropic/claude-opus-4.6"
    assert config.get("compression.threshold") == 0.85
    assert config.get("compression.protect_last_n") == 20
    assert config.get("agent.max_turns") == 60
    assert config.get("agent.personalities.helpful") == "You are a helpful assistant."
    assert config.get("platform_toolsets.cli") == ["hermes-cli"]
    assert config.sources["session_reset.mode"] == "file"
    assert config.sources["memory.memory_char_limit"] == "file"


def test_model_string_shorthand(tmp_path: Path) -> None:
    write(tmp_path, "model: anthropic/claude-sonnet-4\n")
    config = load_config(tmp_path, {})
    assert config.file_data == {"model": "anthropic/claude-sonnet-4"}
    assert config.get("model.default") == "anthropic/claude-sonnet-4"
    assert config.sources["model.default"] == "file"


def test_empty_sections_keep_defaults(tmp_path: Path) -> None:
    write(tmp_path, "agent:\n  # max_turns: 10\ncompression:\n")
    config = load_config(tmp_path, {}).with_schema(INSTALLED)
    assert config.get("agent.max_turns") == 90
    assert config.get("compression.enabled") is True


def test_empty_file(tmp_path: Path) -> None:
    write(tmp_path, "# nothing yet\n")
    assert load_config(tmp_path, {}).file_data == {}


# --- errors from the file ----------------------------------------------------


def test_bad_yaml_has_line(tmp_path: Path) -> None:
    path = write(tmp_path, "agent:\n  max_turns: 3\n  bad: [unclosed\nother: 1\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, {})
    message = str(info.value)
    assert message.startswith(f"{path}:")
    assert ": invalid YAML: " in message
    line = int(message[len(str(path)) + 1 :].split(":", 1)[0])
    assert 3 <= line <= 4
    assert "\n" not in message


def test_bad_yaml_tab_indent(tmp_path: Path) -> None:
    path = write(tmp_path, "agent:\n\tmax_turns: 3\n")
    with pytest.raises(ConfigError, match=rf"^{path}:2: invalid YAML: "):
        load_config(tmp_path, {})


@pytest.mark.parametrize(
    ("text", "line", "problem"),
    [
        ("a: 1\n---\nb: 2\n", 2, "expected a single document"),
        ("a: &x {b: *x}\n", 1, "a mapping contains itself"),
        ("x: !!python/object:os.system {}\n", 1, "could not determine a constructor"),
    ],
)
def test_other_yaml_problems(tmp_path: Path, text: str, line: int, problem: str) -> None:
    path = write(tmp_path, text)
    with pytest.raises(ConfigError, match=rf"^{path}:{line}: invalid YAML: {problem}"):
        load_config(tmp_path, {})


def test_top_level_must_be_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "- a\n- b\n")
    with pytest.raises(ConfigError, match=rf"^{path}:1: expected a mapping .* got a list$"):
        load_config(tmp_path, {})


def test_wrong_type_has_line(tmp_path: Path) -> None:
    path = write(tmp_path, "model:\n  default: x\n\nagent:\n  platform: cli\n  max_turns: ten\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, {})
    assert str(info.value) == f"{path}:6: agent.max_turns: expected an integer, got 'ten'"


def test_enum_error_has_line(tmp_path: Path) -> None:
    path = write(tmp_path, "approvals:\n  mode: auto\n")
    with pytest.raises(ConfigError) as info:
        load_config(tmp_path, {})
    assert str(info.value) == (
        f"{path}:2: approvals.mode: expected one of 'manual', 'deny', 'yolo', 'smart', 'off', "
        "got 'auto'"
    )


def test_first_problem_in_file_order(tmp_path: Path) -> None:
    path = write(tmp_path, "tools:\n  max_result_chars: 5\nagent:\n  max_turns: 0\n")
    with pytest.raises(ConfigError, match=rf"^{path}:2: tools\.max_result_chars: .*>= 100, got 5"):
        load_config(tmp_path, {})


def test_section_must_be_mapping(tmp_path: Path) -> None:
    path = write(tmp_path, "x: 1\nagent: fast\n")
    with pytest.raises(ConfigError, match=rf"^{path}:2: agent: expected a mapping, got 'fast'$"):
        load_config(tmp_path, {})


# --- validate ---------------------------------------------------------------


@pytest.mark.parametrize(
    ("data", "message"),
    [
        ({"agent": {"max_turns": True}}, "agent.max_turns: expected an integer, got true"),
        ({"agent": {"max_turns": 2.5}}, "agent.max_turns: expected an integer, got 2.5"),
        ({"agent": {"max_turns": 0}}, "agent.max_turns: expected an integer >= 1, got 0"),
        ({"agent": {"stream": "yes"}}, "agent.stream: expected true or false, got 'yes'"),
        ({"agent": {"platform": None}}, "agent.platform: expected a string, got null"),
        ({"toolsets": "a,b"}, "toolsets: expected a list of strings, got 'a,b'"),
        ({"disabled_toolsets": ["a", 1]}, "disabled_toolsets: expected a list of strings, got 1"),
        ({"plugins": {"disabled": {}}}, "plugins.disabled: expected a list of strings, got a"),
        ({"compression": {"threshold": 0}}, "compression.threshold: expected a number > 0 and"),
        (
            {"compression": {"threshold": 1.5}},
            "compression.threshold: expected a number > 0 and <= 1, got 1.5",
        ),
        ({"compression": {"threshold": float("nan")}}, "compression.threshold: expected"),
        ({"compression": {"enabled": 1}}, "compression.enabled: expected true or false, got 1"),
        (
            {"compression": {"protect_first_n": -1}},
            "compression.protect_first_n: expected an integer >= 0, got -1",
        ),
        ({"context": {"engine": 3}}, "context.engine: expected a string or null, got 3"),
        ({"model": {"api_mode": "responses"}}, "model.api_mode: expected one of"),
        ({"model": {"context_length": 0}}, "model.context_length: expected an integer >= 1"),
        ({"model": 5}, "model: expected a mapping or a string, got 5"),
        ({"terminal": {"timeout": "3"}}, "terminal.timeout: expected an integer, got '3'"),
        ({"terminal": {"lifetime_seconds": -5}}, "terminal.lifetime_seconds: expected an integer"),
        ({"delegation": {"max_iterations": 0}}, "delegation.max_iterations: expected an integer"),
        ({"agent": {"tool_max_invalid": 0}}, "agent.tool_max_invalid: expected an integer >= 1"),
    ],
)
def test_validate_rejects(data: dict, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        validate(data, schema=INSTALLED)
    assert str(info.value).startswith(message)
    assert isinstance(info.value, HermesError)


def test_validate_accepts() -> None:
    validate(DEFAULTS)
    validate(
        {
            "model": {"api_mode": API_MODES[-1], "context_length": 200_000, "api_key": "k"},
            "toolsets": ["all"],
            "compression": {"threshold": 1, "protect_first_n": 0},
            "context": {"engine": None},
            "terminal": {"backend": "modal", "modal_image": "img", "lifetime_seconds": 0},
            "approvals": {"mode": "yolo"},
            "plugins": {"disabled": ["a"], "anything": 1},
            "agent": {"stream": True, "other": [1]},
            "unknown_section": {"x": 1},
            "model_extra": "ok",
        }
    )


def test_validate_message_prefixes(tmp_path: Path) -> None:
    bad = {"agent": {"max_turns": "x"}}
    with pytest.raises(ConfigError, match=rf"^{tmp_path}: agent"):
        validate(bad, tmp_path)
    with pytest.raises(ConfigError, match=rf"^{tmp_path}:9: agent"):
        validate(bad, tmp_path, {"agent.max_turns": 9})


# --- set_value / unset_value / save_config ----------------------------------------


@pytest.mark.parametrize(
    ("dotted", "raw", "expected"),
    [
        ("agent.max_turns", "40", 40),
        ("agent.stream", "true", True),
        ("toolsets", "[web, file]", ["web", "file"]),
        ("compression.threshold", "0.7", 0.7),
        ("model.default", "anthropic/claude-opus-4.6", "anthropic/claude-opus-4.6"),
        ("context.engine", "null", None),
        ("my_plugin.deep.key", "hello world", "hello world"),
    ],
)
def test_set_value_parses(tmp_path: Path, dotted: str, raw: str, expected: object) -> None:
    path = tmp_path / "new" / "dir" / "config.yaml"
    assert set_value(path, dotted, raw) == expected
    config = load_config(path.parent, {})
    assert config.get(dotted, "missing") == expected
    assert config.sources[dotted] == "file"


def test_set_value_keeps_other_keys_and_order(tmp_path: Path) -> None:
    path = write(tmp_path, HERMES_STYLE)
    set_value(path, "agent.max_turns", "40")
    data = yaml.safe_load(path.read_text())
    assert list(data) == list(yaml.safe_load(HERMES_STYLE))
    assert data["agent"]["max_turns"] == 40
    assert data["agent"]["personalities"] == {"helpful": "You are a helpful assistant."}
    assert not [p for p in tmp_path.iterdir() if p.name != "config.yaml"]  # no temp file left


def test_set_value_refuses_invalid_and_leaves_file(tmp_path: Path) -> None:
    path = write(tmp_path, "agent:\n  max_turns: 5\n")
    before = path.read_bytes()
    with pytest.raises(ConfigError, match=r"agent\.max_turns: expected an integer, got 'ten'"):
        set_value(path, "agent.max_turns", "ten")
    with pytest.raises(ConfigError, match="toolsets: expected a list of strings"):
        set_value(path, "toolsets", "web,file")
    with pytest.raises(ConfigError, match="cannot parse"):
        set_value(path, "toolsets", "[web, file")
    with pytest.raises(ConfigError, match="invalid key"):
        set_value(path, "agent..x", "1")
    with pytest.raises(ConfigError, match="agent.max_turns holds 5"):
        set_value(path, "agent.max_turns.x", "1")
    assert path.read_bytes() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["config.yaml"]


def test_set_value_refuses_when_file_is_broken(tmp_path: Path) -> None:
    path = write(tmp_path, "agent: [\n")
    with pytest.raises(ConfigError, match="invalid YAML"):
        set_value(path, "agent.max_turns", "3")
    assert path.read_text() == "agent: [\n"


def test_set_value_over_model_shorthand(tmp_path: Path) -> None:
    path = write(tmp_path, "model: gpt-4o\n")
    set_value(path, "model.provider", "openai")
    expected = {"model": {"default": "gpt-4o", "provider": "openai"}}
    assert yaml.safe_load(path.read_text()) == expected


def test_set_value_keeps_file_mode(tmp_path: Path) -> None:
    path = write(tmp_path, "a: 1\n")
    os.chmod(path, 0o640)
    set_value(path, "b", "2")
    assert path.stat().st_mode & 0o777 == 0o640


def test_set_value_through_symlink(tmp_path: Path) -> None:
    real = write(tmp_path / "dotfiles", "a: 1\n")
    home = tmp_path / "home"
    home.mkdir()
    (home / "config.yaml").symlink_to(real)
    set_value(home / "config.yaml", "b", "2")
    assert (home / "config.yaml").is_symlink()
    assert yaml.safe_load(real.read_text()) == {"a": 1, "b": 2}


def test_unset_value(tmp_path: Path) -> None:
    path = write(tmp_path, "agent:\n  max_turns: 5\nterminal:\n  backend: ssh\n  cwd: /x\n")
    assert unset_value(path, "agent.max_turns") is True
    assert unset_value(path, "terminal.cwd") is True
    assert yaml.safe_load(path.read_text()) == {"terminal": {"backend": "ssh"}}
    before = path.read_bytes()
    assert unset_value(path, "agent.max_turns") is False
    assert unset_value(path, "terminal.backend.deeper") is False
    assert unset_value(path, "nothing") is False
    assert path.read_bytes() == before
    assert unset_value(tmp_path / "absent.yaml", "a") is False
    assert not (tmp_path / "absent.yaml").exists()


def test_unset_repairs_invalid_value(tmp_path: Path) -> None:
    path = write(tmp_path, "agent:\n  max_turns: ten\n  platform: cli\n")
    with pytest.raises(ConfigError):
        load_config(tmp_path, {})
    assert unset_value(path, "agent.max_turns") is True
    assert load_config(tmp_path, {}).get("agent.max_turns") == 90


def test_save_config_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "a" / "config.yaml"
    data = {"zeta": 1, "alpha": {"list": ["x", "y"], "text": "héllo"}}
    save_config(path, data)
    assert list(yaml.safe_load(path.read_text(encoding="utf-8"))) == ["zeta", "alpha"]
    assert yaml.safe_load(path.read_text(encoding="utf-8")) == data
    assert path.stat().st_mode & 0o077 == 0  # may hold an API key: owner only by default


# --- start-up cost -------------------------------------------------------------


def test_import_does_not_import_yaml() -> None:
    code = "import sys, hermes_core.config.loading; print('yaml' in sys.modules)"
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(ROOT / "hookspecs")])
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True
    )
    assert result.stdout.strip() == "False"
