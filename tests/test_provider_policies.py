"""Retries, fallback and credential refresh through the real SDKs against the fake server."""

from __future__ import annotations

import time
import types

import pytest

from hermes_core.loop.agent import Agent
from hermes_core.testing import FakeLLM, plugin_manager, text
from hermes_hookspecs import hookimpl

pytest.importorskip("openai")
pytest.importorskip("anthropic")


@pytest.fixture
def servers():
    primary, backup = FakeLLM().start(), FakeLLM().start()
    yield primary, backup
    primary.stop()
    backup.stop()


def agent(primary: FakeLLM, backup: FakeLLM, extra=(), **agent_cfg) -> Agent:
    config = {
        "agent": {"retry_base_delay": 0.01, "api_max_retries": 2, **agent_cfg},
        "fallback_providers": [
            {"provider": "anthropic", "model": "claude-test", "base_url": backup.anthropic_base_url}
        ],
    }
    return Agent.from_config(
        provider="custom",
        base_url=primary.openai_base_url,
        model="primary-model",
        plugins=plugin_manager(["openai", "anthropic", *extra]),
        config=config,
    )


def test_429_with_retry_after_then_success(servers):
    primary, backup = servers
    primary.add(
        {"error": {"status": 429, "message": "slow down", "retry_after": 0.2}},
        text("after waiting"),
    )
    assert agent(primary, backup).chat("q") == "after waiting"
    assert len(primary.model_requests) == 2 and backup.requests == []


def test_500_until_the_fallback_provider_answers_in_its_own_wire_format(servers, monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    primary, backup = servers
    primary.add(*[{"error": {"status": 500, "message": "upstream down"}}] * 3)
    backup.add(text("answer from the fallback"))
    bot = agent(primary, backup)
    result = bot.run_conversation("q")
    assert result["final_response"] == "answer from the fallback"
    assert result["provider"] == "anthropic" and result["model"] == "claude-test"
    assert len(primary.model_requests) == 3  # the first try and two retries
    assert backup.last_request.wire == "anthropic_messages"
    assert backup.last_request.json["messages"][-1]["content"][0]["text"] == "q"


def test_401_asks_for_fresh_credentials_once_then_succeeds(servers, monkeypatch):
    monkeypatch.setenv("CUSTOM_API_KEY", "expired-key")
    primary, backup = servers
    primary.add({"error": {"status": 401, "message": "invalid api key"}}, text("welcome back"))
    refresher = types.ModuleType("refresher")
    refresher.hermes_refresh_credentials = hookimpl(lambda provider, settings: "fresh-key")
    assert agent(primary, backup, extra=[refresher]).chat("q") == "welcome back"
    keys = [r.headers.get("authorization") for r in primary.model_requests]
    assert keys == ["Bearer expired-key", "Bearer fresh-key"]


@pytest.mark.parametrize(
    "step", [{"hang": True}, {"text": "x" * 400, "chunks": 200, "chunk_delay": 0.05}]
)
def test_an_interrupt_is_never_retried_nor_moved_to_the_fallback(servers, monkeypatch, step):
    import threading

    from hermes_core.testing import wait_until

    monkeypatch.setenv("ANTHROPIC_API_KEY", "k")
    primary, backup = servers
    primary.add(step)
    backup.add(text("answer from the fallback"))
    bot = agent(primary, backup, stream=True)  # chunk delays apply to streamed answers only
    box = {}
    worker = threading.Thread(target=lambda: box.update(r=bot.run_conversation("q")))
    worker.start()
    assert wait_until(lambda: len(primary.model_requests) == 1)
    started = time.monotonic()
    bot.interrupt()
    worker.join(timeout=5)
    assert time.monotonic() - started < 1.0
    result = box["r"]
    assert result["exit_reason"] == "interrupted" and result["error"] is None
    assert len(primary.model_requests) == 1 and backup.requests == []
    assert bot.connection.switches == []
    assert [m["role"] for m in bot.messages] == ["user"]


def _closed_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_a_connection_error_names_the_url_it_could_not_reach():
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    bot = Agent.from_config(
        provider="custom",
        base_url=url,
        model="m",
        plugins=plugin_manager(["openai"]),
        config={"agent": {"retry_base_delay": 0.01, "api_max_retries": 0}},
    )
    result = bot.run_conversation("q")
    assert result["final_response"] is None
    assert url in result["error"]


@pytest.mark.parametrize(
    "url", ["localhost:8080/v1", "htp://example.com", "http://", "http://h:x/"]
)
def test_a_malformed_base_url_is_a_configuration_error_at_once(url):
    from hermes_core.models.providers import ProviderResolutionError

    with pytest.raises(ProviderResolutionError, match="is not a valid URL"):
        Agent.from_config(
            provider="custom", base_url=url, model="m", plugins=plugin_manager(["openai"])
        )
