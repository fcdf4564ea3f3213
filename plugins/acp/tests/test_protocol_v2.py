"""Protocol version 2 (draft) behind ``acp.protocol_v2``, negotiated per connection: the prompt
is acknowledged at once, progress and the end come as ``state_update``, output as keyed
upserts, and no client file system. Plain JSON-RPC frames (the SDK speaks version 1 only) to a
real ``hermes acp``."""

from __future__ import annotations

import json
import queue
import subprocess
import threading
from pathlib import Path
from typing import Any

from acp_client import HERMES, hermes_env, write_config

from hermes_core.testing import FakeLLM, tool_call


class RawClient:
    """A client writing and reading JSON-RPC lines to a ``hermes acp`` subprocess."""

    def __init__(self, home: Path) -> None:
        self.process = subprocess.Popen(
            [HERMES, "acp"],
            env=hermes_env(home),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=open(home / "acp-stderr.log", "ab"),  # noqa: SIM115 - closed with the process
        )
        self.frames: queue.Queue[dict[str, Any]] = queue.Queue()
        self.seen: list[dict[str, Any]] = []
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.process.stdout is not None
        for line in self.process.stdout:
            self.frames.put(json.loads(line))

    def send(self, frame: dict[str, Any]) -> None:
        """Write one frame."""
        assert self.process.stdin is not None
        self.process.stdin.write(json.dumps({"jsonrpc": "2.0", **frame}).encode() + b"\n")
        self.process.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> int:
        """Send a request; its id."""
        self.next_id += 1
        self.send({"id": self.next_id, "method": method, "params": params})
        return self.next_id

    def until(self, done: Any, answer: Any = None) -> list[dict[str, Any]]:
        """Frames read until ``done(frame)``; requests from hermes are answered by
        ``answer(frame)``."""
        got = []
        while True:
            frame = self.frames.get(timeout=30)
            self.seen.append(frame)
            got.append(frame)
            if "method" in frame and "id" in frame and answer is not None:
                self.send({"id": frame["id"], "result": answer(frame)})
            if done(frame):
                return got

    def call(self, method: str, params: dict[str, Any]) -> Any:
        """A request's result."""
        wanted = self.request(method, params)
        got = self.until(lambda f: f.get("id") == wanted and "method" not in f)
        assert "result" in got[-1], got[-1]
        return got[-1]["result"]

    def close(self) -> None:
        """Close stdin and wait for the process."""
        assert self.process.stdin is not None
        self.process.stdin.close()
        self.process.wait(timeout=30)


def _turn(frame: dict[str, Any]) -> bool:
    """A ``session/update`` of the turn (not the commands announced after ``session/new``)."""
    update = frame.get("params", {}).get("update", {}) if frame.get("method") else {}
    return frame.get("method") == "session/update" and (
        update.get("sessionUpdate") != "available_commands_update"
    )


def _updates(frames: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [f["params"]["update"] for f in frames if _turn(f)]


def _idle(frame: dict[str, Any]) -> bool:
    update = frame.get("params", {}).get("update", {}) if frame.get("method") else {}
    return update.get("sessionUpdate") == "state_update" and update.get("state") == "idle"


def _start(home: Path, llm: FakeLLM, version: int, v2: bool = True) -> tuple[RawClient, Any]:
    write_config(home, llm.openai_base_url, extra=f"acp:\n  protocol_v2: {str(v2).lower()}\n")
    client = RawClient(home)
    capabilities = {"fs": {"readTextFile": True, "writeTextFile": True}}
    hello = client.call(
        "initialize", {"protocolVersion": version, "clientCapabilities": capabilities}
    )
    return client, hello


def test_v1_stays_the_default_and_v2_is_agreed_only_when_allowed(home: Path, llm: FakeLLM) -> None:
    for v2, asked, agreed in ((False, 2, 1), (True, 2, 2), (True, 1, 1), (True, 3, 2)):
        client, hello = _start(home, llm, asked, v2)
        client.close()
        assert hello["protocolVersion"] == agreed


def test_a_v2_turn_is_acknowledged_then_told_by_state_updates(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    (workspace / "a.txt").write_text("on disk\n", encoding="utf-8")
    (workspace / "src").mkdir()
    (workspace / "src" / "canary.txt").write_text("here", encoding="utf-8")
    llm.add(
        tool_call("read_file", {"path": "a.txt"}),
        tool_call("terminal", {"command": "rm -rf src"}),
        {"text": "all done here", "chunks": 3},
    )
    client, _ = _start(home, llm, 2)
    new = client.call("session/new", {"cwd": str(workspace), "mcpServers": []})
    assert "modes" not in new and new["configOptions"]
    session = new["sessionId"]
    prompt = client.request("session/prompt", {"sessionId": session, "prompt": [
        {"type": "text", "text": "clean up"},
    ]})  # fmt: skip

    def allow(frame: dict[str, Any]) -> Any:
        assert frame["method"] == "session/request_permission", frame  # never fs/...
        return {"outcome": {"outcome": "selected", "optionId": "allow_once"}}

    frames = client.until(_idle, answer=allow)
    client.close()
    assert not (workspace / "src").exists()  # allowed once, it ran
    [answer] = [f for f in frames if f.get("id") == prompt and "method" not in f]
    assert answer["result"] == {}  # acknowledged: the turn goes on after
    updates = _updates(frames)
    kinds = [u["sessionUpdate"] for u in updates]
    assert frames.index(answer) < frames.index(next(f for f in frames if _turn(f)))
    assert kinds[:2] == ["user_message", "state_update"] and updates[1]["state"] == "running"
    assert updates[0]["content"] == [{"type": "text", "text": "clean up"}]
    assert updates[0]["messageId"].startswith("msg_user_")
    states = [u["state"] for u in updates if u["sessionUpdate"] == "state_update"]
    assert states == ["running", "requires_action", "running", "idle"], json.dumps(updates)[:3000]
    assert updates[-1] == {
        "sessionUpdate": "state_update",
        "state": "idle",
        "stopReason": "end_turn",
    }
    assert "tool_call" not in kinds and "agent_message_chunk" in kinds
    calls: dict[str, list[dict[str, Any]]] = {}
    for u in updates:
        if u["sessionUpdate"] == "tool_call_update":
            calls.setdefault(u["toolCallId"], []).append(u)
    assert len(calls) == 2 and all(len(c) == 2 for c in calls.values())  # start, end: upserts
    read = next(c for c in calls.values() if c[0].get("kind") == "read")
    assert "on disk" in json.dumps(read[1])  # the disk: no client file system in v2
    chunks = [u for u in updates if u["sessionUpdate"] == "agent_message_chunk"]
    assert len(chunks) > 1 and len({c["messageId"] for c in chunks}) == 1
    assert "".join(c["content"]["text"] for c in chunks) == "all done here"


def test_a_v2_cancel_ends_with_an_idle_cancelled(home: Path, llm: FakeLLM, workspace: Path) -> None:
    llm.add({"text": "slowly", "delay": 5})
    client, _ = _start(home, llm, 2)
    session = client.call("session/new", {"cwd": str(workspace), "mcpServers": []})["sessionId"]
    client.request("session/prompt", {"sessionId": session, "prompt": [
        {"type": "text", "text": "take your time"},
    ]})  # fmt: skip
    client.until(lambda f: f.get("params", {}).get("update", {}).get("state") == "running")
    client.send({"method": "session/cancel", "params": {"sessionId": session}})
    frames = client.until(_idle)
    client.close()
    assert _updates(frames)[-1]["stopReason"] == "cancelled"
