"""Writing a run's outputs: one JSON line per row in dataset order (ShareGPT trajectories or
OpenAI messages) and ``statistics.json``, each written to a temporary file and moved into
place, so a kill never leaves a truncated file."""

from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from .table import RunTable
from .trajectory import to_openai, to_sharegpt, tool_stats


def _atomic(path: Path) -> tuple[int, str]:
    path.parent.mkdir(parents=True, exist_ok=True)
    return tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)


def export(
    table: RunTable, name: str, fmt: str, states: Sequence[str], target: Path
) -> tuple[int, Path]:
    """Write the rows of run ``name`` in ``states`` that have an output to ``target`` in
    format ``fmt`` (``sharegpt`` or ``openai``), and the run's statistics beside it; returns
    how many rows were written and where the statistics are."""
    convert = to_sharegpt if fmt == "sharegpt" else to_openai
    fd, tmp = _atomic(target)
    written = 0
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as out:
            for record in table.rows(name, list(states)):
                if record.output is None:
                    continue
                line = json.dumps(convert(record.output), ensure_ascii=False, sort_keys=True)
                out.write(line + "\n")
                written += 1
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, target)
    except BaseException:
        os.unlink(tmp)
        raise
    stats_path = target.parent / "statistics.json"
    fd, tmp = _atomic(stats_path)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        json.dump(statistics(table, name), out, indent=2, sort_keys=True)
    os.replace(tmp, stats_path)
    return written, stats_path


def statistics(table: RunTable, name: str) -> dict[str, Any]:
    """The run's figures: rows by state, success rate, tool use, tokens, cost and time per
    row (read a few hundred rows at a time; only each row's duration is kept)."""
    counts = table.counts(name)
    finished = counts["completed"] + counts["failed"] + counts["discarded"]
    tools: dict[str, dict[str, int]] = {}
    durations: list[float] = []
    attempts = 0
    for record in table.rows(name):
        attempts += record.attempts
        if record.state in ("completed", "failed", "discarded"):
            durations.append(record.duration)
        if record.output is not None:
            for tool, entry in tool_stats(record.output.get("messages") or []).items():
                into = tools.setdefault(tool, {"count": 0, "success": 0, "failure": 0})
                for k, v in entry.items():
                    into[k] += v
    durations.sort()
    return {
        "run": name,
        "rows": counts.total,
        "states": dict(sorted(counts.states.items())),
        "success_rate": (counts["completed"] / finished) if finished else 0.0,
        "attempts": attempts,
        "lost_attempts": counts.lost_attempts,
        "input_tokens": counts.input_tokens,
        "output_tokens": counts.output_tokens,
        "cost_usd": round(counts.cost_usd, 6),
        "seconds_per_row": {
            "median": durations[len(durations) // 2] if durations else 0.0,
            "mean": (sum(durations) / len(durations)) if durations else 0.0,
            "max": durations[-1] if durations else 0.0,
        },
        "tool_stats": dict(sorted(tools.items())),
    }
