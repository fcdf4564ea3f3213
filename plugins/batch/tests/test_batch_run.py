"""``hermes batch`` end to end in real processes against the fake LLM server: a run, its
status and exports (ShareGPT checked against a schema, OpenAI messages against the transcript
rules), and the exactly-once guarantee through a real SIGKILL of a worker and then of the
coordinator, compared byte for byte with an uninterrupted run."""

from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path
from typing import Any

import jsonschema
from hermes_batch.dataset import Row
from hermes_batch.table_sqlite import SQLiteRunTable

from hermes_core.testing import FakeLLM, assert_valid_transcript, load_plugin

SHAREGPT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": [
        "id",
        "conversations",
        "completed",
        "partial",
        "api_calls",
        "toolsets_used",
        "tool_stats",
        "metadata",
    ],
    "properties": {
        "id": {"type": "string"},
        "conversations": {
            "type": "array",
            "minItems": 2,
            "items": {
                "type": "object",
                "required": ["from", "value"],
                "additionalProperties": False,
                "properties": {
                    "from": {"enum": ["system", "human", "gpt", "tool"]},
                    "value": {"type": "string"},
                },
            },
        },
        "completed": {"type": "boolean"},
        "partial": {"type": "boolean"},
        "api_calls": {"type": "integer", "minimum": 0},
        "toolsets_used": {"type": "array", "items": {"type": "string"}},
        "tool_stats": {
            "type": "object",
            "additionalProperties": {
                "type": "object",
                "required": ["count", "success", "failure"],
                "properties": {k: {"type": "integer"} for k in ("count", "success", "failure")},
            },
        },
        "metadata": {"type": "object", "required": ["row_id", "line", "seed", "usage"]},
    },
}


def _json(result: Any) -> Any:
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_loads_through_its_entry_point():
    record = load_plugin("batch")
    assert record.dist == "hermes-batch"


def test_a_run_its_status_and_both_exports(tmp_path, home, kit):
    folder, env = home
    dataset = kit.write_dataset(
        tmp_path / "d.jsonl",
        [
            {"prompt": "same"},
            {"prompt": "same"},  # a duplicate is a row of its own
            {"id": "tool", "prompt": "TOOL plan it", "files": {"notes/a.txt": "hi"}},
            {"id": "think", "prompt": "THINK hard"},
            {"id": "bad", "prompt": "FAIL now"},
        ],
    )
    ran = kit.hermes("batch", "run", str(dataset), "--name", "r1", "--workers", "2", env=env)
    assert ran.returncode == 0, ran.stderr
    assert ran.stdout.startswith("r1: finished; 5 rows: 4 completed, 1 failed")
    status = _json(kit.hermes("batch", "status", "r1", "--rows", "failed", "--json", env=env))
    assert (status["completed"], status["failed"], status["pending"]) == (4, 1, 0)
    [bad] = status["row_list"]
    assert bad["id"] == "bad" and "cannot answer FAIL now" in bad["error"]
    assert [a["outcome"] for a in bad["attempt_list"]] == ["retried", "failed"]  # --max-attempts 2
    assert len({a["session_id"] for a in bad["attempt_list"]}) == 2
    workspace = next((folder / "batch" / "r1" / "workspaces").glob("tool-*"))
    assert (workspace / "notes" / "a.txt").read_text() == "hi"

    exported = kit.hermes(
        "batch", "export", "r1", "--format", "sharegpt", "--only", "completed", env=env
    )
    assert exported.returncode == 0, exported.stderr
    lines = (folder / "batch" / "r1" / "r1.sharegpt.jsonl").read_text().splitlines()
    trajectories = [json.loads(line) for line in lines]
    for trajectory in trajectories:
        jsonschema.validate(trajectory, SHAREGPT_SCHEMA)
    assert [t["id"] for t in trajectories][2:] == ["tool", "think"]
    assert trajectories[0]["id"] != trajectories[1]["id"]
    tool = trajectories[2]
    assert tool["tool_stats"] == {"todo": {"count": 1, "success": 1, "failure": 0}}
    assert [c["from"] for c in tool["conversations"]] == ["system", "human", "gpt", "tool", "gpt"]
    assert "<tool_call>\n" in tool["conversations"][2]["value"]
    assert tool["conversations"][3]["value"].startswith("<tool_response>\n")
    think = trajectories[3]["conversations"][2]["value"]
    assert think.startswith("<think>\nthinking about THINK hard\n</think>")
    stats = json.loads((folder / "batch" / "r1" / "statistics.json").read_text())
    assert stats["states"] == {"completed": 4, "failed": 1} and stats["success_rate"] == 0.8
    assert stats["tool_stats"]["todo"]["count"] == 1

    target = tmp_path / "out.jsonl"
    assert (
        kit.hermes(
            "batch", "export", "r1", "--format", "openai", "-o", str(target), env=env
        ).returncode
        == 0
    )
    rows = [json.loads(line) for line in target.read_text().splitlines()]
    assert len(rows) == 5  # completed and failed rows by default
    for row in rows:
        assert row["messages"][0]["role"] == "system"
        if row["metadata"]["status"] == "completed":
            assert_valid_transcript(row["messages"])


def test_bad_input_is_one_line(tmp_path, home, kit):
    _folder, env = home
    missing = kit.hermes("batch", "run", str(tmp_path / "nope.jsonl"), "--name", "x", env=env)
    assert missing.returncode == 1 and missing.stderr.count("\n") == 1, missing.stderr
    broken = kit.write_dataset(tmp_path / "b.jsonl", [{"prompt": "ok"}])
    with broken.open("a") as handle:
        handle.write("{nope\n")
    bad = kit.hermes("batch", "run", str(broken), "--name", "x", env=env)
    assert bad.returncode == 1 and "b.jsonl:2: not valid JSON" in bad.stderr
    assert "Traceback" not in bad.stderr
    twice = kit.write_dataset(
        tmp_path / "t.jsonl", [{"id": 1, "prompt": "a"}, {"id": "1", "prompt": "b"}]
    )
    repeated = kit.hermes("batch", "run", str(twice), "--name", "x", env=env)
    assert repeated.returncode == 1
    assert repeated.stderr.strip().endswith("t.jsonl:2: the id '1' is used by line 1")
    fixed = kit.write_dataset(tmp_path / "t.jsonl", [{"id": 1, "prompt": "a"}])
    assert kit.hermes("batch", "run", str(fixed), "--name", "x", env=env).returncode == 0
    unknown = kit.hermes("batch", "status", "ghost", env=env)
    assert unknown.returncode == 1 and "no batch run named 'ghost'" in unknown.stderr
    name = kit.hermes("batch", "run", str(broken), "--name", "../x", env=env)
    assert name.returncode == 1 and "bad run name" in name.stderr
    prob = kit.hermes(
        "batch", "run", str(broken), "--name", "y", "--toolset-prob", "web=2", env=env
    )
    assert prob.returncode == 1 and "NAME=P" in prob.stderr


FIFTY = (
    [{"prompt": f"row {n}"} for n in range(40)]
    + [{"prompt": "row 3"}, {"prompt": "row 3"}]  # duplicates of a row: rows of their own
    + [{"id": f"slow-{n}", "prompt": f"SLOW {n}"} for n in range(4)]
    + [{"id": f"tool-{n}", "prompt": f"TOOL {n}"} for n in range(3)]
    + [{"id": "broken", "prompt": "FAIL always"}]
)


def _wait(predicate: Any, timeout: float = 60.0) -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = predicate()
        if found:
            return found
        time.sleep(0.05)
    raise AssertionError("timed out")


def _export(kit: Any, env: dict[str, str], folder: Path) -> bytes:
    assert kit.hermes("batch", "export", "r", env=env).returncode == 0
    return (folder / "batch" / "r" / "r.sharegpt.jsonl").read_bytes()


def test_sigkill_of_a_worker_and_the_coordinator_then_resume(
    tmp_path: Path, fake_model: FakeLLM, kit: Any
) -> None:
    assert len(FIFTY) == 50
    dataset = kit.write_dataset(tmp_path / "fifty.jsonl", FIFTY)
    folder = tmp_path / "home"
    args = ("batch", "run", str(dataset), "--name", "r", "--workers", "2", "--seed", "7")
    args += ("--lease-seconds", "2")

    env = kit.make_home(folder, fake_model)
    whole = kit.hermes(*args, env=env)  # the uninterrupted run
    assert whole.returncode == 0, whole.stderr
    expected = _export(kit, env, folder)
    shutil.rmtree(folder)  # the same home again: the same paths in the prompts

    env = kit.make_home(folder, fake_model)
    coordinator = kit.hermes_process(*args, env=env)
    table = _wait(lambda: (folder / "batch.db").exists() and SQLiteRunTable(folder / "batch.db"))

    def slow_row_running() -> Any:
        rows = list(table.rows("r", ["running"])) if table.get_run("r") else []
        return next((r for r in rows if r.key.startswith("slow")), None)

    victim = _wait(slow_row_running)
    worker_pid = int(str(victim.worker).rpartition(":")[2])
    os.kill(worker_pid, signal.SIGKILL)
    _wait(lambda: table.counts("r")["completed"] >= 20)
    coordinator.send_signal(signal.SIGKILL)
    coordinator.communicate(timeout=30)
    assert table.counts("r")["pending"] > 0  # killed mid-run

    resumed = kit.hermes("batch", "resume", "r", "--workers", "2", env=env)
    assert resumed.returncode == 0, resumed.stderr
    counts = table.counts("r")
    assert (counts["completed"], counts["failed"], counts.total) == (49, 1, 50)
    assert counts.lost_attempts >= 1
    lost = [a for a in table.attempts("r", victim.key) if a["outcome"] == "lost"]
    assert lost and lost[0]["session_id"] == victim.session_id
    for record in table.rows("r"):
        outcomes = [a["outcome"] for a in table.attempts("r", record.key)]
        assert outcomes.count("completed") == (record.state == "completed")
        assert "running" not in outcomes
    [broken] = table.rows("r", ["failed"])
    assert broken.key == "broken" and "cannot answer FAIL always" in str(broken.error)
    assert _export(kit, env, folder) == expected
    again = kit.hermes("batch", "resume", "r", env=env)  # nothing left: nothing runs, nothing paid
    assert again.returncode == 0 and "49 completed, 1 failed" in again.stdout
    assert _export(kit, env, folder) == expected


def test_a_run_killed_while_reading_its_dataset_reads_the_rest_on_resume(tmp_path, home, kit):
    from hermes_batch.dataset import dataset_hash

    folder, env = home
    rows = [{"prompt": f"row {n}"} for n in range(5)]
    dataset = kit.write_dataset(tmp_path / "d.jsonl", rows)
    digest = dataset_hash(dataset)
    table = SQLiteRunTable(folder / "batch.db")
    table.create_run("half", str(dataset), digest, {"dataset_dir": str(tmp_path)})
    table.add_rows("half", [Row(f"line-1@{digest[:12]}", 1, rows[0])])  # then the kill
    resumed = kit.hermes("batch", "resume", "half", "--json", env=env)
    assert resumed.returncode == 0, resumed.stderr
    assert json.loads(resumed.stdout)["completed"] == 5
    assert table.run("half").total_rows == 5

    table.create_run("changed", str(dataset), digest, {"dataset_dir": str(tmp_path)})
    kit.write_dataset(dataset, rows[:2])
    refused = kit.hermes("batch", "resume", "changed", env=env)
    assert refused.returncode == 1 and "changed or is gone" in refused.stderr


def test_workers_that_keep_failing_stop_the_run_with_their_last_words(tmp_path, home, kit):
    folder, env = home
    dataset = kit.write_dataset(tmp_path / "d.jsonl", [{"prompt": "a"}])
    table = SQLiteRunTable(folder / "batch.db")
    settings = {"filters": ["gone-plugin"], "dataset_dir": str(tmp_path)}  # uninstalled since
    table.create_run("w", str(dataset), "ab" * 32, settings)
    table.add_rows("w", [Row("only", 1, {"prompt": "a"})])
    table.set_run("w", state="ready")
    ran = kit.hermes("batch", "resume", "w", "--workers", "1", env=env)
    assert ran.returncode == 1 and "Traceback" not in ran.stderr
    assert "batch workers keep failing" in ran.stderr
    assert "no batch filter named 'gone-plugin'" in ran.stderr
    assert table.run("w").state == "stopped"
    [row] = table.rows("w")
    assert row.state == "pending" and row.attempts == 0  # nothing ran, nothing was paid


def test_the_ray_executor_without_ray_is_one_line(tmp_path, home, kit):
    import subprocess
    import sys

    _folder, env = home
    dataset = kit.write_dataset(tmp_path / "d.jsonl", [{"prompt": "a"}])
    code = "import sys; sys.modules['ray'] = None; " + kit.HERMES.removeprefix("import sys; ")
    args = ["batch", "run", str(dataset), "--name", "n", "--executor", "ray"]
    done = subprocess.run(
        [sys.executable, "-c", code, *args], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 1 and "Traceback" not in done.stderr
    assert done.stderr.strip().endswith(
        'the ray executor needs Ray: pip install "hermes-batch[ray]"'
    )
    status = json.loads(kit.hermes("batch", "status", "n", "--json", env=env).stdout)
    assert status["state"] == "stopped" and "needs Ray" in status["stop_reason"]
