"""``hermes acp``: medians over several runs of

- the time from spawning ``hermes acp`` to its answer to ``initialize`` (cold start: no SDK
  import before the command needs it);
- the latency of a prompt's first ``session/update`` (from sending ``session/prompt`` to the
  first streamed chunk, the fake model answering at once);
- the time per streamed update of a 2,000-chunk answer, and how much the agent's memory (RSS)
  grows from one such answer to the next (streaming must not keep what it sent);
- ``session/list`` (one page) with 10,000 stored sessions.

The model is the test kit's fake LLM server on loopback; the protocol is spoken line by line
over the process's stdio, as an editor does.

Usage: python benchmarks/acp.py [--runs 5]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import FakeLLM
from hermes_hookspecs import SessionInfo

HERMES = shutil.which("hermes", path=os.path.dirname(sys.executable)) or "hermes"


class Agent:
    """A ``hermes acp`` process spoken to line by line."""

    def __init__(self, home: Path, cwd: Path) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
        env.update(HERMES_HOME=str(home), OPENAI_API_KEY="bench", HERMES_PLUGINS="acp,openai")
        self.started = time.perf_counter()
        self.proc = subprocess.Popen(
            [HERMES, "acp"],
            env=env,
            cwd=cwd,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            text=True,
        )
        self.next_id = 0

    def send(self, method: str, params: dict[str, Any]) -> int:
        """Send a request; its id."""
        assert self.proc.stdin is not None
        self.next_id += 1
        frame = {"jsonrpc": "2.0", "id": self.next_id, "method": method, "params": params}
        self.proc.stdin.write(json.dumps(frame) + "\n")
        self.proc.stdin.flush()
        return self.next_id

    def read(self) -> dict[str, Any]:
        """The next frame."""
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError("hermes acp ended")
        frame: dict[str, Any] = json.loads(line)
        return frame

    def answer(self, request_id: int) -> dict[str, Any]:
        """Read until the answer to ``request_id``."""
        while True:
            frame = self.read()
            if frame.get("id") == request_id and "method" not in frame:
                return frame

    def rss_kb(self) -> int:
        """The process's resident memory."""
        for line in Path(f"/proc/{self.proc.pid}/status").read_text().splitlines():
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
        return 0

    def close(self) -> None:
        """End the process (stdin closed, as an editor does)."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        self.proc.wait(timeout=30)


def _home(root: Path, base_url: str) -> Path:
    home = root / "home"
    home.mkdir(exist_ok=True)
    (home / "config.yaml").write_text(
        f"model:\n  default: fake-model\n  provider: custom\n  base_url: {base_url}\n"
        "toolsets: []\n",
        encoding="utf-8",
    )
    return home


def _initialize(home: Path, cwd: Path) -> tuple[Agent, float]:
    agent = Agent(home, cwd)
    agent.answer(agent.send("initialize", {"protocolVersion": 1}))
    return agent, time.perf_counter() - agent.started


def _turn(agent: Agent, cwd: Path, chunks: int) -> tuple[float, float, int]:
    """(first update latency, seconds per update, updates) of one prompt."""
    session = agent.answer(agent.send("session/new", {"cwd": str(cwd), "mcpServers": []}))
    session_id = session["result"]["sessionId"]
    prompt = [{"type": "text", "text": "go"}]
    sent = time.perf_counter()
    request = agent.send("session/prompt", {"sessionId": session_id, "prompt": prompt})
    first = None
    updates = 0
    while True:
        frame = agent.read()
        update = (frame.get("params") or {}).get("update") or {}
        if update.get("sessionUpdate") == "available_commands_update":
            continue  # announced after session/new's answer, not a part of the turn
        if frame.get("method") == "session/update":
            updates += 1
            if first is None:
                first = time.perf_counter()
        elif frame.get("id") == request:
            break
    done = time.perf_counter()
    assert first is not None
    return first - sent, (done - first) / max(1, updates - 1), updates


def main() -> None:
    """Print the medians."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp, FakeLLM() as llm:
        root = Path(tmp)
        home = _home(root, llm.openai_base_url)
        starts, firsts, per_update, growth = [], [], [], []
        for _ in range(args.runs):
            agent, took = _initialize(home, root)
            starts.append(took)
            llm.add({"text": "a short answer", "chunks": 4})
            first, _, _ = _turn(agent, root, 4)
            firsts.append(first)
            text = "word " * 2000
            llm.add({"text": text, "chunks": 2000})
            _turn(agent, root, 2000)
            before = agent.rss_kb()
            llm.add({"text": text, "chunks": 2000})
            _, each, updates = _turn(agent, root, 2000)
            per_update.append(each)
            growth.append(agent.rss_kb() - before)
            agent.close()
        print(f"spawn to initialize answered: {statistics.median(starts) * 1000:.0f} ms")
        print(f"prompt to first update:        {statistics.median(firsts) * 1000:.1f} ms")
        print(
            f"per streamed update ({updates} updates): "
            f"{statistics.median(per_update) * 1000:.3f} ms; RSS growth from one such answer "
            f"to the next: {statistics.median(growth) / 1024:.2f} MiB"
        )
        store = SQLiteSessionStore(home / "sessions.db")
        now = time.time()
        for i in range(10_000):
            store.create_session(
                SessionInfo(id=f"session_{i:016x}", source="acp", started_at=now - i, title=f"t{i}")
            )
        agent, _ = _initialize(home, root)
        lists = []
        for _ in range(args.runs * 4):
            sent = time.perf_counter()
            agent.answer(agent.send("session/list", {}))
            lists.append(time.perf_counter() - sent)
        agent.close()
        print(f"session/list, 10,000 sessions: {statistics.median(lists) * 1000:.1f} ms")


if __name__ == "__main__":
    main()
