"""``chat --resume`` start-up at 1,000, 10,000 and 50,000 stored messages, next to a fresh chat;
run as ``python benchmarks/sessions.py --only resume`` (its module docstring says what is
measured)."""

from __future__ import annotations

import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from sessions import Corpus

from hermes_core.session_store import INSERT_MESSAGE_SQL, SQLiteSessionStore, iter_message_rows
from hermes_core.testing import FakeLLM, text

RESUME_SIZES = (1_000, 10_000, 50_000)


def _first_request(llm: FakeLLM, argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Seconds from the start of ``argv`` to its first request at ``llm``, and the CPU seconds
    of the whole process (user and system; less sensitive to a busy machine)."""
    llm.add(text("ok"))
    before = len(llm.requests)
    started = time.time()
    proc = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(proc.pid, 0)
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        error = proc.stderr.read().decode() if proc.stderr else ""
        raise SystemExit(f"{' '.join(argv[:4])} failed: {error.strip()}")
    return llm.requests[before].received_at - started, usage.ru_utime + usage.ru_stime


def bench_resume(runs: int) -> None:
    """Start-up of ``chat --resume`` at each of :data:`RESUME_SIZES`, next to a fresh chat."""
    hermes = shutil.which("hermes", path=str(Path(sys.executable).parent)) or "hermes"
    with tempfile.TemporaryDirectory() as home, FakeLLM() as llm:
        Path(home, "config.yaml").write_text(
            f"model:\n  default: bench\n  provider: custom\n  base_url: {llm.openai_base_url}\n"
            "  context_length: 100000000\ncontext:\n  engine: compressor\n"
        )
        SQLiteSessionStore(Path(home, "sessions.db")).close()  # the schema
        conn = sqlite3.connect(Path(home, "sessions.db"), isolation_level=None)
        corpus, now = Corpus(), time.time()
        for size in RESUME_SIZES:
            sid = f"resume-{size}"
            conn.execute(
                "INSERT INTO sessions (id, source, model, provider, started_at, message_count) "
                "VALUES (?, 'cli', 'bench', 'custom', ?, ?)",
                (sid, now, size),
            )
            conn.executemany(
                INSERT_MESSAGE_SQL, iter_message_rows(corpus.conversation(size, sid), sid, now)
            )
        conn.close()
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
        env.update(HERMES_HOME=home, HERMES_PLUGINS="openai,compressor")
        argv = [hermes, "chat", "-q", "hello", "--toolsets", ""]
        _first_request(llm, argv, env)  # warms the file cache
        fresh = [_first_request(llm, argv, env) for _ in range(runs)]
        base = statistics.median(f[0] for f in fresh)
        base_cpu = statistics.median(f[1] for f in fresh)
        print(
            f"resume start-up, compression on (medians of {runs} runs): start to first request,"
            " and CPU of the whole process"
        )
        print(f"  fresh chat           {base:6.3f} s              cpu {base_cpu:6.3f} s")
        for size in RESUME_SIZES:
            figures = [
                _first_request(llm, [*argv, "--resume", f"resume-{size}"], env) for _ in range(runs)
            ]
            resumed = statistics.median(f[0] for f in figures)
            cpu = statistics.median(f[1] for f in figures)
            print(
                f"  resume {size:>6,} msgs  {resumed:6.3f} s  ({resumed - base:+.3f} s)"
                f"  cpu {cpu:6.3f} s  ({cpu - base_cpu:+.3f} s)"
            )
        _resume_parts(Path(home, "sessions.db"), f"resume-{RESUME_SIZES[-1]}", runs)


def _resume_parts(db: Path, session_id: str, runs: int) -> None:
    """Print the CPU seconds of the parts of a resume that grow with the session, measured in
    this process: reading the session from the store, and the compressor's token estimate."""
    from hermes_engine_compressor.tokens import estimate

    reads, estimates = [], []
    with SQLiteSessionStore(db) as store:
        for _ in range(runs):
            started = time.process_time()
            messages = store.get_clean_messages(session_id)
            reads.append(time.process_time() - started)
            started = time.process_time()
            estimate(messages)
            estimates.append(time.process_time() - started)
    print(
        f"  of which, in this process at {len(messages):,} msgs: reading them "
        f"{statistics.median(reads):.3f} s, estimating their tokens "
        f"{statistics.median(estimates):.3f} s (CPU)"
    )
