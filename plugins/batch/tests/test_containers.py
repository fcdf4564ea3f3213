"""Rows in containers: a row's ``image`` (or the run's ``--image``) runs its commands in a
container of that image on the real test engine, with a copy of the row's workspace as the
container's working folder; each row its own container, removed afterwards; the image
recorded in the run table. Under CI a missing engine fails these tests, elsewhere they are
skipped."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hermes_batch.rowrun import workspace_of
from hermes_batch.table_sqlite import SQLiteRunTable

from hermes_core.testing.services import service_variables, unavailable

HINT = "start it with: bash .ci/services.sh start docker"


@pytest.fixture(scope="module")
def engine() -> Iterator[tuple[str, str, Any]]:
    """The test engine's address, its busybox test image, and a client of it."""
    variables = service_variables()
    host = variables.get("HERMES_TEST_DOCKER_HOST") or variables.get("DOCKER_HOST")
    image = variables.get("HERMES_TEST_DOCKER_IMAGE")
    if not host or not image:
        unavailable("no test Docker engine configured (DOCKER_HOST unset)", HINT)
    try:
        import docker

        client = docker.DockerClient(base_url=host)
        client.ping()
        client.images.get(image)
    except Exception as exc:
        unavailable(f"the test Docker engine at {host} is not usable ({exc})", HINT)
    yield host, image, client
    client.close()


def _home(tmp_path: Path, fake_model: Any, kit: Any, host: str) -> tuple[Path, dict[str, str]]:
    folder = tmp_path / "home"
    extra = f"terminal:\n  docker_host: {host}\n  docker_pull: never\n"
    return folder, kit.make_home(folder, fake_model, extra)


def _tool_results(record: Any) -> str:
    assert record.output is not None, record.error
    return json.dumps([m for m in record.output["messages"] if m["role"] == "tool"])


def _hostname(record: Any) -> str:
    """The last line a row's one command printed before its exit code (its ``hostname``)."""
    assert record.output is not None, record.error
    [result] = [m for m in record.output["messages"] if m["role"] == "tool"]
    return str(result["content"]).splitlines()[-2]


def _leftovers(client: Any, hostnames: list[str]) -> list[str]:
    """Containers of the engine, live or stopped, whose id starts with one of ``hostnames``
    (a container's host name is the start of its id)."""
    containers = client.containers.list(all=True, filters={"label": "hermes.managed=1"})
    return [c.name for c in containers if any(c.id.startswith(h) for h in hostnames)]


def test_rows_run_in_their_own_container_of_their_image(
    tmp_path: Path, fake_model: Any, kit: Any, engine: tuple[str, str, Any]
) -> None:
    host, image, client = engine
    folder, env = _home(tmp_path, fake_model, kit, host)
    (tmp_path / "project").mkdir()
    (tmp_path / "project" / "data.txt").write_text("from-the-cwd\n")
    other = workspace_of(folder / "batch" / "c", "a") / "note.txt"
    rows = [
        {
            "id": "a",
            "prompt": "TERMINAL cat note.txt; ls /.dockerenv; hostname",
            "image": image,
            "files": {"note.txt": "row-a-note"},
        },
        {"id": "b", "prompt": f"TERMINAL cat {other}; hostname", "image": image},
        {"id": "c", "prompt": f"TERMINAL cat {folder}/config.yaml", "image": image},
        {
            "id": "d",
            "prompt": "TERMINAL cat data.txt; echo made > made.txt; pwd",
            "image": image,
            "cwd": "project",
        },
        {"id": "e", "prompt": "TERMINAL cat note.txt", "files": {"note.txt": "local-note"}},
    ]
    dataset = kit.write_dataset(tmp_path / "d.jsonl", rows)
    args = ("--name", "c", "--workers", "2", "--toolsets", "terminal")
    ran = kit.hermes("batch", "run", str(dataset), *args, env=env, timeout=180)
    assert ran.returncode == 0, ran.stderr
    table = SQLiteRunTable(folder / "batch.db")
    records = {r.key: r for r in table.rows("c")}
    assert {k: r.state for k, r in records.items()} == dict.fromkeys("abcde", "completed"), {
        k: r.error for k, r in records.items()
    }
    seen = {key: _tool_results(record) for key, record in records.items()}
    assert "row-a-note" in seen["a"] and "/.dockerenv" in seen["a"]  # in a container
    assert "No such file" not in seen["a"]
    assert "row-a-note" not in seen["b"] and "No such file" in seen["b"]
    assert "api_key" not in seen["c"] and "No such file" in seen["c"]
    assert "from-the-cwd" in seen["d"] and "/workspace" in seen["d"]
    copied = workspace_of(folder / "batch" / "c", "d")
    assert (copied / "data.txt").is_file() and not (copied / "made.txt").exists()
    assert not (tmp_path / "project" / "made.txt").exists()  # written in the container only
    assert "local-note" in seen["e"] and "dockerenv" not in seen["e"]
    names = [_hostname(records[k]) for k in ("a", "b")]
    assert names[0] != names[1] and all(len(n) == 12 for n in names)  # two rows, two containers
    assert {k: r.image for k, r in records.items()} == {**dict.fromkeys("abcd", image), "e": None}
    assert _leftovers(client, names) == []  # each removed with its row's session
    status = kit.hermes("batch", "status", "c", "--rows", "completed", "--json", env=env)
    assert {r["id"]: r["image"] for r in json.loads(status.stdout)["row_list"]}["a"] == image


def test_a_run_wide_image_and_rows_whose_container_cannot_run(
    tmp_path: Path, fake_model: Any, kit: Any, engine: tuple[str, str, Any]
) -> None:
    host, image, client = engine
    folder, env = _home(tmp_path, fake_model, kit, host)
    rows = [
        {"id": "all", "prompt": "TERMINAL ls /.dockerenv; hostname"},
        {"id": "missing", "prompt": "TERMINAL ls", "image": "local/no-such-image:never"},
        {"id": "bad", "prompt": "TERMINAL ls", "image": "Not An Image"},
    ]
    dataset = kit.write_dataset(tmp_path / "d.jsonl", rows)
    args = ("--name", "w", "--workers", "1", "--toolsets", "terminal", "--image", image)
    ran = kit.hermes("batch", "run", str(dataset), *args, "--max-attempts", "1", env=env)
    assert ran.returncode == 0, ran.stderr
    records = {r.key: r for r in SQLiteRunTable(folder / "batch.db").rows("w")}
    assert records["all"].state == "completed" and records["all"].image == image
    assert "/.dockerenv" in _tool_results(records["all"])
    missing, bad = records["missing"], records["bad"]
    assert missing.state == "failed" and missing.image == "local/no-such-image:never"
    assert "container cannot run" in str(missing.error) and "no-such-image" in str(missing.error)
    assert bad.state == "failed" and "not a valid image reference" in str(bad.error)
    prompts = [
        next(m for m in r.json["messages"] if m["role"] == "user")["content"]
        for r in fake_model.model_requests
    ]
    assert all("ls /.dockerenv" in str(p) for p in prompts)  # failed rows reached no model
    assert _leftovers(client, [_hostname(records["all"])]) == []
    refused = kit.hermes(
        "batch", "run", str(dataset), "--name", "x", "--image", "Bad Image", env=env
    )
    assert refused.returncode != 0 and "Traceback" not in refused.stderr
    assert "--image" in refused.stderr and "not a valid image reference" in refused.stderr
    empty = kit.write_dataset(tmp_path / "e.jsonl", [{"prompt": "hi", "image": ""}])
    refused = kit.hermes("batch", "run", str(empty), "--name", "y", env=env)
    assert refused.returncode != 0 and "e.jsonl:1: 'image'" in refused.stderr
