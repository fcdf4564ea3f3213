"""`hermes --help` lists the plugin commands remembered from an earlier run without loading any
plugin, and any command that runs still loads them all."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import pytest

from hermes_core.cli import app, command_cache


def help_text() -> str:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert app.main(["--help"]) == 0
    return out.getvalue()


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for name in [n for n in __import__("os").environ if n.startswith("HERMES_")]:
        monkeypatch.delenv(name)
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    return tmp_path


def test_a_second_help_loads_no_plugin_and_lists_the_same(
    home: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = help_text()
    assert command_cache.cache_path(home).is_file()

    def no_plugins(*args: object, **kwargs: object) -> None:
        raise AssertionError("plugins loaded")

    monkeypatch.setattr("hermes_core.plugins.manager.PluginManager.__init__", no_plugins)
    assert help_text() == first


def test_a_changed_configuration_loads_the_plugins_again(home: Path) -> None:
    help_text()
    key_before = command_cache.fingerprint(home, None)
    (home / "config.yaml").write_text("plugins:\n  disabled: [cron]\n", encoding="utf-8")
    assert command_cache.load(home, command_cache.fingerprint(home, None)) is None
    assert command_cache.load(home, key_before) is not None
    assert "  cron " not in help_text()


def test_no_home_folder_is_created(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for name in [n for n in __import__("os").environ if n.startswith("HERMES_")]:
        monkeypatch.delenv(name)
    missing = tmp_path / "missing"
    monkeypatch.setenv("HERMES_HOME", str(missing))
    help_text()
    assert not missing.exists()
