"""The run table on SQLite and on a real PostgreSQL: claims that never hand one row to two
workers, writes fenced by the attempt, lost attempts, requeues, counts and streaming reads."""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hermes_batch.dataset import Row
from hermes_batch.table import MAX_LOST, RunTable
from hermes_batch.table_postgres import PostgresRunTable
from hermes_batch.table_sqlite import SQLiteRunTable

from hermes_hookspecs import HermesError


@pytest.fixture(params=["sqlite", "postgres"])
def opener(request: Any, tmp_path: Path) -> Iterator[Any]:
    """Opens connections to one run table (as separate processes would)."""
    made: list[RunTable] = []
    if request.param == "postgres":
        url = request.getfixturevalue("postgres_database")

        def open_one() -> RunTable:
            made.append(PostgresRunTable(url))
            return made[-1]
    else:

        def open_one() -> RunTable:
            made.append(SQLiteRunTable(tmp_path / "batch.db"))
            return made[-1]

    yield open_one
    for table in made:
        table.close()


def _run(table: RunTable, rows: int, **settings: Any) -> str:
    name = f"run-{uuid.uuid4().hex[:8]}"
    table.create_run(name, "/d.jsonl", "ab" * 32, settings)
    table.add_rows(name, (Row(f"k{n}", n + 1, {"prompt": f"p{n}"}) for n in range(rows)))
    return name


def test_two_connections_never_claim_one_row_twice(opener):
    first, second = opener(), opener()
    name = _run(first, 60)
    with pytest.raises(HermesError, match="exists already"):
        first.create_run(name, "/d.jsonl", "x", {})
    taken: list[list[str]] = [[], [], [], []]

    def take(table: RunTable, into: list[str]) -> None:
        while (claim := table.claim(name, "w", 30)) is not None:
            into.append(claim.key)

    tables = [first, second, opener(), opener()]
    threads = [threading.Thread(target=take, args=(t, taken[i])) for i, t in enumerate(tables)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    everything = [key for keys in taken for key in keys]
    assert sorted(everything) == sorted(f"k{n}" for n in range(60))
    assert first.counts(name)["running"] == 60


def test_writes_are_fenced_by_the_attempt(opener):
    table = opener()
    name = _run(table, 2)
    claim = table.claim(name, "host:1", 30)
    assert claim is not None and (claim.key, claim.attempt) == ("k0", 1)
    assert table.release_worker(name, "host:1", "worker 1 is gone") == 1
    assert not table.renew(claim, 30)
    assert not table.finish(claim, "completed", output={"id": "k0"}, usage=(5, 5, 1.0))
    again = table.claim(name, "host:2", 30)
    assert again is not None and (again.key, again.attempt) == ("k0", 2)
    assert again.session_id != claim.session_id
    assert table.finish(again, "completed", output={"id": "k0"}, usage=(5, 6, 0.5))
    assert not table.finish(again, "completed", output={"id": "k0"})  # once only
    counts = table.counts(name)
    assert (counts["completed"], counts.cost_usd, counts.output_tokens) == (1, 0.5, 6)
    assert table.run(name).spent_usd == 0.5
    assert [a["outcome"] for a in table.attempts(name, "k0")] == ["lost", "completed"]
    [done] = table.rows(name, ["completed"])
    assert done.output == {"id": "k0"} and done.session_id == again.session_id


def test_expired_leases_and_a_row_that_keeps_losing_its_worker(opener):
    table = opener()
    name = _run(table, 1)
    for n in range(MAX_LOST):
        claim = table.claim(name, f"h:{n}", 0.01)
        assert claim is not None
        assert table.release_expired(name, now=claim_time_far_ahead()) == 1
    [row] = table.rows(name)
    assert row.state == "failed" and f"{MAX_LOST} attempts lost" in str(row.error)
    assert table.claim(name, "h:9", 30) is None
    assert table.requeue(name, ["failed"]) == 1
    assert table.claim(name, "h:9", 30) is not None


def claim_time_far_ahead() -> float:
    import time

    return time.time() + 3600


def test_discarded_and_retried_rows_and_streamed_reads(opener):
    table = opener()
    name = _run(table, 450)
    first = table.claim(name, "h:1", 30)
    assert first is not None
    assert table.finish(first, "discarded", discard_reason="reasoning: none", output={"x": 1})
    second = table.claim(name, "h:1", 30)
    assert second is not None
    assert table.finish(second, "failed", retry=True, error="HTTP 500")
    assert table.counts(name)["pending"] == 449  # the failed row waits for its next attempt
    assert [r.line for r in table.rows(name, batch=100)] == list(range(1, 451))
    [discarded] = table.rows(name, ["discarded"])
    assert discarded.discard_reason == "reasoning: none"
    assert table.requeue(name, ["discarded"]) == 1
    assert table.counts(name)["discarded"] == 0
    loaded_again = table.add_rows(name, (Row(f"k{n}", n + 1, {"prompt": "x"}) for n in range(451)))
    assert loaded_again == 451 and table.counts(name).total == 451  # only the missing one added


def test_a_repeated_id_is_refused_wherever_it_is(opener):
    table = opener()
    name = _run(table, 3)
    with pytest.raises(HermesError, match="line 700: the id 'k1' is used by line 2"):
        table.add_rows(name, [Row("k1", 700, {"prompt": "again"})])
    with pytest.raises(HermesError, match="line 9: the id 'z' is used by line 8"):
        table.add_rows(name, [Row("z", 8, {"prompt": "a"}), Row("z", 9, {"prompt": "b"})])


def test_one_coordinator_at_a_time(opener):
    table = opener()
    name = _run(table, 1)
    assert table.take_coordinator(name, "here:1", lambda holder, beat: True) is None
    assert table.take_coordinator(name, "here:2", lambda holder, beat: True) == "here:1"
    seen: list[tuple[str, Any]] = []

    def gone(holder: str, beat: Any) -> bool:
        seen.append((holder, beat))
        return False

    assert table.take_coordinator(name, "here:2", gone) is None  # the first one is gone
    assert seen[0][0] == "here:1" and seen[0][1] is not None
    assert table.run(name).coordinator == "here:2"


def test_holder_alive_by_pid_here_and_by_heartbeat_elsewhere():
    import os
    import socket
    import time

    from hermes_batch.local import holder_alive

    here = socket.gethostname()
    assert holder_alive(f"{here}:{os.getpid()}", None)
    assert not holder_alive(f"{here}:999999999", time.time())
    assert holder_alive("elsewhere:1", time.time() - 5)
    assert not holder_alive("elsewhere:1", time.time() - 300)


def test_a_table_made_before_the_image_column_gets_it_when_opened(opener):
    table = opener()
    name = _run(table, 1)
    with table.transaction() as cur:
        cur.execute("ALTER TABLE batch_rows DROP COLUMN image")
    again = opener()
    claim = again.claim(name, "host:1", 30)
    assert claim is not None and again.finish(claim, "completed", image="busybox:1.36")
    [row] = again.rows(name)
    assert (row.state, row.image) == ("completed", "busybox:1.36")
