"""Each row in its own world: toolsets sampled per row from a recorded seed, its own workspace
(filled from the row's ``cwd`` and ``files``), its own session, and the sandbox that keeps
it out of the other rows' workspaces and out of hermes's home."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from hermes_batch.rowrun import workspace_of
from hermes_batch.sampling import parse_probabilities, row_seed, sample_toolsets
from hermes_batch.table_sqlite import SQLiteRunTable

from hermes_hookspecs import HermesError


def test_sampling_is_reproducible_independent_and_never_empty():
    settings = {"seed": 7, "toolset_probs": {"web": 0.5, "terminal": 0.5, "file": 0.1}}
    keys = [f"row-{n}" for n in range(400)]
    drawn = [sample_toolsets(settings, key) for key in keys]
    assert drawn == [sample_toolsets(settings, key) for key in keys]  # same seed, same draw
    assert all(toolsets for toolsets, _seed in drawn)  # at least one on
    assert {seed for _t, seed in drawn} == {row_seed(7, key) for key in keys}
    web = sum("web" in toolsets for toolsets, _ in drawn) / len(drawn)
    both = sum({"web", "terminal"} <= set(t) for t, _ in drawn) / len(drawn)
    assert 0.4 < web < 0.65 and 0.17 < both < 0.35  # independent draws (about 1/4 together)
    other = [sample_toolsets({**settings, "seed": 8}, key)[0] for key in keys]
    assert other != [t for t, _ in drawn]
    always = sample_toolsets({"toolsets": ["todo"], "toolset_probs": {"web": 0.0}}, "k")[0]
    assert always == ["todo"]
    assert sample_toolsets(settings, "k", ["memory"])[0] == ["memory"]  # the row's own
    assert sample_toolsets({}, "k")[0] is None  # the configured toolsets
    assert parse_probabilities(["web=0.25", " file = 1"]) == {"web": 0.25, "file": 1.0}
    for bad in ("web", "web=x", "=0.5", "web=1.5"):
        with pytest.raises(HermesError, match="NAME=P"):
            parse_probabilities([bad])


def test_sampled_toolsets_are_offered_and_recorded(tmp_path, fake_model, kit: Any):
    folder = tmp_path / "home"
    env = kit.make_home(folder, fake_model)
    rows = [{"id": f"r{n}", "prompt": f"row {n}"} for n in range(6)]
    dataset = kit.write_dataset(tmp_path / "d.jsonl", rows)
    args = ("--toolset-prob", "todo=0.5", "--toolset-prob", "memory=0.5", "--seed", "3")
    ran = kit.hermes("batch", "run", str(dataset), "--name", "s", "--workers", "1", *args, env=env)
    assert ran.returncode == 0, ran.stderr
    table = SQLiteRunTable(folder / "batch.db")
    settings = table.run("s").settings
    offered = {}
    for request in fake_model.model_requests:
        names = sorted({t["function"]["name"] for t in request.json.get("tools") or []})
        user = next(m for m in request.json["messages"] if m["role"] == "user")
        offered[str(user["content"])] = names
    for record in table.rows("s"):
        expected, seed = sample_toolsets(settings, record.key)
        assert (record.toolsets, record.seed) == (expected, seed)
        tools = offered[record.data["prompt"]]
        assert ("todo" in tools) == ("todo" in (expected or []))
        assert ("memory" in tools) == ("memory" in (expected or []))
        assert record.output is not None and record.output["toolsets"] == expected


def test_a_row_cannot_see_another_rows_workspace_or_the_home(tmp_path, fake_model, kit: Any):
    folder = tmp_path / "home"
    env = kit.make_home(folder, fake_model)
    project = tmp_path / "project"
    (project / "src").mkdir(parents=True)
    (project / "src" / "main.py").write_text("print('hi')\n")
    other = workspace_of(folder / "batch" / "w", "a") / "secret.txt"
    rows = [
        {"id": "a", "prompt": "keep it", "files": {"secret.txt": "row-a-secret"}},
        {"id": "b", "prompt": f"TERMINAL cat {other}"},
        {"id": "c", "prompt": f"TERMINAL cat {folder}/config.yaml"},
        {"id": "d", "prompt": "TERMINAL cat src/main.py", "cwd": "project"},
    ]
    dataset = kit.write_dataset(tmp_path / "d.jsonl", rows)
    ran = kit.hermes(
        "batch",
        "run",
        str(dataset),
        "--name",
        "w",
        "--workers",
        "1",
        "--toolsets",
        "terminal",
        env=env,
    )
    assert ran.returncode == 0, ran.stderr
    assert other.read_text() == "row-a-secret"  # it is there, outside the sandbox
    table = SQLiteRunTable(folder / "batch.db")
    seen = {}
    for record in table.rows("w"):
        assert record.state == "completed", record.error
        assert record.output is not None
        results = [m for m in record.output["messages"] if m["role"] == "tool"]
        seen[record.key] = json.dumps(results)
    assert "row-a-secret" not in seen["b"] and "No such file" in seen["b"]
    assert "api_key" not in seen["c"] and "No such file" in seen["c"]
    assert "print('hi')" in seen["d"]  # the row's cwd, copied into its workspace
    assert (project / "src" / "main.py").read_text() == "print('hi')\n"
    sessions = {r.session_id for r in table.rows("w")}
    assert len(sessions) == 4


def test_files_and_folders_outside_their_place_are_refused(tmp_path, fake_model, kit: Any):
    folder = tmp_path / "home"
    env = kit.make_home(folder, fake_model)
    (tmp_path / "data").mkdir()
    rows = [
        {"id": "x", "prompt": "hi", "files": {"../escape.txt": "no"}},
        {"id": "y", "prompt": "hi", "cwd": str(folder)},
        {"id": "z", "prompt": "hi", "images": ["../home/config.yaml"]},
    ]
    dataset = kit.write_dataset(tmp_path / "data" / "d.jsonl", rows)
    ran = kit.hermes("batch", "run", str(dataset), "--name", "f", "--max-attempts", "1", env=env)
    assert ran.returncode == 0, ran.stderr
    x, y, z = SQLiteRunTable(folder / "batch.db").rows("f")
    assert x.state == "failed" and "outside the row's workspace" in str(x.error)
    assert y.state == "failed" and "outside the dataset's folder" in str(y.error)
    assert z.state == "failed" and "outside the dataset's folder" in str(z.error)
    assert fake_model.model_requests == []  # nothing of it reached the model
    assert not (folder / "batch" / "f" / "workspaces" / "escape.txt").exists()
    assert not Path(folder / "batch" / "f" / "escape.txt").exists()


PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d49484452000000010000000108060000001f15c489"
    "0000000d49444154789c6360000002000154a24f5d0000000049454e44ae426082"
)


def test_a_rows_images_reach_the_model(tmp_path, fake_model, kit: Any):
    env = kit.make_home(tmp_path / "home", fake_model)
    (tmp_path / "pics").mkdir()
    (tmp_path / "pics" / "dot.png").write_bytes(PNG)
    rows = [{"id": "img", "prompt": "what is this", "images": ["pics/dot.png"]}]
    dataset = kit.write_dataset(tmp_path / "d.jsonl", rows)
    ran = kit.hermes("batch", "run", str(dataset), "--name", "i", env=env)
    assert ran.returncode == 0 and "1 completed" in ran.stdout, ran.stderr
    [request] = fake_model.model_requests
    user = next(m for m in request.json["messages"] if m["role"] == "user")
    assert any(part.get("type") == "image_url" for part in user["content"])
    missing = kit.write_dataset(tmp_path / "m.jsonl", [{"prompt": "x", "images": ["nope.png"]}])
    ran = kit.hermes("batch", "run", str(missing), "--name", "m", env=env)
    assert "1 failed" in ran.stdout
