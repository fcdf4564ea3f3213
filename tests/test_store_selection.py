"""Choosing the session store with ``store.url``: the home's ``sessions.db`` by default, a
plugin's store for its URL scheme, and a refusal (never a fall back) when it cannot be had."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from hermes_core.host import Host
from hermes_core.session_store import SQLiteSessionStore
from hermes_core.session_store.memory_store import MemorySessionStore
from hermes_core.testing import plugin_manager
from hermes_hookspecs import HermesError, hookimpl


class _Stores:
    """Registers the ``scratch`` scheme; its factory records what it was asked."""

    def __init__(self, fail: Exception | None = None) -> None:
        self.fail = fail
        self.asked: list[tuple[str, Path | None]] = []

    def make(self, url: str, home: Path | None) -> Any:
        self.asked.append((url, home))
        if self.fail is not None:
            raise self.fail
        return MemorySessionStore()

    @hookimpl
    def hermes_register_session_stores(self, register: Any) -> None:
        register("scratch", self.make)


def _host(tmp_path: Path, plugin: Any, url: str | None) -> Host:
    config: dict[str, Any] = {"store": {"url": url}} if url else {}
    return Host(config=config, home=tmp_path, plugins=plugin_manager([plugin]))


def test_without_a_url_the_home_keeps_sessions_db(tmp_path: Path) -> None:
    plugin = _Stores()
    store = _host(tmp_path, plugin, None).session_store
    assert isinstance(store, SQLiteSessionStore) and plugin.asked == []


def test_a_sqlite_url_names_the_folder_of_sessions_db(tmp_path: Path) -> None:
    folder = tmp_path / "elsewhere"
    folder.mkdir()
    store = _host(tmp_path, _Stores(), f"sqlite:{folder}").session_store
    assert isinstance(store, SQLiteSessionStore) and Path(store.path).parent == folder


def test_a_plugins_scheme_opens_its_store(tmp_path: Path) -> None:
    plugin = _Stores()
    store = _host(tmp_path, plugin, "scratch://db/hermes").session_store
    assert isinstance(store, MemorySessionStore)
    assert plugin.asked == [("scratch://db/hermes", tmp_path)]


def test_an_unserved_scheme_is_refused_in_one_line(tmp_path: Path) -> None:
    with pytest.raises(HermesError, match="no installed plugin serves that scheme") as info:
        _host(tmp_path, _Stores(), "postgresql://db/hermes").session_store  # noqa: B018
    assert "\n" not in str(info.value) and "scratch" in str(info.value)
    assert not (tmp_path / "sessions.db").exists()  # no silent fall back


def test_a_store_that_cannot_open_is_refused(tmp_path: Path) -> None:
    plugin = _Stores(fail=ConnectionRefusedError("db is down"))
    with pytest.raises(HermesError, match="could not be opened: ConnectionRefusedError: db is"):
        _host(tmp_path, plugin, "scratch://db").session_store  # noqa: B018
    assert not (tmp_path / "sessions.db").exists()


def test_the_url_comes_from_the_environment_too(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("HERMES_STORE_URL", "scratch://from-env")
    plugin = _Stores()
    host = Host(home=tmp_path, plugins=plugin_manager([plugin]))
    assert isinstance(host.session_store, MemorySessionStore)
    assert plugin.asked[0][0] == "scratch://from-env"
