"""The ``hermes`` command line, in-process.

Every test runs against an empty, isolated ``HERMES_HOME`` with ``HERMES_PLUGINS`` set to nothing,
so no installed entry point loads unless a test asks for it; the plugins a test needs are given
in-process or through a real entry point of a throwaway dist made on ``sys.path``.

Two drivers:

- ``hermes(...)`` runs :func:`hermes_core.cli.main` (the console script's function) and captures
  its output, so one-line errors and exit codes are the real ones; in-process plugins are passed
  to it by wrapping ``build_cli``.
- the kit's ``hermes_cli`` fixture (click's ``CliRunner``), for the happy paths of ``hermes chat``.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import click
import pytest
import yaml

from hermes_core import __version__
from hermes_core.cli import app
from hermes_core.loop.agent import RESULT_KEYS
from hermes_core.plugins.manager import reset_entry_point_cache
from hermes_core.testing import ScriptedModel, text, tool_call
from hermes_core.testing import toolset_plugin as kit_toolset_plugin
from hermes_core.testing.kit import scripted_provider_plugin
from hermes_hookspecs import AuthenticationError, ProviderError, Tool, hookimpl

BUILTIN_COMMANDS = ("chat", "config", "doctor", "plugins", "providers", "tools", "version")
OBJ = {"type": "object", "properties": {}}
REAL_BUILD_CLI = app.build_cli


# --- plugins used by the tests ------------------------------------------------------------------


def roll(args: dict[str, Any], ctx: Any) -> str:
    return "4"


def toolset_plugin(name: str = "dice", *tools: Tool, enabled: bool = True) -> object:
    """An in-process plugin registering one toolset (a die roller unless ``tools`` are given)."""
    tools = tools or (Tool(name="roll", description="Roll a die", parameters=OBJ, handler=roll),)
    return kit_toolset_plugin(*tools, name=name, description=f"{name} tools", enabled=enabled)


class RaisingHookPlugin:
    """Loads fine; its registration hook raises."""

    @hookimpl
    def hermes_register_toolsets(self, register: Any) -> None:
        raise RuntimeError("the toolset exploded")


class MisspelledHookPlugin:
    """Fails to load: ``hermes_register_toolset`` is not a hook."""

    @hookimpl
    def hermes_register_toolset(self, register: Any) -> None:  # the typo is the point
        raise AssertionError("never called")


def command_plugin(name: str, output: str) -> object:
    """An in-process plugin adding the command ``name`` that prints ``output``."""

    class CommandPlugin:
        @hookimpl
        def hermes_register_commands(self, cli: click.Group) -> None:
            @cli.command(name, help=f"{output} (plugin command)")
            @click.option("--times", type=int, default=1)
            def command(times: int) -> None:
                for _ in range(times):
                    click.echo(output)

    return CommandPlugin()


# --- drivers --------------------------------------------------------------------------------------


@dataclass
class Run:
    code: int
    out: str
    err: str

    @property
    def lines(self) -> list[str]:
        return self.out.splitlines()


@pytest.fixture(autouse=True)
def no_installed_plugins(hermes_home: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An isolated home, and no installed entry point loads unless a test selects it."""
    monkeypatch.setenv("HERMES_PLUGINS", "")
    for name in ("DICE_API_KEY", "OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        monkeypatch.delenv(name, raising=False)
    return hermes_home


@pytest.fixture
def hermes(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Callable[..., Run]:
    """``hermes(*argv, plugins=[(name, obj)], stdin="")`` runs ``hermes_core.cli.main``."""

    def run(*argv: str, plugins: Sequence[tuple[str, object]] = (), stdin: str = "") -> Run:
        def build_cli(
            argv: Sequence[str] | None = None, extra_plugins: Sequence[tuple[str, object]] = ()
        ) -> click.Group:
            return REAL_BUILD_CLI(argv, extra_plugins=[*extra_plugins, *plugins])

        monkeypatch.setattr(app, "build_cli", build_cli)
        monkeypatch.setattr(sys, "stdin", io.StringIO(stdin))
        capsys.readouterr()
        code = app.main(list(argv))
        out, err = capsys.readouterr()
        return Run(code, out, err)

    return run


@pytest.fixture
def entry_point_plugin(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> Iterator[Callable[..., None]]:
    """``entry_point_plugin(ep_name, module, source, dist=..., version=...)`` makes a plugin
    visible through a real ``hermes`` entry point: a module and its dist-info on ``sys.path``."""
    site = tmp_path / "site"
    site.mkdir()
    monkeypatch.syspath_prepend(str(site))
    modules: list[str] = []

    def install(
        ep_name: str,
        module: str,
        source: str,
        *,
        dist: str = "hermes-test-plugin",
        version: str = "1.2.3",
    ) -> None:
        (site / f"{module}.py").write_text(textwrap.dedent(source), encoding="utf-8")
        info = site / f"{dist.replace('-', '_')}-{version}.dist-info"
        info.mkdir()
        (info / "METADATA").write_text(
            f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n", encoding="utf-8"
        )
        (info / "entry_points.txt").write_text(
            f"[hermes]\n{ep_name} = {module}\n", encoding="utf-8"
        )
        modules.append(module)
        reset_entry_point_cache()

    yield install
    for module in modules:
        sys.modules.pop(module, None)
    reset_entry_point_cache()  # the next scan runs after sys.path is restored


GOOD_EP_SOURCE = """
    from hermes_hookspecs import Tool, Toolset, hookimpl

    @hookimpl
    def hermes_register_toolsets(register):
        register(Toolset(name="coins", description="Coin tools", tools=[
            Tool(name="flip_coin", description="Flip a coin",
                 parameters={"type": "object", "properties": {}},
                 handler=lambda args, ctx: "heads")]))
"""


def assert_one_line_error(run: Run, *needles: str, code: int = 1) -> str:
    """The run failed with exit ``code`` and exactly one line on stderr containing ``needles``."""
    assert run.code == code, (run.code, run.out, run.err)
    assert "Traceback" not in run.err and "Traceback" not in run.out
    lines = run.err.strip().splitlines()
    assert len(lines) == 1, run.err
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def config_file(home: Path) -> dict[str, Any]:
    return yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8")) or {}


# --- help and version -----------------------------------------------------------------------------


def test_help_lists_the_builtin_commands(hermes: Callable[..., Run]) -> None:
    run = hermes("--help")
    assert run.code == 0
    assert run.out.startswith("Usage: hermes")
    commands = run.out.split("Commands:", 1)[1]
    for name in BUILTIN_COMMANDS:
        assert f"\n  {name} " in commands
    for option in ("--profile", "--plugins", "--strict-plugins", "--debug"):
        assert option in run.out


def test_help_of_a_command(hermes: Callable[..., Run]) -> None:
    run = hermes("chat", "--help")
    assert run.code == 0
    for option in (
        "--query",
        "--json",
        "--model",
        "--provider",
        "--base-url",
        "--api-mode",
        "--toolsets",
        "--max-turns",
        "--yolo",
    ):
        assert option in run.out


def test_version(hermes: Callable[..., Run]) -> None:
    run = hermes("version")
    assert run.code == 0
    assert run.out.startswith(f"hermes {__version__} (hermes-hookspecs ")
    assert "Python" in run.out
    assert hermes("--version").out.strip() == f"hermes, version {__version__}"


def test_unknown_command_is_a_usage_error(hermes: Callable[..., Run]) -> None:
    run = hermes("frobnicate")
    assert run.code == 2
    assert "No such command 'frobnicate'" in run.err
    assert "Traceback" not in run.err


# --- plugins list ---------------------------------------------------------------------------------


def test_plugins_list_shows_name_version_dist_hooks_status(
    hermes: Callable[..., Run],
    entry_point_plugin: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entry_point_plugin(
        "coins", "hermes_test_coins", GOOD_EP_SOURCE, dist="hermes-test-coins", version="2.5.0"
    )
    monkeypatch.setenv("HERMES_PLUGINS", "coins")
    run = hermes("plugins", "list", plugins=[("dice", toolset_plugin())])
    assert run.code == 0, run.err
    assert run.lines[0].split() == ["NAME", "VERSION", "DIST", "STATUS", "HOOKS"]
    rows = {line.split()[0]: line.split() for line in run.lines[1:]}
    assert rows["coins"] == ["coins", "2.5.0", "hermes-test-coins", "loaded", "register_toolsets"]
    assert rows["dice"] == ["dice", "-", "in-process", "loaded", "register_toolsets"]
    assert rows["core_layers"][3] == "loaded"
    assert "error:" not in run.out

    records = {
        r["name"]: r
        for r in json.loads(
            hermes("plugins", "list", "--json", plugins=[("dice", toolset_plugin())]).out
        )
    }
    coins = records["coins"]
    assert {"name", "version", "dist", "hooks", "status", "error"} <= set(coins)
    assert (coins["version"], coins["dist"], coins["status"], coins["error"]) == (
        "2.5.0",
        "hermes-test-coins",
        "loaded",
        None,
    )
    assert coins["hooks"] == ["hermes_register_toolsets"]
    assert records["dice"]["dist"] is None and records["dice"]["source"] == "in-process"


def test_plugins_not_selected_by_hermes_plugins_are_listed_as_skipped(
    hermes: Callable[..., Run], entry_point_plugin: Callable[..., None]
) -> None:
    entry_point_plugin("coins", "hermes_test_coins", GOOD_EP_SOURCE)
    records = {r["name"]: r for r in json.loads(hermes("plugins", "list", "--json").out)}
    assert records["coins"]["status"] == "skipped"
    assert records["coins"]["hooks"] == []
    assert "hermes_test_coins" not in sys.modules
    # --plugins selects it for one invocation.
    records = {
        r["name"]: r
        for r in json.loads(hermes("--plugins", "coins", "plugins", "list", "--json").out)
    }
    assert records["coins"]["status"] == "loaded"


# --- broken plugins -------------------------------------------------------------------------------


def test_a_plugin_whose_hook_raises_is_reported_and_the_rest_keeps_working(
    hermes: Callable[..., Run],
) -> None:
    plugins = [("dice", toolset_plugin()), ("broken", RaisingHookPlugin())]
    run = hermes("plugins", "list", plugins=plugins)
    assert run.code == 0, run.err
    rows = {line.split()[0]: line for line in run.lines[1:] if not line.startswith("error:")}
    assert "hook errors" in rows["broken"]
    assert "loaded" in rows["dice"]
    assert (
        "error: broken: hermes_register_toolsets: RuntimeError: the toolset exploded" in run.lines
    )

    record = {
        r["name"]: r for r in json.loads(hermes("plugins", "list", "--json", plugins=plugins).out)
    }["broken"]
    assert record["hook_errors"] == ["hermes_register_toolsets: RuntimeError: the toolset exploded"]

    tools = hermes("tools", "list", "--json", plugins=plugins)
    assert tools.code == 0, tools.err
    assert [t["tool"] for t in json.loads(tools.out)] == ["roll"]
    assert hermes("config", "path", plugins=plugins).code == 0
    assert hermes("version", plugins=plugins).code == 0


def test_a_plugin_with_a_misspelled_hook_is_reported_and_the_rest_keeps_working(
    hermes: Callable[..., Run],
) -> None:
    plugins = [("dice", toolset_plugin()), ("typo", MisspelledHookPlugin())]
    run = hermes("plugins", "list", plugins=plugins)
    assert run.code == 0, run.err
    rows = {
        line.split()[0]: line.split() for line in run.lines[1:] if not line.startswith("error:")
    }
    assert rows["typo"][3] == "error"
    assert (
        "error: typo: HermesError: unknown hook hermes_register_toolset "
        "(did you mean hermes_register_toolsets?)"
    ) in run.lines

    tools = hermes("tools", "list", plugins=plugins)
    assert tools.code == 0, tools.err
    assert "roll" in tools.out


def test_a_plugin_that_fails_to_import_is_reported_and_can_be_disabled(
    hermes: Callable[..., Run],
    entry_point_plugin: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
    hermes_home: Path,
) -> None:
    entry_point_plugin(
        "shaky",
        "hermes_test_shaky",
        "import a_module_that_is_not_there\n",
        dist="hermes-test-shaky",
    )
    entry_point_plugin("coins", "hermes_test_coins", GOOD_EP_SOURCE, dist="hermes-test-coins")
    monkeypatch.delenv("HERMES_PLUGINS")  # every installed entry point loads

    records = {r["name"]: r for r in json.loads(hermes("plugins", "list", "--json").out)}
    assert records["shaky"]["status"] == "error"
    assert records["shaky"]["error"] == (
        "ModuleNotFoundError: No module named 'a_module_that_is_not_there'"
    )
    assert records["coins"]["status"] == "loaded"
    tools = json.loads(hermes("tools", "list", "--json").out)
    assert {"tool": "flip_coin", "plugin": "coins"}.items() <= next(
        t for t in tools if t["tool"] == "flip_coin"
    ).items()

    # Disabling the broken plugin works while it is broken, and silences it.
    assert hermes("config", "set", "plugins.disabled", "[shaky]").code == 0
    records = {r["name"]: r for r in json.loads(hermes("plugins", "list", "--json").out)}
    assert records["shaky"]["status"] == "disabled"
    assert records["shaky"]["error"] is None


def test_strict_plugins_turns_a_load_error_into_a_one_line_failure(
    hermes: Callable[..., Run],
) -> None:
    plugins = [("dice", toolset_plugin()), ("typo", MisspelledHookPlugin())]
    assert hermes("tools", "list", plugins=plugins).code == 0
    run = hermes("--strict-plugins", "tools", "list", plugins=plugins)
    line = assert_one_line_error(run, "typo", "unknown hook hermes_register_toolset")
    assert line.startswith("hermes: error: ")
    assert run.out == ""


def test_strict_plugins_with_an_import_error_through_an_entry_point(
    hermes: Callable[..., Run],
    entry_point_plugin: Callable[..., None],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    entry_point_plugin("shaky", "hermes_test_shaky", "raise ImportError('needs libfoo')\n")
    monkeypatch.setenv("HERMES_PLUGINS", "shaky")
    assert hermes("plugins", "list").code == 0
    run = hermes("--strict-plugins", "plugins", "list")
    assert_one_line_error(run, "shaky", "ImportError: needs libfoo")


def test_strict_plugins_turns_a_hook_error_into_a_failure(hermes: Callable[..., Run]) -> None:
    """An exception inside a registration hook is one of the errors ``--strict-plugins`` is
    for (issue 2: "an import error or an exception inside a hook ... --strict-plugins turns such
    errors into a failure")."""
    plugins = [("dice", toolset_plugin()), ("broken", RaisingHookPlugin())]
    run = hermes("--strict-plugins", "tools", "list", plugins=plugins)
    assert_one_line_error(run, "broken", "the toolset exploded")


# --- tools ----------------------------------------------------------------------------------------


def dice_and_oracle() -> list[tuple[str, object]]:
    keyed = Tool(
        name="remote_roll",
        description="Roll on a server",
        parameters=OBJ,
        handler=roll,
        requires_env=["DICE_API_KEY"],
    )
    checked = Tool(
        name="loaded_roll",
        description="Roll a loaded die",
        parameters=OBJ,
        handler=roll,
        check=lambda: "no loaded dice in stock",
    )
    plain = Tool(name="roll", description="Roll a die", parameters=OBJ, handler=roll)
    oracle = Tool(name="ask_oracle", description="Ask", parameters=OBJ, handler=roll)
    return [
        ("dice-plugin", toolset_plugin("dice", plain, keyed, checked)),
        ("oracle-plugin", toolset_plugin("oracle", oracle, enabled=False)),
    ]


def test_tools_list_shows_toolset_tool_status_and_plugin(hermes: Callable[..., Run]) -> None:
    run = hermes("tools", "list", plugins=dice_and_oracle())
    assert run.code == 0, run.err
    assert run.lines[0].split() == ["TOOLSET", "TOOL", "STATUS", "PLUGIN"]
    rows = {line.split()[1]: line.split(None, 2) for line in run.lines[1:]}
    assert rows["roll"][0] == "dice"
    assert rows["roll"][2].split() == ["enabled", "dice-plugin"]
    assert "unavailable: missing environment variable DICE_API_KEY" in rows["remote_roll"][2]
    assert "unavailable: no loaded dice in stock" in rows["loaded_roll"][2]
    assert rows["ask_oracle"][0] == "oracle"
    assert rows["ask_oracle"][2].split() == ["disabled", "oracle-plugin"]


def test_tools_list_json(hermes: Callable[..., Run], monkeypatch: pytest.MonkeyPatch) -> None:
    tools = {
        t["tool"]: t
        for t in json.loads(hermes("tools", "list", "--json", plugins=dice_and_oracle()).out)
    }
    assert set(tools) == {"roll", "remote_roll", "loaded_roll", "ask_oracle"}
    assert tools["roll"] == {
        "tool": "roll",
        "toolset": "dice",
        "plugin": "dice-plugin",
        "available": True,
        "reason": None,
        "enabled": True,
    }
    assert tools["remote_roll"]["available"] is False
    assert tools["remote_roll"]["reason"] == "missing environment variable DICE_API_KEY"
    assert tools["ask_oracle"]["enabled"] is False

    monkeypatch.setenv("DICE_API_KEY", "secret")
    tools = {
        t["tool"]: t
        for t in json.loads(hermes("tools", "list", "--json", plugins=dice_and_oracle()).out)
    }
    assert tools["remote_roll"]["available"] is True
    assert tools["remote_roll"]["reason"] is None


def test_tools_list_with_no_tools(hermes: Callable[..., Run]) -> None:
    run = hermes("tools", "list")
    assert run.code == 0
    assert run.out.strip() == "no tools installed"
    assert json.loads(hermes("tools", "list", "--json").out) == []


def test_tools_disable_and_enable_edit_the_config(
    hermes: Callable[..., Run], hermes_home: Path
) -> None:
    plugins = dice_and_oracle()

    def enabled() -> dict[str, bool]:
        listed = json.loads(hermes("tools", "list", "--json", plugins=plugins).out)
        return {t["tool"]: t["enabled"] for t in listed}

    assert enabled()["roll"] is True
    run = hermes("tools", "disable", "dice", plugins=plugins)
    assert run.code == 0, run.err
    assert run.out.strip() == "disabled toolset dice"
    assert config_file(hermes_home)["disabled_toolsets"] == ["dice"]
    assert enabled()["roll"] is False
    assert "disabled" in next(
        line for line in hermes("tools", "list", plugins=plugins).lines if " roll " in f" {line} "
    )

    run = hermes("tools", "enable", "dice", plugins=plugins)
    assert run.code == 0, run.err
    assert run.out.strip() == "enabled toolset dice"
    assert "disabled_toolsets" not in config_file(hermes_home)
    assert enabled()["roll"] is True

    # A toolset outside the default bundle is added to `toolsets`, keeping the default bundle.
    assert enabled()["ask_oracle"] is False
    assert hermes("tools", "enable", "oracle", plugins=plugins).code == 0
    assert config_file(hermes_home)["toolsets"] == ["default", "oracle"]
    assert enabled() == {"roll": True, "remote_roll": True, "loaded_roll": True, "ask_oracle": True}
    # Idempotent.
    assert hermes("tools", "enable", "oracle", plugins=plugins).code == 0
    assert config_file(hermes_home)["toolsets"] == ["default", "oracle"]


def test_tools_enable_or_disable_an_unknown_toolset(
    hermes: Callable[..., Run], hermes_home: Path
) -> None:
    for verb in ("enable", "disable"):
        run = hermes("tools", verb, "nope", plugins=dice_and_oracle())
        assert_one_line_error(run, "unknown toolset or tool 'nope'", "dice", "oracle")
    assert not (hermes_home / "config.yaml").exists()


def test_tools_disable_and_enable_accept_one_tool_and_name_its_toolset(
    hermes: Callable[..., Run], hermes_home: Path
) -> None:
    from hermes_core.loop.agent import Agent
    from hermes_core.plugins.manager import PluginManager

    plugins = dice_and_oracle()

    def enabled() -> dict[str, bool]:
        listed = json.loads(hermes("tools", "list", "--json", plugins=plugins).out)
        return {t["tool"]: t["enabled"] for t in listed}

    run = hermes("tools", "disable", "roll", plugins=plugins)
    assert run.code == 0, run.err
    assert run.out.strip() == ("disabled tool roll (toolset dice; the rest of it stays enabled)")
    assert config_file(hermes_home)["disabled_tools"] == ["roll"]
    assert enabled()["roll"] is False and enabled()["loaded_roll"] is True
    agent = Agent.from_config(
        client=ScriptedModel(text("ok")),
        home=hermes_home,
        plugins=PluginManager(only=[], extra=plugins, environ={}),
    )
    assert "roll" not in agent.toolbox.names and not agent.toolbox.names
    agent.close()

    run = hermes("tools", "enable", "roll", plugins=plugins)
    assert run.out.strip() == "enabled tool roll (toolset dice)"
    assert "disabled_tools" not in config_file(hermes_home)
    assert enabled()["roll"] is True


# --- config ---------------------------------------------------------------------------------------


def test_config_path(hermes: Callable[..., Run], hermes_home: Path) -> None:
    run = hermes("config", "path")
    assert run.code == 0
    assert run.out.strip() == str(hermes_home / "config.yaml")


def test_config_set_get_show_unset(
    hermes: Callable[..., Run], hermes_home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_PLUGINS", "delegation")  # it declares delegation.*
    assert hermes("config", "get", "agent.max_turns").out.strip() == "90"

    run = hermes("config", "set", "agent.max_turns", "5")
    assert run.code == 0, run.err
    assert run.out.strip() == "agent.max_turns = 5"
    assert config_file(hermes_home) == {"agent": {"max_turns": 5}}
    assert hermes("config", "set", "toolsets", "[delegation, default]").code == 0
    assert hermes("config", "set", "model.default", "some-model").code == 0

    assert hermes("config", "get", "agent.max_turns").out.strip() == "5"
    assert hermes("config", "get", "model.default").out.strip() == "some-model"
    assert json.loads(hermes("config", "get", "toolsets").out) == ["delegation", "default"]
    assert json.loads(hermes("config", "get", "agent").out)["max_turns"] == 5

    shown = yaml.safe_load(hermes("config", "show").out)
    assert shown["agent"]["max_turns"] == 5
    assert shown["toolsets"] == ["delegation", "default"]
    assert shown["delegation"]["max_iterations"] == 50  # defaults are part of the effective view
    assert json.loads(hermes("config", "show", "--json").out) == shown

    run = hermes("config", "unset", "agent.max_turns")
    assert run.code == 0, run.err
    assert run.out.strip() == "removed agent.max_turns"
    assert "agent" not in config_file(hermes_home)
    assert hermes("config", "get", "agent.max_turns").out.strip() == "90"


def test_config_show_sources(hermes: Callable[..., Run], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HERMES_PLUGINS", "delegation")  # it declares delegation.*
    hermes("config", "set", "agent.max_turns", "5")
    assert hermes("config", "set", "delegation.max_iterations", "7").code == 0
    monkeypatch.setenv("HERMES_MAX_TURNS", "12")
    run = hermes("config", "show", "--sources")
    assert run.code == 0, run.err
    assert "agent.max_turns = 12  (env:HERMES_MAX_TURNS)" in run.lines
    assert "delegation.max_iterations = 7  (file)" in run.lines
    assert 'terminal.backend = "local"  (default)' in run.lines
    sources = json.loads(hermes("config", "show", "--sources", "--json").out)
    assert sources["agent.max_turns"] == "env:HERMES_MAX_TURNS"
    assert sources["delegation.max_iterations"] == "file"
    assert sources["agent.tool_concurrency"] == "default"


def test_config_errors_are_one_line(hermes: Callable[..., Run], hermes_home: Path) -> None:
    assert_one_line_error(hermes("config", "get", "no.such.key"), "no.such.key is not set")
    assert_one_line_error(hermes("config", "unset", "agent.max_turns"), "agent.max_turns")
    assert_one_line_error(
        hermes("config", "set", "agent.max_turns", "lots"), "agent.max_turns", code=2
    )
    assert_one_line_error(
        hermes("config", "set", "agent.max_turns", "0"), "agent.max_turns", code=2
    )
    assert not (hermes_home / "config.yaml").exists()  # a rejected value leaves no file


# --- an invalid config.yaml -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("content", "line", "needle"),
    [
        ("agent:\n  max_turns: [1, 2\n", None, "invalid YAML"),
        ("model:\n  default: m\nagent:\n  max_turns: lots\n", 4, "agent.max_turns"),
        ("model:\n  api_mode: telepathy\n", 2, "model.api_mode"),
    ],
    ids=["bad-yaml", "wrong-type", "unknown-enum"],
)
def test_an_invalid_config_is_one_line_naming_file_and_line_with_exit_code_2(
    hermes: Callable[..., Run], hermes_home: Path, content: str, line: int | None, needle: str
) -> None:
    path = hermes_home / "config.yaml"
    path.write_text(content, encoding="utf-8")
    run = hermes("tools", "list", plugins=[("dice", toolset_plugin())])
    message = assert_one_line_error(run, str(path), needle, code=2)
    if line is not None:
        assert f"{path}:{line}:" in message
    else:
        assert f"{path}:" in message and message.split(f"{path}:", 1)[1][:1].isdigit()


def test_a_broken_config_can_still_be_located_and_repaired(
    hermes: Callable[..., Run], hermes_home: Path
) -> None:
    (hermes_home / "config.yaml").write_text("agent:\n  max_turns: lots\n", encoding="utf-8")
    assert hermes("config", "path").out.strip() == str(hermes_home / "config.yaml")
    assert hermes("--help").code == 0
    assert hermes("tools", "list").code == 2
    assert hermes("config", "unset", "agent.max_turns").code == 0
    assert hermes("tools", "list").code == 0


def _console(*argv: str, home: Path) -> subprocess.CompletedProcess[str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env.update(HERMES_HOME=str(home), HERMES_PLUGINS="")
    return subprocess.run(
        [sys.executable, "-c", "import sys, hermes_core.cli as c; sys.exit(c.main())", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_invalid_config_in_a_real_process_traceback_only_with_debug(hermes_home: Path) -> None:
    path = hermes_home / "config.yaml"
    path.write_text("agent:\n  max_turns: lots\n", encoding="utf-8")
    plain = _console("tools", "list", home=hermes_home)
    assert plain.returncode == 2
    lines = plain.stderr.strip().splitlines()
    assert len(lines) == 1, plain.stderr
    assert lines[0].startswith(f"hermes: error: {path}:2: agent.max_turns: ")
    assert "Traceback" not in plain.stderr and plain.stdout == ""

    debug = _console("--debug", "tools", "list", home=hermes_home)
    assert debug.returncode != 0
    assert "Traceback (most recent call last)" in debug.stderr
    assert "ConfigError" in debug.stderr


def test_debug_reraises_in_process(hermes: Callable[..., Run], hermes_home: Path) -> None:
    from hermes_core.config.loading import ConfigError

    (hermes_home / "config.yaml").write_text("agent: [\n", encoding="utf-8")
    with pytest.raises(ConfigError):
        hermes("--debug", "tools", "list")


# --- profiles -------------------------------------------------------------------------------------


def test_a_profile_is_a_separate_home(hermes: Callable[..., Run], hermes_home: Path) -> None:
    run = hermes("-p", "work", "config", "set", "agent.max_turns", "5")
    assert run.code == 0, run.err
    profile = hermes_home / "profiles" / "work"
    assert config_file(profile) == {"agent": {"max_turns": 5}}
    assert not (hermes_home / "config.yaml").exists()
    assert sorted(p.name for p in hermes_home.iterdir()) == ["profiles"]
    assert sorted(p.name for p in (hermes_home / "profiles").iterdir()) == ["work"]

    assert hermes("-p", "work", "config", "get", "agent.max_turns").out.strip() == "5"
    assert hermes("--profile=work", "config", "get", "agent.max_turns").out.strip() == "5"
    assert hermes("config", "get", "agent.max_turns").out.strip() == "90"
    assert hermes("-p", "work", "config", "path").out.strip() == str(profile / "config.yaml")
    assert hermes("-p", "home", "config", "get", "agent.max_turns").out.strip() == "90"


def test_an_invalid_profile_name_is_one_line(hermes: Callable[..., Run]) -> None:
    assert_one_line_error(
        hermes("-p", "../escape", "config", "path"), "invalid profile name", code=2
    )


# --- chat -----------------------------------------------------------------------------------------


def test_chat_query_prints_the_final_answer(hermes_cli: Callable[..., Any]) -> None:
    model = ScriptedModel(text("Hello from the script."))
    result = hermes_cli("chat", "-q", "hi there", "--provider", "scripted", model=model)
    assert result.exit_code == 0, result.output
    assert result.output == "Hello from the script.\n"
    request = model.last_request
    assert request.messages[-1] == {"role": "user", "content": "hi there"}


def test_chat_query_runs_tools(hermes: Callable[..., Run]) -> None:
    model = ScriptedModel(tool_call("roll", {}), text("You rolled a 4."))
    run = hermes(
        "chat",
        "-q",
        "roll a die",
        "--provider",
        "scripted",
        plugins=[
            ("scripted-provider", scripted_provider_plugin(model)),
            ("dice", toolset_plugin()),
        ],
    )
    assert run.code == 0, run.err
    assert run.out == "You rolled a 4.\n"
    first, second = model.requests
    assert first.tool_names == ["roll"]
    assert second.messages[-1]["role"] == "tool" and second.messages[-1]["content"] == "4"


def test_chat_flags_reach_the_agent(hermes: Callable[..., Run]) -> None:
    model = ScriptedModel(tool_call("roll", {}), text("summary of what I did"))
    oracle = Tool(name="ask_oracle", description="Ask", parameters=OBJ, handler=roll)
    run = hermes(
        "chat",
        "-q",
        "go",
        "--provider",
        "scripted",
        "--model",
        "tiny-1",
        "--max-turns",
        "1",
        "--toolsets",
        "oracle",
        "--json",
        plugins=[
            ("scripted-provider", scripted_provider_plugin(model)),
            ("dice", toolset_plugin()),
            ("oracle", toolset_plugin("oracle", oracle)),
        ],
    )
    assert run.code == 0, run.err
    result = json.loads(run.out)
    assert result["model"] == "tiny-1"
    assert result["exit_reason"] == "max_turns"
    assert result["final_response"] == "summary of what I did"
    first, last = model.requests
    assert first.model == "tiny-1"
    assert first.tool_names == ["ask_oracle"]  # --toolsets replaced the default bundle
    assert last.tools == []  # the budget is used up: the summary request offers no tools


def test_chat_json_prints_the_result_dict(hermes_cli: Callable[..., Any]) -> None:
    model = ScriptedModel(text("forty-two"))
    result = hermes_cli(
        "chat", "-q", "the answer?", "--provider", "scripted", "--json", model=model
    )
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    assert RESULT_KEYS <= set(data)
    assert data["final_response"] == "forty-two"
    assert data["completed"] is True and data["interrupted"] is False
    assert data["exit_reason"] == "completed" and data["error"] is None
    assert data["api_calls"] == 1
    assert data["provider"] == "scripted"
    assert [m["role"] for m in data["messages"] if m["role"] != "system"] == ["user", "assistant"]
    assert set(data["usage"]) >= {"input_tokens", "output_tokens"}


@pytest.mark.parametrize(
    "error",
    [ProviderError("upstream exploded"), AuthenticationError("key rejected")],
    ids=["provider-error", "auth-error"],
)
def test_a_provider_error_is_one_line_exit_1(hermes: Callable[..., Run], error: Exception) -> None:
    model = ScriptedModel(error)
    run = hermes(
        "chat",
        "-q",
        "hi",
        "--provider",
        "scripted",
        plugins=[("scripted-provider", scripted_provider_plugin(model))],
    )
    assert_one_line_error(run, str(error))
    assert run.out == ""


def test_a_provider_error_with_json_still_prints_the_result(hermes: Callable[..., Run]) -> None:
    model = ScriptedModel(ProviderError("upstream exploded"))
    run = hermes(
        "chat",
        "-q",
        "hi",
        "--provider",
        "scripted",
        "--json",
        plugins=[("scripted-provider", scripted_provider_plugin(model))],
    )
    assert run.code == 1
    data = json.loads(run.out)
    assert RESULT_KEYS <= set(data)
    assert data["exit_reason"] == "provider_error"
    assert "upstream exploded" in data["error"]
    assert data["completed"] is False


def test_no_provider_installed_is_one_clear_line(hermes: Callable[..., Run]) -> None:
    run = hermes("chat", "-q", "hi", plugins=[("dice", toolset_plugin())])
    assert_one_line_error(run, "no model provider is installed")


def test_an_unknown_provider_is_one_line(hermes: Callable[..., Run]) -> None:
    model = ScriptedModel(text("unused"))
    run = hermes(
        "chat",
        "-q",
        "hi",
        "--provider",
        "nope",
        plugins=[("scripted-provider", scripted_provider_plugin(model))],
    )
    assert_one_line_error(run, "unknown provider 'nope'", "scripted")
    assert model.requests == []


def test_chat_reads_the_question_from_stdin(hermes: Callable[..., Run]) -> None:
    model = ScriptedModel(text("piped answer"))
    run = hermes(
        "chat",
        "--provider",
        "scripted",
        stdin="what is piped?\n",
        plugins=[("scripted-provider", scripted_provider_plugin(model))],
    )
    assert run.code == 0, run.err
    assert run.out == "piped answer\n"
    assert model.last_request.messages[-1] == {"role": "user", "content": "what is piped?"}


def test_chat_with_empty_stdin_is_one_line(hermes: Callable[..., Run]) -> None:
    model = ScriptedModel(text("unused"))
    run = hermes(
        "chat",
        "--provider",
        "scripted",
        stdin="  \n",
        plugins=[("scripted-provider", scripted_provider_plugin(model))],
    )
    assert_one_line_error(run, "nothing to answer")
    assert model.requests == []


def test_chat_through_the_kit_fixture_with_stdin(hermes_cli: Callable[..., Any]) -> None:
    model = ScriptedModel(text("from stdin"))
    result = hermes_cli("chat", "--provider", "scripted", model=model, input="question\n")
    assert result.exit_code == 0, result.output
    assert result.output == "from stdin\n"


# --- doctor ---------------------------------------------------------------------------------------


def test_doctor_is_happy_with_a_working_setup(hermes: Callable[..., Run]) -> None:
    hermes("config", "set", "model.provider", "scripted")
    model = ScriptedModel(text("ok"))
    plugins = [("scripted-provider", scripted_provider_plugin(model)), ("dice", toolset_plugin())]
    run = hermes("doctor", plugins=plugins)
    assert run.code == 0, run.out
    assert "ERR" not in run.out
    assert run.lines[-1] == "no problems found"
    assert any(line.startswith("ok   home ") and "writable" in line for line in run.lines)
    assert any(
        line.startswith("ok   provider scripted") and "answered" in line for line in run.lines
    )
    [probe] = model.requests  # one request of one token
    assert probe.max_tokens == 1 and probe.tools == []
    offline = hermes("doctor", "--no-network", plugins=plugins)
    assert offline.code == 0 and len(model.requests) == 1


def test_doctor_reports_an_unreachable_provider_with_its_url(hermes: Callable[..., Run]) -> None:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    url = f"http://127.0.0.1:{port}/v1"
    for key, value in (
        ("model.provider", "custom"),
        ("model.base_url", url),
        ("model.default", "m"),
    ):
        hermes("config", "set", key, value)
    run = hermes("--plugins", "openai", "doctor")
    assert run.code == 1
    [line] = [line for line in run.lines if line.startswith("ERR")]
    assert line.startswith("ERR  provider custom at " + url) and url in line
    assert "Traceback" not in run.out + run.err


def test_doctor_reports_a_home_it_cannot_write(
    hermes: Callable[..., Run], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("HERMES_HOME", str(blocker / "home"))  # cannot be created, even by root
    run = hermes("doctor", "--no-network")
    assert run.code == 1
    assert any(line.startswith("ERR  home ") and "not writable" in line for line in run.lines)
    assert "Traceback" not in run.out + run.err


def test_doctor_reports_a_broken_plugin_and_exits_1(hermes: Callable[..., Run]) -> None:
    hermes("config", "set", "model.provider", "scripted")
    run = hermes(
        "doctor",
        plugins=[
            ("scripted-provider", scripted_provider_plugin(ScriptedModel(text("ok")))),
            ("dice", toolset_plugin()),
            ("broken", RaisingHookPlugin()),
            ("typo", MisspelledHookPlugin()),
        ],
    )
    assert run.code == 1
    errors = [line for line in run.lines if line.startswith("ERR")]
    assert any("plugin broken" in e and "the toolset exploded" in e for e in errors), run.out
    assert any("plugin typo" in e and "unknown hook" in e for e in errors), run.out
    assert "ok   plugin dice" in run.lines
    assert run.lines[-1] == "2 problem(s) found"
    assert "Traceback" not in run.out + run.err


def test_doctor_with_an_invalid_config_exits_1(
    hermes: Callable[..., Run], hermes_home: Path
) -> None:
    (hermes_home / "config.yaml").write_text("agent:\n  max_turns: lots\n", encoding="utf-8")
    run = hermes("doctor")
    assert run.code != 0
    assert any(line.startswith("ERR") and "agent.max_turns" in line for line in run.lines)
    assert "Traceback" not in run.out + run.err


def test_doctor_names_a_misspelt_key_as_a_problem_and_an_undeclared_section_as_a_note(
    hermes: Callable[..., Run], hermes_home: Path
) -> None:
    hermes("config", "set", "model.provider", "scripted")
    config = hermes_home / "config.yaml"
    config.write_text(
        config.read_text(encoding="utf-8") + "agnet:\n  max_turns: 3\nstations:\n  a: 1\n",
        encoding="utf-8",
    )
    plugins = [("scripted-provider", scripted_provider_plugin(ScriptedModel(text("ok"))))]
    run = hermes("doctor", "--no-network", plugins=plugins)
    assert run.code == 1
    [error] = [line for line in run.lines if line.startswith("ERR")]
    assert "unknown config key 'agnet' (did you mean 'agent'?)" in error
    assert any(line.startswith("--") and "'stations'" in line for line in run.lines)
    assert run.lines[-1] == "1 problem(s) found"
    assert "agnet" not in run.err  # one line each, not a warning as well


# --- plugin commands ------------------------------------------------------------------------------


def test_a_plugin_adds_a_command(hermes: Callable[..., Run]) -> None:
    plugins = [("dice-cli", command_plugin("dice", "rolling"))]
    help_text = hermes("--help", plugins=plugins).out
    assert "\n  dice " in help_text.split("Commands:", 1)[1]
    run = hermes("dice", "--times", "2", plugins=plugins)
    assert run.code == 0, run.err
    assert run.out == "rolling\nrolling\n"
    record = {
        r["name"]: r for r in json.loads(hermes("plugins", "list", "--json", plugins=plugins).out)
    }["dice-cli"]
    assert record["hooks"] == ["hermes_register_commands"]
    assert record["hook_errors"] == []


def test_a_plugin_cannot_replace_a_builtin_command(hermes: Callable[..., Run]) -> None:
    plugins = [("hijack", command_plugin("chat", "hijacked"))]
    run = hermes("chat", "--help", plugins=plugins)
    assert run.code == 0
    assert "hijacked" not in run.out
    assert "--query" in run.out  # still the builtin chat

    run = hermes("chat", plugins=plugins, stdin="")
    assert "hijacked" not in run.out
    assert_one_line_error(run, "nothing to answer")  # the builtin chat ran

    record = {
        r["name"]: r for r in json.loads(hermes("plugins", "list", "--json", plugins=plugins).out)
    }["hijack"]
    assert record["hook_errors"] == [
        "hermes_register_commands: HermesError: command 'chat' is already provided by hermes"
    ]
    doctor = hermes("doctor", plugins=plugins)
    assert any(line.startswith("ERR") and "hijack" in line for line in doctor.lines)


def test_two_plugins_cannot_add_the_same_command(hermes: Callable[..., Run]) -> None:
    plugins = [("first", command_plugin("dice", "one")), ("second", command_plugin("dice", "two"))]
    run = hermes("dice", plugins=plugins)
    assert run.code == 0, run.err
    winner = run.out.strip()
    assert winner in ("one", "two")
    loser = "second" if winner == "one" else "first"
    records = {
        r["name"]: r for r in json.loads(hermes("plugins", "list", "--json", plugins=plugins).out)
    }
    owner = "first" if loser == "second" else "second"
    assert records[loser]["hook_errors"] == [
        f"hermes_register_commands: HermesError: command 'dice' is already provided by {owner}"
    ]
    assert records[owner]["hook_errors"] == []


def test_a_plugin_whose_command_hook_raises_does_not_break_the_cli(
    hermes: Callable[..., Run],
) -> None:
    class Exploding:
        @hookimpl
        def hermes_register_commands(self, cli: click.Group) -> None:
            raise ValueError("no commands today")

    plugins = [("exploding", Exploding())]
    assert hermes("--help", plugins=plugins).code == 0
    assert hermes("version", plugins=plugins).code == 0
    record = {
        r["name"]: r for r in json.loads(hermes("plugins", "list", "--json", plugins=plugins).out)
    }["exploding"]
    assert record["hook_errors"] == ["hermes_register_commands: ValueError: no commands today"]


def test_lazy_builtin_commands_show_their_real_short_help():
    import importlib

    from hermes_core.cli.app import BUILTIN_COMMANDS

    for name, (module, attr, short_help) in BUILTIN_COMMANDS.items():
        command = getattr(importlib.import_module(f"hermes_core.cli.{module}"), attr)
        assert command.name == name
        assert command.get_short_help_str(limit=80) == short_help


def test_empty_plugins_value_with_equals_loads_no_plugin(hermes_home):
    from hermes_core.cli.app import _pre_parse

    assert _pre_parse(["--plugins=", "tools", "list"]) == {"plugins": ""}
    assert _pre_parse(["--plugins", "a,b", "tools"]) == {"plugins": "a,b"}
    assert _pre_parse(["-p", "work", "--debug", "chat"]) == {"profile": "work", "debug": True}


def test_unknown_configured_toolset_is_reported_by_tools_list(hermes_cli, hermes_home):
    (hermes_home / "config.yaml").write_text("toolsets: [nope]\n")
    result = hermes_cli("--plugins", "clarify", "tools", "list")
    assert result.exit_code == 0
    assert "warning: unknown toolset 'nope'" in result.stderr


def test_hermes_cli_fixture_reports_errors_like_the_command(hermes_cli):
    result = hermes_cli("--plugins", "clarify", "tools", "enable", "nope")
    assert result.exit_code == 1
    assert result.stderr.strip() == (
        "hermes: error: unknown toolset or tool 'nope' (toolsets: clarify)"
    )


TRACE_LINE = r"hermes: trace: (hermes_\w+) <- (\S+) \d+\.\d ms -> (.*)"


def trace_lines(stream: str) -> list[tuple[str, str, str]]:
    """``(hook, plugin, outcome)`` of every trace line in ``stream``."""
    import re

    return [m.groups() for m in re.finditer(f"^{TRACE_LINE}$", stream, flags=re.M)]


def test_trace_plugins_writes_one_stderr_line_per_hook_call(
    hermes: Callable[..., Run], monkeypatch: pytest.MonkeyPatch
) -> None:
    class Guard:
        @hookimpl
        def hermes_pre_tool_call(self, call: Any) -> Any:
            from hermes_hookspecs import Block

            return Block("no dice today")

        @hookimpl(specname="hermes_post_tool_call")
        def audit(self, call: Any, result: Any) -> None:
            raise RuntimeError("audit log full")

    model = ScriptedModel(tool_call("roll", {}), tool_call("roll", {}), text("No roll."))
    monkeypatch.setenv("HERMES_TRACE_PLUGINS", "1")
    run = hermes(
        "chat",
        "-q",
        "roll a die",
        "--provider",
        "scripted",
        plugins=[
            ("scripted-provider", scripted_provider_plugin(model)),
            ("dice", toolset_plugin()),
            ("acme-guard", Guard()),
        ],
    )
    assert run.code == 0, run.err
    assert run.out == "No roll.\n"  # stdout holds the answer only
    traced = trace_lines(run.err)
    calls = [(hook, plugin) for hook, plugin, _ in traced]
    assert ("hermes_register_toolsets", "dice") in calls
    assert ("hermes_register_providers", "scripted-provider") in calls
    assert ("hermes_prompt_layers", "core_layers") in calls
    guard = [outcome for hook, plugin, outcome in traced if plugin == "acme-guard"]
    assert guard == [
        "Block(reason='no dice today')",
        "raised RuntimeError: audit log full",
        "Block(reason='no dice today')",
        "raised RuntimeError: audit log full",
    ]
    assert all(len(outcome) <= 60 for _, _, outcome in traced)
    for line in run.err.splitlines():  # every trace line is whole: nothing else on it
        if "hermes: trace:" in line:
            assert trace_lines(line), line


def test_trace_plugins_through_the_test_kit_and_off_by_default(
    hermes_cli: Callable[..., Any],
) -> None:
    def chat(env: dict[str, str] | None) -> Any:
        model = ScriptedModel(tool_call("get_weather", {"city": "Paris"}), text("Sunny."))
        args = ("--plugins", "weather", "chat", "-q", "Paris?", "--provider", "scripted")
        return hermes_cli(*args, model=model, env=env)

    traced = chat({"HERMES_TRACE_PLUGINS": "1"})
    assert traced.exit_code == 0, traced.stderr
    assert traced.stdout == "Sunny.\n"
    assert ("hermes_register_toolsets", "weather", "None") in trace_lines(traced.stderr)
    for quiet in (chat(None), chat({"HERMES_TRACE_PLUGINS": "0"})):
        assert quiet.exit_code == 0 and quiet.stdout == "Sunny.\n"
        assert "trace:" not in quiet.stderr
