"""A client nobody here wrote: acpx (npm, on Node 22+ from PyPI) driving ``hermes acp`` end to
end, every frame hermes writes checked against the protocol's published schema."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

from acp_client import HERMES, hermes_env
from frames import SchemaCheck, acpx

from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import FakeLLM, text, tool_call

CLIENT_METHODS = {"session/request_permission", "session/update", "fs/read_text_file"}


def _acpx(home: Path, workspace: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = hermes_env(home, HOME=str(home))  # acpx keeps its own state under HOME
    return subprocess.run(
        [*acpx(), "--format", "json", "--agent", f"{HERMES} acp", "--cwd", str(workspace), *args],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _split(stdout: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """acpx's JSON log as (what the client sent, what hermes sent)."""
    sent: list[dict[str, Any]] = []
    received: list[dict[str, Any]] = []
    asked: set[Any] = set()  # ids of hermes's own requests, answered by acpx
    for line in stdout.splitlines():
        frame = json.loads(line)
        if frame.get("method") in CLIENT_METHODS:
            received.append(frame)
            if "id" in frame:
                asked.add(frame["id"])
        elif "method" in frame:
            sent.append(frame)
        elif frame.get("id") in asked and "outcome" in (frame.get("result") or {}):
            asked.discard(frame["id"])
            sent.append(frame)
        else:
            received.append(frame)
    return sent, received


def _canary(workspace: Path) -> Path:
    (workspace / "src").mkdir()
    canary = workspace / "src" / "canary.txt"
    canary.write_text("still here", encoding="utf-8")
    return canary


def test_acpx_with_approve_all_runs_a_turn_with_a_permission(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    canary = _canary(workspace)
    llm.add(tool_call("terminal", {"command": "rm -rf src"}), text("cleaned up"))
    done = _acpx(home, workspace, "--approve-all", "exec", "clean up")
    assert done.returncode == 0, done.stderr[-2000:]
    sent, received = _split(done.stdout)
    check = SchemaCheck()
    check.agent_frames(sent, received)
    assert {"InitializeResponse", "NewSessionResponse", "PromptResponse"} <= set(check.checked)
    assert {"RequestPermissionRequest", "SessionNotification"} <= set(check.checked)
    assert not canary.exists()
    updates = [f["params"]["update"] for f in received if f.get("method") == "session/update"]
    kinds = [u["sessionUpdate"] for u in updates]
    assert kinds[0] == "available_commands_update"  # after session/new's answer
    assert [k for k in kinds if k != "available_commands_update"][0] == "tool_call"
    assert (
        "".join(
            u["content"]["text"] for u in updates if u["sessionUpdate"] == "agent_message_chunk"
        )
        == "cleaned up"
    )
    [prompt_answer] = [f for f in received if "stopReason" in (f.get("result") or {})]
    assert prompt_answer["result"]["stopReason"] == "end_turn"


def test_acpx_without_approval_denies_and_the_files_stay(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    canary = _canary(workspace)
    llm.add(tool_call("terminal", {"command": "rm -rf src"}), text("could not"))
    done = _acpx(home, workspace, "--non-interactive-permissions", "deny", "exec", "clean up")
    sent, received = _split(done.stdout)
    SchemaCheck().agent_frames(sent, received)
    assert canary.exists()
    [session] = SQLiteSessionStore(home / "sessions.db").list_sessions()
    [result] = [
        m
        for m in SQLiteSessionStore(home / "sessions.db").get_messages(session.id)
        if m["role"] == "tool"
    ]
    assert "BLOCKED" in result["content"] or "denied" in result["content"].lower()


def test_acpx_persistent_session_created_then_prompted_from_another_process(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add(text("first answer"))
    created = _acpx(home, workspace, "--ttl", "1", "sessions", "new")
    assert created.returncode == 0, created.stderr[-2000:]
    session_id = json.loads(created.stdout.splitlines()[-1])["acpxSessionId"]
    prompted = _acpx(home, workspace, "--ttl", "1", "prompt", "one")
    assert prompted.returncode == 0, prompted.stderr[-2000:]
    sent, received = _split(prompted.stdout)
    SchemaCheck().agent_frames(sent, received)
    methods = [f["method"] for f in sent if "method" in f]
    assert "session/new" not in methods  # the stored session was opened again
    assert any(m in methods for m in ("session/load", "session/resume"))
    listed = _acpx(home, workspace, "--ttl", "1", "sessions")
    [session] = json.loads(listed.stdout.splitlines()[-1])["sessions"]
    assert session["sessionId"] == session_id and session["title"] == "one"
    store = SQLiteSessionStore(home / "sessions.db")
    assert [m["content"] for m in store.get_messages(session_id)] == ["one", "first answer"]
