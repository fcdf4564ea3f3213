"""The progress line a run draws on a terminal, and the summary line."""

from __future__ import annotations

import io

from hermes_batch.progress import Progress, summary_line
from hermes_batch.schema import Counts, RunInfo


class Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def _counts(done: int) -> Counts:
    return Counts(
        states={"completed": done, "failed": 1, "pending": 10 - done, "running": 2},
        input_tokens=900,
        output_tokens=100,
        cost_usd=0.5,
    )


def test_the_progress_line_on_a_terminal_only():
    run = RunInfo("r", "/d", "x", {}, 0.0, "running")
    screen = Terminal()
    progress = Progress(stream=screen)
    progress.update(_counts(0), run)
    progress.update(_counts(4), run)
    progress.close()
    last = screen.getvalue().split("\r\x1b[2K")[-1]
    assert last.startswith("r: 5/13 done (1 failed, 0 discarded), 2 running, ")
    assert "1000 tokens, $0.5000, ETA " in last and last.endswith("\n")
    assert "ETA ?" not in last  # a rate once rows were done
    quiet = io.StringIO()
    Progress(stream=quiet).update(_counts(1), run)  # not a terminal: nothing drawn
    Progress(enabled=False, stream=Terminal()).close()
    assert quiet.getvalue() == ""
    line = summary_line("r", "stopped", "interrupted", _counts(3))
    assert line == (
        "r: stopped (interrupted); 13 rows: 3 completed, 1 failed, 0 discarded, 2 running, "
        "7 pending; 1000 tokens, $0.5000"
    )
