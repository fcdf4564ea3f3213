"""Spend caps: the check before each model call, the turn that stops cleanly at a cap, the
ledger of per-call records in the SQLite store, ``hermes usage`` over it, and the downshift to
a cheaper model. Calls go through the real ``openai`` SDK to the fake LLM server."""

from __future__ import annotations

import base64
import json
import time
from pathlib import Path

import pytest

from hermes_core.budgets import BudgetExhausted, caps_for
from hermes_core.cli.usage_cmd import parse_since
from hermes_core.models.pricing import PriceBook, builtin_table, estimate_cost, price_for
from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import Agent, Callbacks, FakeLLM, assert_valid_transcript, plugin_manager
from hermes_core.testing.hosts import make_host
from hermes_hookspecs import AgentTask, HermesError, Usage, UsageLedger, UsageRecord

PRICED = {"m": {"input": 1000.0, "output": 1000.0}, "cheap": {"input": 10.0, "output": 10.0}}
"""$0.001 a token for ``m``: a call of 100 prompt and 10 answer tokens costs $0.11."""

ANSWER = {"text": "ok", "usage": {"input_tokens": 100, "output_tokens": 10}}


@pytest.fixture
def fake():
    server = FakeLLM().start()
    yield server
    server.stop()
    assert not server.errors, server.errors


@pytest.fixture
def store(tmp_path: Path):
    db = SQLiteSessionStore(tmp_path / "sessions.db")
    yield db
    db.close()


def config(fake: FakeLLM, budgets: dict, **extra) -> dict:
    return {
        "model": {"provider": "custom", "base_url": fake.openai_base_url, "default": "m"},
        "pricing": PRICED,
        "budgets": {"reserve_output_tokens": 10, **budgets},
        "toolsets": [],
        **extra,
    }


def make(fake, store, budgets, *, person=None, statuses=None, **extra):
    callbacks = Callbacks(status=statuses.append) if statuses is not None else None
    return Agent.from_config(
        config(fake, budgets, **extra),
        plugins=plugin_manager(["openai"]),
        session_store=store,
        person=person,
        callbacks=callbacks,
    )


def test_the_session_cap_stops_the_turn_before_the_call_that_could_exceed_it(fake, store):
    fake.add(ANSWER, ANSWER, ANSWER)
    with make(fake, store, {"session_usd": 0.30}) as agent:
        assert agent.run_conversation("one")["exit_reason"] == "completed"
        assert agent.run_conversation("two")["exit_reason"] == "completed"
        result = agent.run_conversation("three")
        messages = agent.messages
        session_id = agent.session_id
    assert result["exit_reason"] == "budget_exhausted"
    assert result["final_response"] is None and not result["completed"]
    error = result["error"]
    assert "budgets.session_usd is $0.30" in error and "this session has spent $0.22" in error
    assert "`hermes config set budgets.session_usd <amount>`" in error
    assert len(fake.model_requests) == 2  # the third call was never made
    assert messages[-1] == {"role": "user", "content": "three"}  # nothing partial
    assert_valid_transcript(messages)
    stored = store.get_session(session_id)
    assert stored is not None
    assert stored.metadata["estimated_cost_usd"] == pytest.approx(0.22)
    assert store.spent(0.0, session_id=session_id).usd == pytest.approx(0.22)


def test_chat_raises_the_cap_message(fake, store):
    with make(fake, store, {"session_usd": 0.0001}) as agent:
        with pytest.raises(HermesError, match=r"spend cap reached: budgets.session_usd"):
            agent.chat("hello")
    assert fake.model_requests == []


def test_a_persons_day_cap_counts_every_session_of_that_person_in_the_store(fake, store):
    fake.add(ANSWER, ANSWER)
    caps = {"person_day_usd": 0.12}
    with make(fake, store, caps) as first:
        assert first.run_conversation("one")["exit_reason"] == "completed"
    with make(fake, store, caps) as second:  # another session of the owner, same day
        result = second.run_conversation("two")
    assert result["exit_reason"] == "budget_exhausted"
    assert "budgets.person_day_usd is $0.12 and you have spent $0.11 today" in result["error"]
    with make(fake, store, caps, person="alice") as alice:  # someone else's day is untouched
        assert alice.run_conversation("hi")["exit_reason"] == "completed"
    assert len(fake.model_requests) == 2


def test_a_persons_own_cap_overrides_the_default_and_gateway_users_have_theirs(fake, store):
    fake.add(ANSWER, ANSWER)
    caps = {"gateway_user_day_usd": 0.05, "people": {"bob": {"day_usd": 1.0}}}
    with make(fake, store, caps, person="bob") as bob:
        assert bob.run_conversation("one")["exit_reason"] == "completed"
    with make(fake, store, caps, person="carol") as carol:
        result = carol.run_conversation("two")
        assert result["exit_reason"] == "completed"  # first call estimated under $0.05
        result = carol.run_conversation("three")
    assert result["exit_reason"] == "budget_exhausted"
    assert (
        "budgets.gateway_user_day_usd is $0.05 and carol has spent $0.11 today" in (result["error"])
    )


def test_an_unpriced_model_counts_tokens_against_the_token_cap_and_says_so_once(fake, store):
    fake.add(ANSWER, ANSWER, ANSWER)
    statuses: list[str] = []
    with make(fake, store, {"session_tokens": 250}, statuses=statuses, pricing={}) as agent:
        assert agent.run_conversation("one")["exit_reason"] == "completed"
        assert agent.run_conversation("two")["exit_reason"] == "completed"
        result = agent.run_conversation("three")
    assert result["exit_reason"] == "budget_exhausted"
    assert (
        "budgets.session_tokens is 250 tokens and this session has spent 220 tokens"
        in (result["error"])
    )
    said = [s for s in statuses if "has no price" in s]
    assert len(said) == 1 and "token caps" in said[0]
    assert store.spent(0.0).unpriced_tokens == 220


def test_the_downshift_model_answers_once_a_cap_is_nearly_spent(fake, store):
    fake.add(ANSWER, ANSWER, ANSWER)
    caps = {"session_usd": 0.5, "downshift_to": {"model": "cheap", "at": 0.2}}
    statuses: list[str] = []
    with make(fake, store, caps, statuses=statuses) as agent:
        agent.run_conversation("one")  # $0.11 spent: past 20 % of $0.50
        agent.run_conversation("two")
        agent.run_conversation("three")  # a new turn starts on the primary model again
    assert [r.model for r in fake.model_requests] == ["m", "cheap", "cheap"]
    assert any("using cheap" in s for s in statuses)
    rows = {r["group"]: r for r in store.usage_rows(0.0, "model")}
    assert rows["cheap"]["cost_usd"] == pytest.approx(2 * 110 * 10 / 1e6)


def test_runs_report_the_cap_to_the_gateway_and_record_jobs(fake, tmp_path):
    fake.add(ANSWER)
    host = make_host(
        scripted=False,
        plugins=["openai"],
        config=config(fake, {"cron_job_day_usd": 0.12}, agent={"api_max_retries": 0}),
        home=tmp_path / "home",
    )
    try:
        runner = host.runner()
        job = {"agent.job": "job1"}
        first = runner.run(AgentTask(prompt="a", source="cron", config_overrides=job))
        assert first.status == "completed"
        second = runner.run(AgentTask(prompt="b", source="cron", config_overrides=job))
        assert second.status == "budget_exhausted", second.error
        assert second.status == "budget_exhausted"
        assert second.text == second.error
        assert "budgets.cron_job_day_usd is $0.12 and scheduled job job1 has spent" in second.text
        other = runner.run(AgentTask(prompt="c", source="telegram", person="dave"))
        assert other.status == "error"  # no scripted answer left: but not stopped by the cap
        rows = {r["group"]: r for r in host.session_store.usage_rows(0.0, "job")}
        assert rows["job1"]["calls"] == 1 and rows["job1"]["cost_usd"] == pytest.approx(0.11)
    finally:
        host.close()


# --- the parts -------------------------------------------------------------------------------


def test_prices_come_from_one_dated_table_that_config_overrides():
    as_of, models = builtin_table()
    assert as_of and {"input", "cache_read", "cache_write", "output"} <= set(models["gpt-4o"])
    assert price_for("claude-sonnet-4-20250514", {})["cache_write"] == 3.75
    assert price_for("gpt-4o", {"pricing": {"gpt-4o": {"input": 1, "cached_input": 0.5}}}) == {
        "input": 1.0,
        "cache_read": 0.5,
        "cache_write": 1.0,
        "output": 0.0,
    }
    usage = Usage(input_tokens=1_000_000, output_tokens=1_000_000, cache_read_tokens=500_000)
    assert estimate_cost(usage, "gpt-4o", {}) == pytest.approx(0.5 * 2.5 + 0.5 * 1.25 + 10.0)
    book = PriceBook({"pricing": PRICED})
    assert book.cost(Usage(input_tokens=100, output_tokens=10), "m") == pytest.approx(0.11)
    assert book.prices("nothing-known") is None


def test_bad_caps_are_one_line_errors():
    with pytest.raises(HermesError, match=r"budgets.session_usd must be a number"):
        caps_for({"budgets": {"session_usd": "lots"}}, person=None, job=None)
    with pytest.raises(HermesError, match=r"budgets.people must be a mapping"):
        caps_for({"budgets": {"people": [1]}}, person="x", job=None)
    caps, shift, reserve = caps_for({}, person=None, job=None)
    assert caps == [] and shift is None and reserve == 1024


def test_the_exhausted_error_carries_its_cap(fake, store):
    with make(fake, store, {"session_usd": 0.0}) as agent:
        with pytest.raises(BudgetExhausted) as caught:
            agent.budget.start_turn(agent.session_id)
            agent.budget.check("m", 0.0, 10)
    assert caught.value.cap.key == "budgets.session_usd"


def test_the_ledger_is_a_store_capability_and_survives_reopening(tmp_path):
    path = tmp_path / "s.db"
    with SQLiteSessionStore(path) as first:
        assert isinstance(first, UsageLedger)
        first.record_usage(_record("s1", "m", 0.5, at=time.time()))
    with SQLiteSessionStore(path) as again:
        assert again.spent(0.0, session_id="s1").usd == 0.5
        with pytest.raises(ValueError):
            again.usage_rows(0.0, "colour")


def _record(session: str, model: str, cost, *, at: float, person=None, job=None) -> UsageRecord:
    return UsageRecord(
        at=at,
        session_id=session,
        person=person,
        source="cli",
        job=job,
        model=model,
        provider="custom",
        key_id="",
        input_tokens=100,
        output_tokens=10,
        cost_usd=cost,
    )


# --- hermes usage ----------------------------------------------------------------------------


def test_hermes_usage_totals_match_the_per_call_records(hermes_home, hermes_cli):
    now = time.time()
    records = [
        _record("s1", "m", 0.25, at=now - 60),
        _record("s1", "m", 0.5, at=now - 30, person="alice"),
        _record("s2", "gpt-4o", 1.0, at=now - 10, job="j1"),
        _record("s3", "local", None, at=now - 5),
        _record("s0", "m", 9.0, at=now - 40 * 86400),  # before --since
    ]
    with SQLiteSessionStore(hermes_home / "sessions.db") as db:
        for record in records:
            db.record_usage(record)
    result = hermes_cli("usage", "--by", "model", "--json")
    assert result.exit_code == 0, result.output
    rows = json.loads(result.output)
    assert sum(r["cost_usd"] for r in rows) == pytest.approx(1.75)
    assert sum(r["calls"] for r in rows) == 4
    assert {r["group"]: r["unpriced_calls"] for r in rows}["local"] == 1
    users = json.loads(hermes_cli("usage", "--by", "user", "--json").output)
    assert {r["group"]: r["cost_usd"] for r in users} == pytest.approx(
        {"(owner)": 1.25, "alice": 0.5}
    )
    everything = json.loads(hermes_cli("usage", "--since", "60d", "--json").output)
    assert sum(r["cost_usd"] for r in everything) == pytest.approx(10.75)
    table = hermes_cli("usage", "--by", "job")
    assert table.exit_code == 0 and "j1" in table.output and "$1.7500" in table.output
    assert "list prices as of 20" in table.output


def test_hermes_usage_refuses_a_bad_since_in_one_line(hermes_home, hermes_cli):
    result = hermes_cli("usage", "--since", "last tuesday")
    assert result.exit_code != 0
    assert "expected today, a span" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_since_spans_and_dates():
    now = 1_000_000.0
    assert parse_since("12h", now) == now - 12 * 3600
    assert parse_since("2w", now) == now - 14 * 86400
    assert parse_since(None, now) == now - 30 * 86400
    assert parse_since("today", now) <= now


def test_a_resumed_session_is_estimated_from_its_last_recorded_call(fake, store):
    fake.add({"text": "ok", "usage": {"input_tokens": 300, "output_tokens": 10}}, ANSWER)
    with make(fake, store, {"session_usd": 0.5}) as first:
        first.run_conversation("one")  # $0.31
        session_id = first.session_id
    assert store.last_call_tokens(session_id) == 310
    assert store.last_call_tokens("no-such-session") == 0
    resumed = Agent.from_config(
        config(fake, {"session_usd": 0.5}),
        plugins=plugin_manager(["openai"]),
        session_store=store,
        session_id=session_id,
    )
    with resumed:
        result = resumed.run_conversation("two")  # a prompt of 310+ tokens: up to $0.32
    assert result["exit_reason"] == "budget_exhausted"
    assert len(fake.model_requests) == 1


DOT_PNG = base64.b64decode(
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8BQDwAEhQGAhKmMIQAAAABJRU5ErkJggg=="
)


def test_side_requests_count_towards_the_turn_the_session_and_the_ledger(fake, store, tmp_path):
    image = tmp_path / "dot.png"
    image.write_bytes(DOT_PNG)
    fake.add(
        {"text": "a red dot", "usage": {"input_tokens": 200, "output_tokens": 10}},  # vision
        {"text": "It is a dot.", "usage": {"input_tokens": 100, "output_tokens": 10}},
        {"text": "summary", "usage": {"input_tokens": 50, "output_tokens": 5}},  # compression
    )
    vision = {"provider": "custom", "base_url": fake.openai_base_url, "model": "m"}
    settings = config(fake, {}, auxiliary={"vision": vision})
    settings["model"]["vision"] = False
    agent = Agent.from_config(
        settings, plugins=plugin_manager(["openai"]), session_store=store, home=tmp_path / "h"
    )
    with agent:
        result = agent.run_conversation(agent.user_content("what is this?", [image]))
        assert result["final_response"] == "It is a dot."
        assert result["estimated_cost_usd"] == pytest.approx(0.21 + 0.11)
        agent.side_request("compression", [{"role": "user", "content": "sum up"}])  # no turn
        session_id = agent.session_id
    stored = store.get_session(session_id)
    assert stored is not None
    assert stored.metadata["estimated_cost_usd"] == pytest.approx(0.21 + 0.11 + 0.055)
    assert store.spent(0.0, session_id=session_id).usd == pytest.approx(0.375)
    assert sum(r["calls"] for r in store.usage_rows(0.0, "model")) == 3


def test_hermes_chat_prints_the_cap_in_one_line_and_fails(hermes_home, hermes_cli, tmp_path):
    from hermes_core.testing import ScriptedModel, text

    (hermes_home / "config.yaml").write_text(
        "pricing:\n  scripted: {input: 1000, output: 1000}\nbudgets:\n  session_usd: 0.0001\n"
    )
    model = ScriptedModel(text("should not be asked"))
    project = tmp_path / "project"
    project.mkdir()
    result = hermes_cli(
        "chat", "-q", "hi", "--provider", "scripted", "-w", str(project), model=model
    )
    assert result.exit_code == 1
    assert result.stderr.startswith("hermes: error: spend cap reached: budgets.session_usd")
    assert result.stderr.count("\n") == 1
    assert model.requests == []


def test_the_session_cap_follows_a_conversation_through_compression(fake, store):
    from hermes_hookspecs import SessionInfo

    now = time.time()
    store.create_session(SessionInfo(id="root", source="cli", started_at=now - 60))
    store.create_session(
        SessionInfo(id="child", source="cli", parent_session_id="root", started_at=now - 30)
    )
    store.create_session(
        SessionInfo(id="helper", source="subagent", parent_session_id="child", started_at=now)
    )
    store.record_usage(_record("root", "m", 0.3, at=now - 50))
    store.record_usage(_record("child", "m", 0.1, at=now - 20))
    fake.add(ANSWER, ANSWER)
    caps = {"session_usd": 0.45}
    results = {}
    for session_id in ("child", "helper"):
        agent = Agent.from_config(
            config(fake, caps),
            plugins=plugin_manager(["openai"]),
            session_store=store,
            session_id=session_id,
        )
        with agent:
            results[session_id] = agent.run_conversation("go on")
    assert results["child"]["exit_reason"] == "budget_exhausted"
    assert "this session has spent $0.40" in results["child"]["error"]  # root's $0.30 too
    assert results["helper"]["exit_reason"] == "completed"  # a subagent keeps its own cap
