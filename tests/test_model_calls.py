"""Calling the model: provider resolution, retries, credential refresh, fallbacks, timeouts."""

from __future__ import annotations

import time
import types

import pytest

from hermes_core.loop.agent import Agent
from hermes_core.loop.events import Callbacks
from hermes_core.models.calls import ModelConnection
from hermes_core.models.providers import (
    ProviderResolutionError,
    api_mode_from_url,
    resolve_provider,
)
from hermes_core.plugins.registry import Registry
from hermes_core.testing import ScriptedModel, plugin_manager, text, wait_until
from hermes_hookspecs import (
    AuthenticationError,
    Provider,
    ProviderError,
    RateLimitError,
    hookimpl,
)

FAST = {"retry_base_delay": 0.01}


def providers_plugin(**models: ScriptedModel) -> types.ModuleType:
    """Providers named after the keyword arguments, each answering with its scripted model;
    ``settings`` each client was built with are kept on ``plugin.built``."""
    mod = types.ModuleType("providers")
    mod.built = []

    def register(register):
        for name, model in models.items():

            def create(settings, model=model):
                mod.built.append(settings)
                return model

            register(
                Provider(
                    name,
                    "chat_completions",
                    create,
                    default_model=f"{name}-model",
                    key_env=f"{name.upper()}_KEY",
                )
            )

    mod.hermes_register_providers = hookimpl(register)
    return mod


def agent_with(plugins, config, **kwargs) -> Agent:
    return Agent.from_config(plugins=plugin_manager(plugins), config=config, **kwargs)


@pytest.mark.parametrize(
    "url, mode",
    [
        ("https://api.anthropic.com", "anthropic_messages"),
        ("https://proxy.example/v1/anthropic", "anthropic_messages"),
        ("https://chatgpt.com/backend-api/codex", "codex_responses"),
        ("https://api.openai.com/v1", None),
        (None, None),
    ],
)
def test_api_mode_from_url(url, mode):
    assert api_mode_from_url(url) == mode


def test_api_mode_resolution_order(monkeypatch):
    monkeypatch.setenv("CUSTOM_KEY", "k")

    def register(register):
        register(
            Provider(
                "custom",
                "chat_completions",
                lambda s: None,
                key_env="CUSTOM_KEY",
                default_model="m",
            )
        )
        register(
            Provider(
                "anthropic",
                "anthropic_messages",
                lambda s: None,
                key_env="CUSTOM_KEY",
                default_model="claude",
            )
        )

    mod = types.ModuleType("p")
    mod.hermes_register_providers = hookimpl(register)
    registry = Registry(plugin_manager([mod]))
    mode = lambda **m: resolve_provider(registry, m)[1].api_mode  # noqa: E731
    assert mode(provider="custom") == "chat_completions"
    assert mode(provider="custom", base_url="http://x/anthropic") == "anthropic_messages"
    assert (
        mode(provider="custom", base_url="http://x/anthropic", api_mode="chat_completions")
        == "chat_completions"
    )
    assert mode(provider="anthropic", base_url="http://x/v1") == "anthropic_messages"


def test_missing_key_names_the_variable_and_loopback_needs_none(monkeypatch):
    monkeypatch.delenv("PRIMARY_KEY", raising=False)
    registry = Registry(plugin_manager([providers_plugin(primary=ScriptedModel())]))
    with pytest.raises(AuthenticationError, match="set PRIMARY_KEY .* or run `hermes setup`"):
        resolve_provider(registry, {"provider": "primary"})
    _, settings = resolve_provider(
        registry, {"provider": "primary", "base_url": "http://127.0.0.1:9/v1"}
    )
    assert settings.api_key is None and settings.model == "primary-model"
    with pytest.raises(ProviderResolutionError, match="unknown provider 'nope'"):
        resolve_provider(registry, {"provider": "nope"})


def test_backoff_is_jittered_exponential_and_honours_retry_after():
    plugins = plugin_manager([])
    connection = ModelConnection(
        Registry(plugins),
        plugins,
        {"agent": {"retry_base_delay": 1}},
        events=types.SimpleNamespace(emit=lambda *a, **k: None),
        client=ScriptedModel(),
    )
    for attempt, (low, high) in enumerate([(0.5, 1), (1, 2), (2, 4)], start=1):
        for _ in range(20):
            assert low <= connection.backoff(attempt, None) <= high
    assert connection.backoff(1, 7.5) == 7.5
    assert connection.backoff(1, 1e6) == 60.0


def test_retry_after_is_waited_for(monkeypatch):
    monkeypatch.setenv("PRIMARY_KEY", "k")
    primary = ScriptedModel(RateLimitError("busy", retry_after=0.3), text("ok"))
    agent = agent_with([providers_plugin(primary=primary)], {"model": {"provider": "primary"}})
    started = time.monotonic()
    assert agent.chat("q") == "ok"
    assert time.monotonic() - started >= 0.3


def test_fallback_after_retries_lasts_one_turn_and_is_recorded(monkeypatch):
    monkeypatch.setenv("PRIMARY_KEY", "k")
    monkeypatch.setenv("BACKUP_KEY", "k")
    statuses = []
    primary = ScriptedModel(
        *[ProviderError("boom", status=500, kind="server")] * 3, text("primary is back")
    )
    backup = ScriptedModel(text("from backup"))
    config = {
        "model": {"provider": "primary"},
        "agent": {**FAST, "api_max_retries": 2},
        "fallback_providers": [{"provider": "backup", "model": "b-1", "key_env": "BACKUP_KEY"}],
    }
    agent = agent_with(
        [providers_plugin(primary=primary, backup=backup)],
        config,
        callbacks=Callbacks(status=statuses.append),
    )
    result = agent.run_conversation("q")
    assert result["final_response"] == "from backup"
    assert result["provider"] == "backup" and result["model"] == "b-1"
    assert any("switching to backup (b-1)" in s for s in statuses)
    switches = agent.session_store.get_session(agent.session_id).metadata["fallbacks"]
    assert switches[0]["from_provider"] == "primary" and switches[0]["to_provider"] == "backup"
    assert agent.chat("again") == "primary is back"  # the next turn starts on the primary


def test_non_fallback_errors_do_not_switch(monkeypatch):
    monkeypatch.setenv("PRIMARY_KEY", "k")
    monkeypatch.setenv("BACKUP_KEY", "k")
    primary = ScriptedModel(ProviderError("bad request", status=400, kind="bad_request"))
    backup = ScriptedModel(text("never"))
    config = {"model": {"provider": "primary"}, "fallback_providers": [{"provider": "backup"}]}
    agent = agent_with([providers_plugin(primary=primary, backup=backup)], config)
    result = agent.run_conversation("q")
    assert result["exit_reason"] == "provider_error"
    assert result["error"] == "primary: bad request"
    assert backup.requests == []


def test_auth_error_tries_a_credential_refresh_once_first(monkeypatch):
    monkeypatch.setenv("PRIMARY_KEY", "old-key")
    primary = ScriptedModel(AuthenticationError("401 key expired"), text("refreshed ok"))
    plugin = providers_plugin(primary=primary)
    asked = []

    refresher = types.ModuleType("refresher")
    refresher.hermes_refresh_credentials = hookimpl(
        lambda provider, settings: asked.append((provider, settings.api_key)) or "new-key"
    )
    agent = agent_with([plugin, refresher], {"model": {"provider": "primary"}})
    assert agent.chat("q") == "refreshed ok"
    assert asked == [("primary", "old-key")]
    assert [s.api_key for s in plugin.built] == ["new-key", "new-key"]  # same settings object

    primary.add(AuthenticationError("401 still bad"), AuthenticationError("401 still bad"))
    result = agent.run_conversation("again")
    assert result["exit_reason"] == "provider_error" and "still bad" in result["error"]
    assert len(asked) == 2  # once per turn


def test_a_stale_call_is_abandoned_and_retried(monkeypatch):
    monkeypatch.setenv("PRIMARY_KEY", "k")
    primary = ScriptedModel(text("too slow", delay=5), text("fresh"))
    agent = agent_with(
        [providers_plugin(primary=primary)],
        {"model": {"provider": "primary"}, "agent": {**FAST, "stale_timeout": 0.2}},
    )
    started = time.monotonic()
    assert agent.chat("q") == "fresh"
    assert time.monotonic() - started < 3
    assert primary.requests[0].cancel.is_set()  # the abandoned call was told to stop


def test_cost_is_estimated_from_the_price_table_and_config_extends_it():
    from hermes_core.models.pricing import estimate_cost, price_for
    from hermes_hookspecs import Usage

    assert price_for("claude-sonnet-4-20250514", {})["output"] == 15.0
    assert price_for("openrouter/gpt-4o-mini", {})["input"] == 0.15
    assert price_for("unknown-model", {}) is None
    config = {"pricing": {"house-model": {"input": 1.0, "output": 2.0, "cache_read": 0.5}}}
    usage = Usage(input_tokens=1_000_000, output_tokens=500_000, cache_read_tokens=400_000)
    assert estimate_cost(usage, "house-model", config) == pytest.approx(0.6 + 0.2 + 1.0)
    assert estimate_cost(usage, "unknown-model", config) is None


def test_turn_result_carries_the_estimated_cost():
    from hermes_core.testing import make_agent

    config = {"pricing": {"scripted": {"input": 1.0, "output": 1.0}}}
    agent = make_agent(text("a"), config=config)
    result = agent.run_conversation("q")
    tokens = result["usage"]["input_tokens"] + result["usage"]["output_tokens"]
    assert result["estimated_cost_usd"] == pytest.approx(tokens / 1_000_000)
    assert make_agent(text("a")).run_conversation("q")["estimated_cost_usd"] is None


def test_side_requests_use_the_auxiliary_model_and_fall_back_to_the_main_one(monkeypatch):
    monkeypatch.setenv("PRIMARY_KEY", "k")
    monkeypatch.setenv("SUMMARY_KEY", "k")
    primary = ScriptedModel(text("main answer"), text("main summary"))
    summary = ScriptedModel(text("aux summary"), ProviderError("down", kind="server"))
    config = {
        "model": {"provider": "primary"},
        "agent": {**FAST, "api_max_retries": 0},
        "auxiliary": {"compression": {"provider": "summary", "model": "small"}},
    }
    agent = agent_with([providers_plugin(primary=primary, summary=summary)], config)
    messages = [{"role": "user", "content": "summarise this"}]
    assert agent.side_request("compression", messages).message["content"] == "aux summary"
    assert summary.last_request.model == "small" and summary.last_request.tools == []
    # the auxiliary provider fails: its chain ends with the main model
    assert agent.side_request("compression", messages).message["content"] == "main answer"
    # a task with no auxiliary entry uses the main model directly
    assert agent.side_request("title", messages).message["content"] == "main summary"


class WatchingModel(ScriptedModel):
    """A scripted model that declares it answers ``request.cancel`` by itself; it records the
    thread each call ran on."""

    watches_cancel = True

    def __init__(self, *steps):
        super().__init__(*steps)
        self.threads: list[int] = []

    def complete(self, request):
        import threading

        self.threads.append(threading.get_ident())
        return super().complete(request)


def test_a_client_that_watches_cancel_runs_on_the_turns_thread_and_is_still_interruptible(
    monkeypatch,
):
    import threading

    monkeypatch.setenv("PRIMARY_KEY", "k")
    model = WatchingModel(text("first"), text("never seen", delay=30))
    agent = agent_with([providers_plugin(primary=model)], {"model": {"provider": "primary"}})
    assert agent.chat("q") == "first"
    assert model.threads == [threading.get_ident()]

    box = {}
    worker = threading.Thread(target=lambda: box.update(r=agent.run_conversation("again")))
    worker.start()
    assert wait_until(lambda: len(model.requests) == 2)
    started = time.monotonic()
    agent.interrupt()
    worker.join(timeout=10)
    assert time.monotonic() - started < 2
    assert box["r"]["exit_reason"] == "interrupted"
    assert model.requests[1].cancel.is_set()


def test_a_stale_timeout_is_enforced_for_a_client_that_watches_cancel_too(monkeypatch):
    import threading

    monkeypatch.setenv("PRIMARY_KEY", "k")
    model = WatchingModel(text("too slow", delay=5), text("fresh"))
    agent = agent_with(
        [providers_plugin(primary=model)],
        {"model": {"provider": "primary"}, "agent": {**FAST, "stale_timeout": 0.2}},
    )
    started = time.monotonic()
    assert agent.chat("q") == "fresh"
    assert time.monotonic() - started < 3
    assert model.requests[0].cancel.is_set()
    assert threading.get_ident() not in model.threads  # watched by the host, on its threads
