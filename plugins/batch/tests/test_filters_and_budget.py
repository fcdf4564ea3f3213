"""Quality filters (discarded rows recorded with why, not run again unless asked, a plugin's
own filter through the hook) and the run's dollar budget (rows stop starting once it is
spent; resume with a larger one goes on)."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest
from hermes_batch.filters import chosen_filters, no_reasoning, over_turns, unknown_tool
from hermes_batch.table_sqlite import SQLiteRunTable

from hermes_hookspecs import HermesError


def test_the_builtin_filters():
    think = {"messages": [{"role": "assistant", "content": "x", "reasoning": "because"}]}
    plain = {"messages": [{"role": "assistant", "content": "x"}]}
    assert no_reasoning({}, think) is None and "no reasoning" in str(no_reasoning({}, plain))
    ghost = {"messages": [{"role": "tool", "content": "Error: unknown tool 'zap'. Available: a."}]}
    assert unknown_tool({}, ghost) == "unknown tool 'zap'" and unknown_tool({}, think) is None
    assert over_turns({}, {"status": "max_iterations"}) and not over_turns(
        {}, {"status": "completed"}
    )
    with pytest.raises(HermesError, match="installed: a, b"):
        chosen_filters(["c"], {"b": None, "a": None})


def test_discarded_rows_are_recorded_and_not_run_again(tmp_path, fake_model, kit: Any):
    folder = tmp_path / "home"
    env = kit.make_home(folder, fake_model)
    rows = [
        {"id": "ghost", "prompt": "GHOST call it"},
        {"id": "fine", "prompt": "TOOL plan"},
        {"id": "think", "prompt": "THINK it"},
    ]
    dataset = kit.write_dataset(tmp_path / "d.jsonl", rows)
    args = ("--name", "f", "--workers", "1", "--filter", "tool-names", "--toolsets", "todo")
    ran = kit.hermes("batch", "run", str(dataset), *args, env=env)
    assert ran.returncode == 0, ran.stderr
    assert "2 completed, 0 failed, 1 discarded" in ran.stdout
    table = SQLiteRunTable(folder / "batch.db")
    [ghost] = table.rows("f", ["discarded"])
    assert (
        ghost.key == "ghost" and ghost.discard_reason == "tool-names: unknown tool 'no_such_tool'"
    )
    asked = len(fake_model.model_requests)
    again = kit.hermes("batch", "resume", "f", env=env)
    assert again.returncode == 0 and len(fake_model.model_requests) == asked  # nothing re-paid
    retried = kit.hermes("batch", "resume", "f", "--retry-discarded", env=env)
    assert retried.returncode == 0 and len(fake_model.model_requests) == asked + 2
    assert [a["outcome"] for a in table.attempts("f", "ghost")] == ["discarded", "discarded"]
    exported = tmp_path / "all.jsonl"
    assert (
        kit.hermes(
            "batch", "export", "f", "--only", "discarded", "-o", str(exported), env=env
        ).returncode
        == 0
    )
    assert [json.loads(line)["id"] for line in exported.read_text().splitlines()] == ["ghost"]
    unknown = kit.hermes("batch", "run", str(dataset), "--name", "g", "--filter", "nope", env=env)
    assert unknown.returncode == 1 and "no batch filter named 'nope'" in unknown.stderr


def test_the_budget_stops_new_rows_and_resume_can_raise_it(tmp_path, fake_model, kit: Any):
    folder = tmp_path / "home"
    pricing = "pricing:\n  fake-model: {input: 1000.0, output: 1000.0}\n"  # $0.11 a row
    env = kit.make_home(folder, fake_model, pricing)
    dataset = kit.write_dataset(tmp_path / "d.jsonl", [{"prompt": f"row {n}"} for n in range(6)])
    args = ("--name", "b", "--workers", "1", "--budget-usd", "0.25", "--json")
    ran = kit.hermes("batch", "run", str(dataset), *args, env=env)
    assert ran.returncode == 0, ran.stderr
    status = json.loads(ran.stdout)
    assert (status["state"], status["completed"], status["pending"]) == ("stopped", 3, 3)
    assert status["stop_reason"] == "budget of $0.25 spent"
    assert status["cost_usd"] == pytest.approx(0.33)
    more = kit.hermes("batch", "resume", "b", "--budget-usd", "10", "--json", env=env)
    status = json.loads(more.stdout)
    assert (status["state"], status["completed"], status["pending"]) == ("finished", 6, 0)


def test_a_row_over_its_time_fails_with_why(tmp_path, fake_model, kit: Any):
    folder = tmp_path / "home"
    env = kit.make_home(folder, fake_model)
    rows = [{"id": "slow", "prompt": "HANG row"}, {"id": "quick", "prompt": "quick"}]
    dataset = kit.write_dataset(tmp_path / "d.jsonl", rows)
    args = ("--name", "t", "--row-timeout", "3", "--max-attempts", "1")
    ran = kit.hermes("batch", "run", str(dataset), *args, env=env)
    assert ran.returncode == 0, ran.stderr
    table = SQLiteRunTable(folder / "batch.db")
    slow, quick = table.rows("t")
    assert slow.state == "failed" and slow.error == "the row ran out of time (3.0 s)"
    assert slow.duration < 15  # interrupted, not waited for (the model takes 30 s)
    assert quick.state == "completed"
    listed = json.loads(kit.hermes("batch", "list", "--json", env=env).stdout)
    assert [(r["run"], r["completed"], r["failed"]) for r in listed] == [("t", 1, 1)]


def test_a_run_whose_first_rows_all_fail_alike_stops(tmp_path, fake_model, kit: Any):
    env = kit.make_home(tmp_path / "home", fake_model)
    dataset = kit.write_dataset(tmp_path / "d.jsonl", [{"prompt": "FAIL same"}] * 6)
    args = ("--name", "e", "--workers", "1", "--max-attempts", "1", "--json")
    status = json.loads(kit.hermes("batch", "run", str(dataset), *args, env=env).stdout)
    assert status["state"] == "stopped" and status["failed"] >= 3 and status["pending"] >= 1
    assert status["failed"] + status["pending"] == 6  # the rest were not tried
    assert re.match(
        r"the first \d rows failed alike: .*cannot answer FAIL same", status["stop_reason"]
    )
    assert len(fake_model.model_requests) == status["failed"]


def test_a_rate_limit_per_provider_spaces_the_calls_of_every_worker(tmp_path, fake_model, kit: Any):
    env = kit.make_home(tmp_path / "home", fake_model)
    dataset = kit.write_dataset(tmp_path / "d.jsonl", [{"prompt": f"r{n}"} for n in range(4)])
    args = ("--name", "rl", "--workers", "2", "--rate-limit", "custom=120", "--json")
    ran = kit.hermes("batch", "run", str(dataset), *args, env=env)
    assert json.loads(ran.stdout)["completed"] == 4, ran.stderr
    times = sorted(r.received_at for r in fake_model.model_requests)
    assert len(times) == 4
    # 120 a minute: the calls start 0.5 s apart, whichever worker makes them (they arrive
    # a little later or earlier than they start, as the machine's load has it)
    gaps = [b - a for a, b in zip(times, times[1:], strict=False)]
    assert times[-1] - times[0] >= 1.4 and min(gaps) >= 0.25, gaps
    other = kit.hermes("batch", "run", str(dataset), "--name", "x", "--rate-limit", "a=b", env=env)
    assert other.returncode == 1 and "PROVIDER=N" in other.stderr


def test_a_filter_that_breaks_fails_its_row(tmp_path, fake_model):
    from hermes_batch.dataset import Row
    from hermes_batch.rowrun import run_row

    from hermes_core.testing import make_runner

    def broken(row: Any, output: Any) -> str | None:
        raise KeyError("messages")

    home = tmp_path / "home"
    env_config = {
        "model": {
            "provider": "custom",
            "base_url": fake_model.openai_base_url,
            "default": "m",
            "api_key": "x",
        },
        "toolsets": [],
        "agent": {"api_max_retries": 0},
    }
    runner = make_runner(scripted=False, plugins=["openai"], home=home, config=env_config)
    table = SQLiteRunTable(tmp_path / "batch.db")
    table.create_run("b", "/d.jsonl", "ab" * 32, {"dataset_dir": str(tmp_path)})
    table.add_rows("b", [Row("only", 1, {"prompt": "hello"})])
    claim = table.claim("b", "here:1", 30)
    assert claim is not None
    result = run_row(
        runner=runner,
        store=runner.session_store,
        table=table,
        claim=claim,
        settings=table.run("b").settings,
        run_dir=tmp_path / "run",
        filters=[("broken", broken)],
    )
    assert result.state == "failed"
    [row] = table.rows("b")
    assert row.state == "failed" and row.error == "the filter broken failed: KeyError: 'messages'"
