"""Credential pools: requests through the real ``openai`` SDK to the fake LLM server, which
answers each key (by its ``Authorization`` header) as scripted; pool state in a real SQLite
store, shared with another process. Each reported failure mode of key rotation has a test."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from hermes_core.credentials import KeyPool, classify, configured_keys, make_pool, reset_after
from hermes_core.credentials.leases import KeyRouter
from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import Agent, Callbacks, FakeLLM, plugin_manager
from hermes_hookspecs import HermesError, KeyStateStore, ProviderError, ProviderSettings, hookimpl

KEYS = {"KEY_A": "sk-aaaa", "KEY_B": "sk-bbbb", "KEY_C": "sk-cccc", "KEY_D": "sk-dddd"}
USAGE_LIMIT = {
    "error": {
        "status": 429,
        "message": "You exceeded your current quota",
        "code": "insufficient_quota",
        "headers": {"x-ratelimit-reset-requests": "20m0s"},
    }
}
TRANSIENT = {"error": {"status": 429, "message": "Rate limit reached, slow down", "retry_after": 0}}
PAYMENT = {"error": {"status": 402, "message": "Payment required"}}
WRONG_MODEL = {"error": {"status": 403, "message": "You are not allowed to access model m"}}
REVOKED = {"error": {"status": 403, "message": "This key has been disabled"}}
UNAUTHORIZED = {"error": {"status": 401, "message": "Incorrect API key provided"}}


def key_of(request) -> str:
    """Which of :data:`KEYS` a recorded request carried."""
    token = request.headers.get("authorization", "").removeprefix("Bearer ")
    return next((name for name, value in KEYS.items() if value == token), token)


class PerKey:
    """A fake-server step answering by key: ``{KEY_NAME: [steps...]}``, each key's list used
    in order (the last step repeats)."""

    def __init__(self, **answers):
        self.answers = {name: list(steps) for name, steps in answers.items()}
        self.seen: list[str] = []

    def __call__(self, request):
        name = key_of(request)
        self.seen.append(name)
        steps = self.answers.get(name) or ["ok"]
        return steps.pop(0) if len(steps) > 1 else steps[0]


@pytest.fixture
def fake():
    server = FakeLLM().start()
    server.script = [PerKey()]
    for _ in range(200):  # every request answered by the script of the run going on
        server.add(lambda request: server.script[0](request))
    yield server
    server.stop()
    assert not server.errors, server.errors


@pytest.fixture
def env(monkeypatch):
    for name, value in KEYS.items():
        monkeypatch.setenv(name, value)
    return monkeypatch


@pytest.fixture
def store(tmp_path: Path):
    db = SQLiteSessionStore(tmp_path / "sessions.db")
    yield db
    db.close()


def pooled(fake, names=("KEY_A", "KEY_B"), *, retries=0, fallback=None, **pool) -> dict:
    config = {
        "model": {"provider": "custom", "base_url": fake.openai_base_url, "default": "m"},
        "providers": {"custom": {"keys": [{"id": n[-1].lower(), "env": n} for n in names], **pool}},
        "agent": {"api_max_retries": retries, "retry_base_delay": 0},
        "toolsets": [],
    }
    if fallback:
        config["fallback_providers"] = fallback
    return config


def agent_for(config, store, statuses=None, plugins=("openai",)):
    return Agent.from_config(
        config,
        plugins=plugin_manager(list(plugins)),
        session_store=store,
        callbacks=Callbacks(status=statuses.append) if statuses is not None else None,
    )


def run(config, store, script, fake, prompt="hi", **kwargs):
    fake.script[0] = script
    with agent_for(config, store, **kwargs) as agent:
        result = agent.run_conversation(prompt)
        return result, agent


def test_a_usage_limit_cools_the_key_that_made_the_request_until_its_reset(fake, env, store):
    script = PerKey(KEY_A=[USAGE_LIMIT])
    result, agent = run(pooled(fake), store, script, fake)
    assert result["exit_reason"] == "completed"
    assert script.seen == ["KEY_A", "KEY_B"]
    states = store.key_states("custom")
    assert states["a"].reason == "usage_limit"
    assert states["a"].cooldown_until == pytest.approx(time.time() + 1200, abs=30)
    assert states["b"].cooldown_until == 0 and states["b"].uses == 1 and states["b"].errors == 0
    assert agent.connection.rotations == 1
    records = store.usage_rows(0.0, "key")
    assert [r["group"] for r in records] == ["custom:b"]  # the answer is charged to b


def test_rotations_do_not_count_against_the_retry_budget(fake, env, store):
    names = tuple(KEYS)
    script = PerKey(KEY_A=[PAYMENT], KEY_B=[PAYMENT], KEY_C=[USAGE_LIMIT])
    statuses: list[str] = []
    result, agent = run(pooled(fake, names, retries=0), store, script, fake, statuses=statuses)
    assert result["exit_reason"] == "completed", result["error"]
    assert script.seen == ["KEY_A", "KEY_B", "KEY_C", "KEY_D"]
    assert agent.connection.rotations == 3
    assert sum("rotation" in s for s in statuses) == 3
    stored = store.get_session(result["session_id"])
    assert stored is not None and stored.metadata["key_rotations"] == 3


def test_every_healthy_key_is_tried_before_the_fallback_and_all_cooling_names_them(
    fake, env, store
):
    script = PerKey(KEY_A=[PAYMENT], KEY_B=[REVOKED])
    result, _ = run(pooled(fake), store, script, fake)
    assert result["exit_reason"] == "provider_error"
    error = result["error"]
    assert "every key of provider 'custom' is out of use" in error
    assert "a (usage_limit until" in error and "b (revoked until" in error
    assert script.seen == ["KEY_A", "KEY_B"]
    again, _ = run(pooled(fake), store, script, fake)  # no request goes out with a cooling key
    assert again["exit_reason"] == "provider_error" and script.seen == ["KEY_A", "KEY_B"]


def test_a_single_key_pool_is_not_benched_by_a_transient_429(fake, env, store):
    script = PerKey(KEY_A=[TRANSIENT, "ok"])
    result, _ = run(pooled(fake, ("KEY_A",), retries=2), store, script, fake)
    assert result["exit_reason"] == "completed"
    assert script.seen == ["KEY_A", "KEY_A"]  # retried on the same key after Retry-After
    script = PerKey(KEY_A=[TRANSIENT])
    result, _ = run(pooled(fake, ("KEY_A",), retries=0), store, script, fake)
    assert result["exit_reason"] == "provider_error"
    assert store.key_states("custom")["a"].cooldown_until == 0  # usable at once
    result, _ = run(pooled(fake, ("KEY_A",)), store, PerKey(), fake)
    assert result["exit_reason"] == "completed"


@pytest.mark.parametrize("strategy", ["fill_first", "round_robin", "least_used"])
def test_a_transient_429_moves_on_only_after_the_retries_and_briefly(fake, env, store, strategy):
    script = PerKey(KEY_A=[TRANSIENT])
    config = pooled(fake, retries=1, strategy=strategy, warm_seconds=0)
    result, _ = run(config, store, script, fake)
    assert result["exit_reason"] == "completed"
    assert script.seen == ["KEY_A", "KEY_A", "KEY_B"]
    assert store.key_states("custom")["a"].cooldown_until < time.time() + 61


def test_a_model_mismatch_403_charges_no_key(fake, env, store):
    script = PerKey(KEY_A=[WRONG_MODEL])
    result, _ = run(pooled(fake, ("KEY_A",)), store, script, fake)
    assert result["exit_reason"] == "provider_error"
    assert "not allowed to access model" in result["error"]
    states = store.key_states("custom")
    assert states.get("a") is None or states["a"].cooldown_until == 0


def test_a_401_is_refreshed_through_the_hook_then_rotated(fake, env, store):
    class Refresher:
        asked: list[str] = []

        @hookimpl
        def hermes_refresh_credentials(self, provider, settings):
            self.asked.append(settings.api_key)
            return "sk-cccc" if settings.api_key == "sk-aaaa" else None

    refresher = Refresher()
    script = PerKey(KEY_A=[UNAUTHORIZED], KEY_C=["refreshed"], KEY_B=[UNAUTHORIZED])
    result, _ = run(pooled(fake), store, script, fake, plugins=("openai", refresher))
    assert result["exit_reason"] == "completed" and result["final_response"] == "refreshed"
    assert script.seen == ["KEY_A", "KEY_C"]  # key a's new value (KEY_C's) answered
    assert refresher.asked == ["sk-aaaa"]
    # without a refresh the key is set aside and the next one answers
    script = PerKey(KEY_B=[UNAUTHORIZED])
    result, _ = run(pooled(fake, ("KEY_B", "KEY_D")), store, script, fake)
    assert result["exit_reason"] == "completed" and script.seen == ["KEY_B", "KEY_D"]
    assert store.key_states("custom")["b"].reason == "rejected"


def test_an_unknown_error_is_retried_once_then_reported(fake, env, store):
    teapot = {"error": {"status": 418, "message": "I am a teapot"}}
    script = PerKey(KEY_A=[teapot])
    result, _ = run(pooled(fake, strategy="round_robin", warm_seconds=0), store, script, fake)
    assert result["exit_reason"] == "provider_error" and "teapot" in result["error"]
    assert script.seen == ["KEY_A", "KEY_A"]


def test_a_replaced_key_does_not_keep_the_old_keys_cooldown(fake, env, store):
    run(pooled(fake, ("KEY_A",)), store, PerKey(KEY_A=[PAYMENT]), fake)
    assert store.key_states("custom")["a"].cooldown_until > time.time()
    env.setenv("KEY_A", "sk-new-a")
    KEYS["KEY_A_NEW"] = "sk-new-a"
    try:
        script = PerKey()
        result, _ = run(pooled(fake, ("KEY_A",)), store, script, fake)
    finally:
        del KEYS["KEY_A_NEW"]
    assert result["exit_reason"] == "completed" and script.seen == ["KEY_A_NEW"]
    assert store.key_states("custom")["a"].cooldown_until == 0


def test_a_stale_error_is_charged_to_the_key_that_made_the_request(env, store):
    config = {
        "providers": {
            "custom": {"keys": [{"id": "a", "env": "KEY_A"}, {"id": "b", "env": "KEY_B"}]}
        }
    }
    pool = make_pool(config, "custom", store)
    assert pool is not None
    made: list[str | None] = []
    router = KeyRouter(
        pool,
        ProviderSettings(provider="custom", model="m"),
        lambda s: made.append(s.api_key) or object(),  # type: ignore[func-returns-value]
        lambda line: None,
    )
    lease, _ = router.take()
    router.current = "b"  # meanwhile the main model moved on to b (an auxiliary's late 429)
    error = ProviderError("HTTP 429: exceeded your current quota", status=429, kind="rate_limit")
    assert router.after_error(lease, error, retries_left=True, refresh=lambda k: None) == "again"
    states = store.key_states("custom")
    assert states["a"].reason == "usage_limit" and "b" not in states
    assert error.key_id == "a"
    assert made == ["sk-aaaa"]


def test_two_processes_share_the_state_with_compare_and_swap(env, store, tmp_path):
    script = textwrap.dedent(
        f"""
        import time
        from hermes_core.credentials import make_pool
        from hermes_core.session_store import SQLiteSessionStore
        store = SQLiteSessionStore({str(store.path)!r})
        config = {{"providers": {{"custom": {{"keys": [{{"id": "a", "env": "KEY_A"}},
                                                      {{"id": "b", "env": "KEY_B"}}]}}}}}}
        pool = make_pool(config, "custom", store)
        lease = pool.lease()
        for _ in range(100):
            pool.used(lease)
        pool.cool(pool.keys[1], time.time() + 600, "usage_limit")
        """
    )
    config = {
        "providers": {
            "custom": {"keys": [{"id": "a", "env": "KEY_A"}, {"id": "b", "env": "KEY_B"}]}
        }
    }
    pool = make_pool(config, "custom", store)
    assert pool is not None
    child = subprocess.Popen([sys.executable, "-c", script])
    lease = pool.lease()
    for _ in range(100):
        pool.used(lease)
    assert child.wait(timeout=60) == 0
    pool.reread()
    assert pool.states()["a"].uses == 200  # no lost update
    assert [k.id for k in pool.usable()] == ["a"]  # the other process's cooldown holds here


def test_strategies_and_warm_keys(env, store):
    keys = [{"id": n[-1].lower(), "env": n} for n in ("KEY_A", "KEY_B", "KEY_C")]

    def pool_of(strategy, **more):
        config = {"providers": {"custom": {"keys": keys, "strategy": strategy, **more}}}
        store.forget_key_states("custom")
        found = make_pool(config, "custom", store)
        assert found is not None
        return found

    first = pool_of("fill_first")
    assert [first.lease().key.id for _ in range(3)] == ["a", "a", "a"]
    robin = pool_of("round_robin", warm_seconds=0)
    seen = []
    for _ in range(3):
        lease = robin.lease()
        robin.used(lease, now=time.time() + len(seen))
        seen.append(lease.key.id)
    assert seen == ["a", "b", "c"]
    warm = pool_of("round_robin", warm_seconds=300)
    lease = warm.lease()
    warm.used(lease)
    assert warm.lease(current=lease.key.id).key.id == lease.key.id  # its cache is warm
    least = pool_of("least_used")
    least.used(least.lease())
    assert least.lease().key.id == "b"
    assert pool_of("random").lease().key.id in {"a", "b", "c"}
    with pytest.raises(HermesError, match="strategy 'busiest' is not one of"):
        pool_of("busiest")


def test_keys_are_only_ever_references(env):
    with pytest.raises(HermesError, match="never written in config.yaml"):
        configured_keys({"providers": {"p": {"keys": [{"value": "sk-literal"}]}}}, "p")
    with pytest.raises(HermesError, match="used twice"):
        configured_keys(
            {"providers": {"p": {"keys": ["${KEY_A}", {"id": "key_a", "env": "X"}]}}}, "p"
        )
    keys = configured_keys({"providers": {"p": {"keys": ["${KEY_A}", {"env": "NOPE"}]}}}, "p")
    assert [(k.id, k.value) for k in keys] == [("key_a", "sk-aaaa"), ("nope", None)]


def test_the_classification_table(env):
    def verdict(status, message, **kw):
        return classify(ProviderError(message, status=status, **kw))[0]

    assert verdict(429, "Rate limit reached for requests") == "retry_same"
    assert verdict(429, "You exceeded your current quota (insufficient_quota)") == "cooldown"
    assert verdict(402, "Payment required") == "cooldown"
    assert verdict(401, "invalid x-api-key") == "refresh"
    assert verdict(403, "This key was revoked") == "revoke"
    assert verdict(403, "not allowed to access model gpt-9") == "no_penalty"
    assert verdict(400, "model does not exist") == "no_penalty"
    assert verdict(500, "oops", kind="server") == "no_penalty"
    assert verdict(418, "teapot") == "retry_once"
    now = 1_000_000.0
    headers = {"x-ratelimit-reset-tokens": "1m30s", "anthropic-ratelimit-requests-reset": "x"}
    error = ProviderError("quota", status=429, headers=headers)
    assert reset_after(error, now) == 90
    assert reset_after(ProviderError("resets in 2 hours", status=429), now) == 7200
    assert reset_after(ProviderError("no hint", status=429), now) is None


def test_the_store_and_the_process_fallback_are_key_state_stores(store):
    from hermes_core.credentials import MemoryKeyStates

    assert isinstance(store, KeyStateStore) and isinstance(MemoryKeyStates(), KeyStateStore)
    assert isinstance(make_pool({"providers": {"p": {"keys": ["${X}"]}}}, "p", object()), KeyPool)


# --- hermes keys -----------------------------------------------------------------------------


def test_hermes_keys_add_list_reset_remove(hermes_home, hermes_cli, env):
    assert hermes_cli("keys", "add", "custom", "KEY_A", "--label", "team").exit_code == 0
    added = hermes_cli("keys", "add", "custom", "KEY_B", "--id", "spare")
    assert added.exit_code == 0 and "added key spare" in added.output
    config = (hermes_home / "config.yaml").read_text()
    assert "KEY_A" in config and "sk-aaaa" not in config  # a reference, never the value
    with SQLiteSessionStore(hermes_home / "sessions.db") as db:
        pool = make_pool({"providers": {"custom": {"keys": [{"env": "KEY_A"}]}}}, "custom", db)
        assert pool is not None
        pool.cool(pool.keys[0], time.time() + 600, "usage_limit")
    listed = hermes_cli("keys", "list", "--json")
    rows = {r["id"]: r for r in __import__("json").loads(listed.output)}
    assert rows["key_a"]["state"].startswith("usage_limit until") and rows["spare"]["state"] == "ok"
    assert "sk-" not in listed.output
    assert hermes_cli("keys", "reset", "custom", "key_a").exit_code == 0
    rows = {
        r["id"]: r for r in __import__("json").loads(hermes_cli("keys", "list", "--json").output)
    }
    assert rows["key_a"]["state"] == "ok"
    assert hermes_cli("keys", "remove", "custom", "spare").exit_code == 0
    assert "spare" not in hermes_cli("keys", "list").output


def test_hermes_keys_errors_are_one_line(hermes_home, hermes_cli, env):
    for args, said in [
        (("keys", "add", "custom", "sk-literal-value"), "is not a variable name"),
        (("keys", "remove", "custom", "nope"), "has no keys"),
        (("keys", "list", "custom"), "has no keys"),
    ]:
        result = hermes_cli(*args)
        assert result.exit_code != 0 and said in result.stderr, result.stderr
        assert len(result.stderr.strip().splitlines()) == 1
    hermes_cli("keys", "add", "custom", "KEY_A")
    duplicate = hermes_cli("keys", "add", "custom", "KEY_A")
    assert duplicate.exit_code != 0 and "used twice" in duplicate.stderr


def test_hermes_doctor_shows_each_keys_state_without_its_value(hermes_home, hermes_cli, env):
    hermes_cli("keys", "add", "custom", "KEY_A")
    hermes_cli("keys", "add", "custom", "KEY_UNSET")
    result = hermes_cli("doctor", "--no-network")
    out = result.stdout + result.stderr
    assert "key custom/key_a ($KEY_A): ok, 0 uses, 0 errors" in out
    assert "key custom/key_unset ($KEY_UNSET): missing" in out
    assert "sk-aaaa" not in out


def test_the_fallback_provider_comes_after_every_key_and_has_its_own_pool(fake, env, store):
    fallback = [{"provider": "openai", "model": "m2", "base_url": fake.openai_base_url}]
    config = pooled(fake, ("KEY_A", "KEY_B"), fallback=fallback)
    config["providers"]["openai"] = {"keys": [{"id": "c", "env": "KEY_C"}]}
    script = PerKey(KEY_A=[PAYMENT], KEY_B=[PAYMENT])
    statuses: list[str] = []
    result, _ = run(config, store, script, fake, statuses=statuses)
    assert result["exit_reason"] == "completed" and result["provider"] == "openai"
    assert script.seen == ["KEY_A", "KEY_B", "KEY_C"]  # both keys before the fallback
    assert any("switching to openai" in s for s in statuses)
    stored = store.get_session(result["session_id"])
    assert stored is not None
    [switch] = stored.metadata["fallbacks"]
    assert "every key of provider 'custom' is out of use" in switch["reason"]
    assert store.key_states("openai")["c"].uses == 1
    assert {k: s.reason for k, s in store.key_states("custom").items()} == {
        "a": "usage_limit",
        "b": "usage_limit",
    }


def test_fill_first_goes_back_to_the_first_key_once_the_cache_is_cold(env, store):
    keys = [{"id": "a", "env": "KEY_A"}, {"id": "b", "env": "KEY_B"}]
    pool = make_pool({"providers": {"p": {"keys": keys, "warm_seconds": 60}}}, "p", store)
    assert pool is not None
    now = time.time()
    pool.used(type(pool.lease())(pool, pool.keys[1]), now=now)  # b answered a moment ago
    assert pool.lease(current="b", now=now + 10).key.id == "b"  # warm: stay
    assert pool.lease(current="b", now=now + 120).key.id == "a"  # cold: the first again


def test_a_retry_goes_out_with_the_same_key_whatever_the_strategy_prefers(env, store):
    keys = [{"id": "a", "env": "KEY_A"}, {"id": "b", "env": "KEY_B"}]
    config = {"providers": {"p": {"keys": keys, "strategy": "least_used", "warm_seconds": 0}}}
    pool = make_pool(config, "p", store)
    assert pool is not None
    router = KeyRouter(pool, ProviderSettings(provider="p", model="m"), lambda s: object(), print)
    lease, _ = router.take()
    for _ in range(3):
        pool.used(lease)  # the strategy now prefers b
    transient = ProviderError("HTTP 429: slow down", status=429, kind="rate_limit")
    assert router.after_error(lease, transient, retries_left=True, refresh=lambda k: None) == (
        "retry"
    )
    assert router.take()[0].key.id == "a"  # the retry
    assert router.take()[0].key.id == "b"  # then the strategy again (a's cache is cold)
    teapot = ProviderError("teapot", status=418, kind="other", retryable=False)
    lease_b = router.take()[0]
    assert router.after_error(lease_b, teapot, retries_left=True, refresh=lambda k: None) == (
        "again"
    )
    assert router.take()[0].key.id == lease_b.key.id  # an unknown error: once on the same key
