"""Turns through a real ``hermes acp`` and the SDK's client: text, tools, permissions, cancel."""

from __future__ import annotations

import asyncio
import time
from pathlib import Path

from acp import text_block
from acp_client import RecordingClient, connect, run, write_config

from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import FakeLLM, text, tool_call


def _canary(workspace: Path) -> Path:
    folder = workspace / "src"
    folder.mkdir()
    (folder / "canary.txt").write_text("still here", encoding="utf-8")
    return folder / "canary.txt"


def test_a_text_turn_streams_chunks_and_is_a_stored_hermes_session(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add({"text": "Hello from hermes", "reasoning": "thinking it over", "chunks": 3})
    client = RecordingClient()

    async def go() -> tuple[str, str]:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block("hi")])
            return new.session_id, done.stop_reason

    session_id, stop = run(go())
    assert stop == "end_turn"
    assert client.text() == "Hello from hermes"
    assert client.text("agent_thought_chunk") == "thinking it over"
    kinds = client.kinds()
    assert kinds.index("agent_thought_chunk") < kinds.index("agent_message_chunk")
    store = SQLiteSessionStore(home / "sessions.db")
    stored = store.get_session(session_id)
    assert stored is not None and stored.source == "acp"
    assert stored.metadata["acp"]["cwd"] == str(workspace)
    roles = [m["role"] for m in store.get_messages(session_id)]
    assert roles == ["user", "assistant"]


def _tool_turn(home: Path, llm: FakeLLM, workspace: Path, client: RecordingClient) -> str:
    llm.add(tool_call("terminal", {"command": "rm -rf src"}), text("done"))

    async def go() -> str:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block("clean up")])
            return done.stop_reason

    return run(go())


def test_a_permission_allowed_once_runs_the_command(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    canary = _canary(workspace)
    client = RecordingClient(answer=lambda call, options: "allow_once")
    assert _tool_turn(home, llm, workspace, client) == "end_turn"
    assert not canary.exists()
    [(call, options)] = client.asked
    assert options == ["allow_once", "allow_always", "reject_once", "reject_always"]
    assert call.title == "rm -rf src" and call.kind == "execute"
    kinds = client.kinds()
    assert kinds.index("tool_call") < kinds.index("tool_call_update")
    [start] = [u for _s, u in client.updates if u.session_update == "tool_call"]
    assert start.kind == "execute" and call.tool_call_id == start.tool_call_id


def test_a_permission_rejected_keeps_the_files_and_tells_the_model(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    canary = _canary(workspace)
    client = RecordingClient(answer=lambda call, options: "reject_once")
    assert _tool_turn(home, llm, workspace, client) == "end_turn"
    assert canary.exists()
    result = llm.model_requests[1].json["messages"][-1]["content"]
    assert "BLOCKED" in result or "denied" in result.lower()
    [end] = [u for _s, u in client.updates if u.session_update == "tool_call_update"]
    assert end.status in ("failed", "completed")


def test_a_cancelled_permission_request_is_a_denial(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    canary = _canary(workspace)
    client = RecordingClient(answer=lambda call, options: None)
    assert _tool_turn(home, llm, workspace, client) == "end_turn"
    assert canary.exists()


def test_an_unknown_option_is_a_denial(home: Path, llm: FakeLLM, workspace: Path) -> None:
    canary = _canary(workspace)
    client = RecordingClient(answer=lambda call, options: "allow_everything_forever")
    assert _tool_turn(home, llm, workspace, client) == "end_turn"
    assert canary.exists()


def test_a_client_answering_with_an_error_is_a_denial(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    def broken(call: object, options: list[str]) -> str:
        raise RuntimeError("the editor's dialog crashed")

    canary = _canary(workspace)
    assert _tool_turn(home, llm, workspace, RecordingClient(answer=broken)) == "end_turn"
    assert canary.exists()


def test_no_answer_in_the_configured_time_is_a_denial(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    write_config(home, llm.openai_base_url, "acp:\n  permission_timeout: 0.5\n")
    canary = _canary(workspace)
    client = RecordingClient(hold=asyncio.Event())  # never answers
    started = time.monotonic()
    assert _tool_turn(home, llm, workspace, client) == "end_turn"
    assert canary.exists() and time.monotonic() - started < 20


def test_reject_always_denies_the_same_request_again_without_asking(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    canary = _canary(workspace)
    llm.add(
        tool_call("terminal", {"command": "rm -rf src"}),
        tool_call("terminal", {"command": "rm -rf src"}),
        text("gave up"),
    )
    client = RecordingClient(answer=lambda call, options: "reject_always")

    async def go() -> str:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block("clean")])
            return done.stop_reason

    assert run(go()) == "end_turn"
    assert canary.exists() and len(client.asked) == 1


def test_the_never_ask_mode_refuses_without_asking(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    canary = _canary(workspace)
    llm.add(tool_call("terminal", {"command": "rm -rf src"}), text("refused"))
    client = RecordingClient()

    async def go() -> str:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.set_session_mode(session_id=new.session_id, mode_id="never-ask")
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block("clean")])
            return done.stop_reason

    assert run(go()) == "end_turn"
    assert canary.exists() and client.asked == []
    assert "current_mode_update" in client.kinds()


def test_cancel_during_a_model_call_ends_cancelled_with_no_partial_history(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add({"text": "far too slow an answer", "chunks": 20, "chunk_delay": 0.5})
    client = RecordingClient()

    async def go() -> tuple[str, str, float]:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            turn = asyncio.ensure_future(
                conn.prompt(session_id=new.session_id, prompt=[text_block("talk")])
            )
            while not client.updates:  # the answer has started streaming
                await asyncio.sleep(0.05)
            started = time.monotonic()
            await conn.cancel(session_id=new.session_id)
            done = await turn
            return new.session_id, done.stop_reason, time.monotonic() - started

    session_id, stop, took = run(go())
    assert stop == "cancelled" and took < 5
    messages = SQLiteSessionStore(home / "sessions.db").get_messages(session_id)
    assert [m for m in messages if m["role"] == "assistant"] == []


def test_cancel_during_a_tool_ends_cancelled_and_answers_the_call(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add(tool_call("terminal", {"command": "sleep 30"}), text("never asked for"))
    client = RecordingClient()

    async def go() -> tuple[str, str]:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            turn = asyncio.ensure_future(
                conn.prompt(session_id=new.session_id, prompt=[text_block("wait")])
            )
            while "tool_call" not in client.kinds():
                await asyncio.sleep(0.05)
            await conn.cancel(session_id=new.session_id)
            done = await turn
            return new.session_id, done.stop_reason

    session_id, stop = run(go())
    assert stop == "cancelled"
    messages = SQLiteSessionStore(home / "sessions.db").get_messages(session_id)
    assert [m["role"] for m in messages][-1] == "tool"  # answered, nothing after it
    assert len(llm.model_requests) == 1
