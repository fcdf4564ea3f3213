"""Where a run stands, on a terminal: one line redrawn in place while it runs (rows done and
failed, rate, tokens, cost, time left), and a summary line at the end."""

from __future__ import annotations

import sys
import time
from typing import TextIO

from .schema import Counts, RunInfo


def summary_line(name: str, state: str, reason: str | None, counts: Counts) -> str:
    """One line about run ``name``."""
    why = f" ({reason})" if reason else ""
    return (
        f"{name}: {state}{why}; {counts.total} rows: {counts['completed']} completed, "
        f"{counts['failed']} failed, {counts['discarded']} discarded, {counts['running']} "
        f"running, {counts['pending']} pending; {counts.input_tokens + counts.output_tokens} "
        f"tokens, ${counts.cost_usd:.4f}"
    )


def _duration(seconds: float) -> str:
    seconds = int(seconds)
    hours, rest = divmod(seconds, 3600)
    return f"{hours}h{rest // 60:02d}m" if hours else f"{rest // 60}m{rest % 60:02d}s"


class Progress:
    """A progress line on ``stream`` (standard error), drawn only when it is a terminal."""

    def __init__(self, enabled: bool = True, stream: TextIO | None = None) -> None:
        self.stream = stream or sys.stderr
        self.enabled = enabled and self.stream.isatty()
        self.started = time.monotonic()
        self.first_done: int | None = None
        self._drawn = False

    def update(self, counts: Counts, run: RunInfo) -> None:
        """Redraw the line for ``counts``."""
        if not self.enabled:
            return
        done = counts["completed"] + counts["failed"] + counts["discarded"]
        if self.first_done is None:
            self.first_done = done
        elapsed = max(time.monotonic() - self.started, 1e-6)
        rate = (done - self.first_done) / elapsed
        left = counts["pending"] + counts["running"]
        eta = _duration(left / rate) if rate > 0 else "?"
        line = (
            f"{run.name}: {done}/{counts.total} done ({counts['failed']} failed, "
            f"{counts['discarded']} discarded), {counts['running']} running, {rate:.2f} rows/s, "
            f"{counts.input_tokens + counts.output_tokens} tokens, ${counts.cost_usd:.4f}, "
            f"ETA {eta}"
        )
        self.stream.write("\r\x1b[2K" + line)
        self.stream.flush()
        self._drawn = True

    def close(self) -> None:
        """End the line."""
        if self._drawn:
            self.stream.write("\n")
            self.stream.flush()
