"""`hermes plugins enable/disable NAME` as Hermes agent users type them, and Hermes agent plugins
loaded the ways the Hermes agent loads them: a failure is one line in `plugins list` and
`doctor`, never a silent skip."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest
import yaml
from hermes_compat_agent_plugins.host import HermesPluginHost, reset_hosts

PACKAGES = {
    # `module:function`: the entry point names register itself
    "ep_function_pkg/__init__.py": """
        def setup_plugin(ctx):
            ctx.register_hook("post_llm_call", lambda **kw: None)
    """,
    # a module: its register(ctx)
    "ep_module_pkg/__init__.py": """
        def register(ctx):
            ctx.register_hook("on_session_start", lambda **kw: None)
    """,
    # `module:object`: an object with register(ctx), called as the Hermes agent calls it
    "ep_object_pkg/__init__.py": """
        class Plugin:
            @staticmethod
            def register(ctx):
                ctx.register_hook("pre_llm_call", lambda **kw: None)
    """,
    "ep_broken_pkg/__init__.py": """
        raise RuntimeError("broken on import\\nsecond line")
    """,
    "ep_empty_pkg/__init__.py": "VALUE = 1\n",
}
ENTRY_POINTS = {
    "fn-plugin": "ep_function_pkg:setup_plugin",
    "mod-plugin": "ep_module_pkg",
    "obj-plugin": "ep_object_pkg:Plugin",
    "broken-plugin": "ep_broken_pkg",
    "empty-plugin": "ep_empty_pkg",
}


@pytest.fixture
def site(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A folder on ``sys.path`` holding the packages above and one distribution declaring
    them in the ``hermes_agent.plugins`` entry point group."""
    root = tmp_path / "site"
    for relative, source in PACKAGES.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(textwrap.dedent(source), encoding="utf-8")
    info = root / "demo_plugins-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(
        "Metadata-Version: 2.1\nName: demo-plugins\nVersion: 1.0\n", encoding="utf-8"
    )
    lines = [f"{name} = {value}" for name, value in ENTRY_POINTS.items()]
    (info / "entry_points.txt").write_text(
        "[hermes_agent.plugins]\n" + "\n".join(lines) + "\n", encoding="utf-8"
    )
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name in [m for m in sys.modules if m.startswith("ep_")]:
        del sys.modules[name]


@pytest.fixture(name="hermes")
def hermes_fixture(hermes_cli) -> Callable[..., object]:
    """``hermes(*argv)``: one ``hermes`` command, as in a process of its own (the Hermes agent
    plugins are found again with the configuration as it is now)."""

    def run(*argv: str) -> object:
        reset_hosts()
        return hermes_cli(*argv)

    return run


def _config(home: Path) -> dict:
    return yaml.safe_load((home / "config.yaml").read_text(encoding="utf-8")) or {}


def test_entry_points_load_as_the_hermes_agent_loads_them(site: Path, tmp_path: Path) -> None:
    host = HermesPluginHost(
        tmp_path, {"plugins": {"enabled": list(ENTRY_POINTS)}}, entry_points=True
    ).load()
    status = {key: (p.status, p.error) for key, p in host.plugins.items()}
    assert status["fn-plugin"] == ("loaded", "")
    assert status["mod-plugin"] == ("loaded", "")
    assert status["obj-plugin"] == ("loaded", "")
    assert {"post_llm_call", "on_session_start", "pre_llm_call"} <= set(host.hooks)
    assert status["broken-plugin"] == ("error", "RuntimeError: broken on import second line")
    assert status["empty-plugin"] == (
        "error",
        "ImportError: ep_empty_pkg has no register(ctx) function",
    )


def test_entry_point_plugins_are_listed_before_any_is_enabled(
    site: Path, hermes, hermes_home: Path
) -> None:
    listed = hermes("plugins", "list").output
    assert "fn-plugin" in listed and "not enabled" in listed
    assert "ep_function_pkg" not in sys.modules  # found from metadata, never imported


def test_a_plugin_that_fails_to_load_is_one_line_in_list_and_doctor(
    site: Path, hermes, hermes_home: Path
) -> None:
    (hermes_home / "config.yaml").write_text(
        "plugins:\n  enabled: [broken-plugin, mod-plugin]\n", encoding="utf-8"
    )
    listed = hermes("plugins", "list").output.splitlines()
    errors = [line for line in listed if "broken-plugin: error:" in line]
    assert errors == [
        "hermes-agent-compat/broken-plugin: error: RuntimeError: broken on import second line"
    ]
    doctor = hermes("doctor", "--no-network")
    assert doctor.exit_code == 1
    lines = [line for line in doctor.output.splitlines() if "broken-plugin" in line]
    assert lines == [
        "ERR  plugin hermes-agent-compat/broken-plugin: RuntimeError: broken on import second line"
    ]
    assert "ok   plugin hermes-agent-compat/mod-plugin 1.0" in doctor.output


def test_enable_and_disable_a_folder_plugin(
    hermes, hermes_home: Path, write_plugin: Callable[..., Path]
) -> None:
    write_plugin(hermes_home, "tidy", "def register(ctx):\n    pass\n")
    enabled = hermes("plugins", "enable", "tidy")
    assert enabled.exit_code == 0, enabled.output
    assert enabled.output == "Plugin tidy enabled; takes effect in the next session.\n"
    assert _config(hermes_home)["plugins"]["enabled"] == ["tidy"]
    assert "tidy" in hermes("plugins", "list").output
    again = hermes("plugins", "enable", "tidy")
    assert again.output == "Plugin tidy is already enabled.\n"

    disabled = hermes("plugins", "disable", "tidy")
    assert disabled.exit_code == 0
    assert _config(hermes_home)["plugins"] == {"enabled": [], "disabled": ["tidy"]}
    assert "disabled in plugins.disabled" in hermes("plugins", "list").output

    hermes("plugins", "enable", "tidy")  # enabling again takes it out of disabled
    assert _config(hermes_home)["plugins"] == {"enabled": ["tidy"], "disabled": []}


def test_enable_and_disable_an_entry_point_plugin(site: Path, hermes, hermes_home: Path) -> None:
    assert hermes("plugins", "enable", "mod-plugin").exit_code == 0
    assert _config(hermes_home)["plugins"]["enabled"] == ["mod-plugin"]
    assert "ok   plugin hermes-agent-compat/mod-plugin" in hermes("doctor").output


def test_disable_and_enable_a_hermes_plugin(hermes, hermes_home: Path) -> None:
    assert hermes("plugins", "disable", "hermes-agent-compat").exit_code == 0
    assert _config(hermes_home)["plugins"] == {"disabled": ["hermes-agent-compat"]}
    assert hermes("plugins", "enable", "hermes-agent-compat").exit_code == 0
    assert _config(hermes_home)["plugins"] == {"disabled": []}


def test_an_unknown_name_is_one_line_and_exit_1(hermes, hermes_home: Path) -> None:
    for verb in ("enable", "disable"):
        result = hermes("plugins", verb, "nope")
        assert result.exit_code == 1
        assert result.stderr.strip().splitlines() == [
            "hermes: error: no installed plugin is named 'nope'; "
            "`hermes plugins list` shows their names"
        ]
    assert not (hermes_home / "config.yaml").exists()


def test_a_category_plugin_is_found_by_its_last_name_and_old_entries_go(
    hermes, hermes_home: Path, write_plugin: Callable[..., Path]
) -> None:
    write_plugin(hermes_home, "tools/tidy", "def register(ctx):\n    pass\n", "name: tidy\n")
    (hermes_home / "config.yaml").write_text("plugins:\n  disabled: [tidy]\n", encoding="utf-8")
    enabled = hermes("plugins", "enable", "tidy")
    assert enabled.output == "Plugin tools/tidy enabled; takes effect in the next session.\n"
    assert _config(hermes_home)["plugins"] == {"disabled": [], "enabled": ["tools/tidy"]}
    assert "ok   plugin hermes-agent-compat/tools/tidy" in hermes("doctor").output
    hermes("plugins", "disable", "tools/tidy")
    assert _config(hermes_home)["plugins"] == {"disabled": ["tools/tidy"], "enabled": []}


def test_an_ambiguous_last_name_is_an_error(
    hermes, hermes_home: Path, write_plugin: Callable[..., Path]
) -> None:
    for category in ("a", "b"):
        write_plugin(hermes_home, f"{category}/tidy", "def register(ctx):\n    pass\n")
    result = hermes("plugins", "enable", "tidy")
    assert result.exit_code == 1
    assert (
        result.stderr
        == "hermes: error: 'tidy' could be any of a/tidy, b/tidy; give the whole name\n"
    )
