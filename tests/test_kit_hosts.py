"""The test kit's hosts and runners: what a plugin that starts agents itself is handed, built with
only the plugins a test names, its sessions in the test's home or in memory, driven by a
scripted model or by the configured provider."""

from __future__ import annotations

from pathlib import Path

import pytest

from hermes_core.testing import (
    FakeLLM,
    MemorySessionStore,
    ScriptedModel,
    SQLiteSessionStore,
    make_host,
    make_runner,
    text,
    tool_call,
)
from hermes_hookspecs import AgentRunner, AgentTask


def test_a_host_has_only_the_plugins_named_and_a_scripted_model() -> None:
    host = make_host(tool_call("todo", {"todos": []}), text("done"), plugins=["todo"])
    try:
        assert isinstance(host.client, ScriptedModel)
        assert set(host.registry.toolsets) == {"todo"}
        loaded = [r.name for r in host.plugins.list_records() if r.status == "loaded"]
        assert loaded == ["core_layers", "todo"]
        with host.agent() as agent:
            assert agent.chat("plan") == "done"
        assert isinstance(host.session_store, MemorySessionStore)
    finally:
        host.close()


def test_nothing_is_read_from_the_environment_without_a_home(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config.yaml").write_text("agent: {max_turns: 3}\n")
    monkeypatch.setenv("HERMES_HOME", str(tmp_path))
    monkeypatch.setenv("HERMES_MAX_TURNS", "7")
    host = make_host(config={"agent": {"max_turns": 5}})
    assert host.config.get("agent.max_turns") == 5
    assert make_host().config.get("agent.max_turns") == 90
    assert not make_host().has_home


def test_a_home_without_config_is_read_like_hermes_reads_it(tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text("agent: {max_turns: 3}\n")
    host = make_host(home=tmp_path)
    assert host.home == tmp_path and host.config.get("agent.max_turns") == 3


def test_a_runner_stores_its_sessions_in_the_home(tmp_path: Path) -> None:
    runner = make_runner(text("hello from cron"), plugins=["todo"], home=tmp_path, config={})
    assert isinstance(runner, AgentRunner)
    outcome = runner.run(AgentTask(prompt="hi", source="cron"))
    runner.host.close()
    assert (outcome.status, outcome.text) == ("completed", "hello from cron")
    [session] = SQLiteSessionStore(tmp_path / "sessions.db").list_sessions()
    assert (session.id, session.source) == (outcome.session_id, "cron")


def test_a_runner_can_call_the_configured_provider_instead(tmp_path: Path) -> None:
    with FakeLLM() as server:
        server.add("from the server")
        runner = make_runner(
            scripted=False,
            plugins=["openai"],
            config={
                "model": {
                    "provider": "custom",
                    "base_url": server.openai_base_url,
                    "default": "m",
                    "api_key": "test",
                },
                "toolsets": [],
            },
        )
        outcome = runner.run(AgentTask(prompt="hi"))
    assert (outcome.status, outcome.text) == ("completed", "from the server")
    assert runner.host.client is None
    with pytest.raises(TypeError, match="no script and no model"):
        make_host(text("x"), scripted=False)
