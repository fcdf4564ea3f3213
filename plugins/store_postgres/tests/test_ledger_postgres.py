"""The spend ledger and the credential pools' shared state on PostgreSQL: the same behaviour
as the SQLite store's, with several stores on one database standing for several machines."""

from __future__ import annotations

import threading
import time

import pytest
from hermes_store_postgres.store import PostgresSessionStore

from hermes_core.credentials import make_pool
from hermes_hookspecs import KeyState, KeyStateStore, UsageLedger, UsageRecord


def _record(session: str, cost, *, person=None, job=None, model="m") -> UsageRecord:
    return UsageRecord(
        at=time.time(), session_id=session, person=person, source="cli", job=job,
        model=model, provider="p", key_id="k1", input_tokens=100, output_tokens=10,
        cost_usd=cost,
    )  # fmt: skip


def test_usage_records_add_up_by_scope_and_group(pg_store: PostgresSessionStore) -> None:
    assert isinstance(pg_store, UsageLedger)
    pg_store.record_usage(_record("s1", 0.25))
    pg_store.record_usage(_record("s1", 0.5, person="alice", job="j1"))
    with pg_store.batch():  # joins the step's transaction
        pg_store.record_usage(_record("s2", None, model="local"))
    assert pg_store.spent(0.0).usd == pytest.approx(0.75)
    assert pg_store.spent(0.0).unpriced_tokens == 110
    assert pg_store.spent(0.0, owner=True).usd == pytest.approx(0.25)
    assert pg_store.spent(0.0, person="alice").usd == pytest.approx(0.5)
    assert pg_store.spent(0.0, job="j1").usd == pytest.approx(0.5)
    assert pg_store.spent(0.0, session_id="s2").usd == 0.0
    assert pg_store.last_call_tokens("s1") == 110 and pg_store.last_call_tokens("x") == 0
    by_model = {r["group"]: r for r in pg_store.usage_rows(0.0, "model")}
    assert by_model["m"]["calls"] == 2 and by_model["local"]["unpriced_calls"] == 1
    assert [r["group"] for r in pg_store.usage_rows(0.0, "key")] == ["p:k1"]
    assert len(pg_store.usage_rows(0.0, "day")) == 1
    with pytest.raises(ValueError):
        pg_store.usage_rows(0.0, "colour")


def test_key_state_compare_and_swap_across_stores(open_stores, monkeypatch) -> None:
    first, second = open_stores(), open_stores()
    assert isinstance(first, KeyStateStore)
    assert first.swap_key_state("q", "z", 0, KeyState(uses=1))
    assert not second.swap_key_state("q", "z", 0, KeyState(uses=1))  # lost the race
    assert second.key_states("q")["z"].version == 1
    monkeypatch.setenv("PG_KEY_A", "sk-a")
    config = {"providers": {"p": {"keys": [{"id": "a", "env": "PG_KEY_A"}]}}}
    pools = [make_pool(config, "p", store) for store in (first, second)]

    def use(pool) -> None:
        lease = pool.lease()
        for _ in range(25):
            pool.used(lease)

    threads = [threading.Thread(target=use, args=(pool,)) for pool in pools]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert first.key_states("p")["a"].uses == 50  # no lost update
    pools[0].cool(pools[0].keys[0], time.time() + 600, "usage_limit")
    pools[1].reread()
    assert pools[1].usable() == []
    assert second.forget_key_states("p", ["a"]) == 1 and first.key_states("p") == {}


def test_a_spend_cap_counts_what_the_postgres_ledger_holds(pg_store) -> None:
    from hermes_core.testing import Agent, ScriptedModel, Turn
    from hermes_hookspecs import Usage

    config = {
        "pricing": {"scripted": {"input": 1000.0, "output": 1000.0}},
        "budgets": {"person_day_usd": 1.2, "reserve_output_tokens": 1},
    }
    answer = Turn(text="ok", usage=Usage(input_tokens=1000, output_tokens=10))
    with Agent.from_config(config, client=ScriptedModel(answer), session_store=pg_store) as one:
        assert one.run_conversation("hi")["exit_reason"] == "completed"
    model = ScriptedModel("never sent")
    with Agent.from_config(config, client=model, session_store=pg_store) as two:
        result = two.run_conversation("again")  # another session, the same person and day
    assert result["exit_reason"] == "budget_exhausted"
    assert "you have spent $1.01 today" in result["error"]
    assert model.requests == []
