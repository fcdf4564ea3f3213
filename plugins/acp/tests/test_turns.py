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


def test_a_connection_closed_during_a_permission_request_is_a_denial(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    import json
    import subprocess

    from acp_client import HERMES, hermes_env

    canary = _canary(workspace)
    llm.add(tool_call("terminal", {"command": "rm -rf src"}), text("never seen"))
    proc = subprocess.Popen(
        [HERMES, "acp"],
        env=hermes_env(home),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None

    def send(request_id: int, method: str, params: dict[str, object]) -> None:
        assert proc.stdin is not None
        frame = {"jsonrpc": "2.0", "id": request_id, "method": method, "params": params}
        proc.stdin.write(json.dumps(frame) + "\n")
        proc.stdin.flush()

    def until(predicate: object) -> dict[str, object]:
        assert proc.stdout is not None
        while True:
            frame = json.loads(proc.stdout.readline())
            if predicate(frame):  # type: ignore[operator]
                return frame

    send(0, "initialize", {"protocolVersion": 1})
    until(lambda f: f.get("id") == 0)
    send(1, "session/new", {"cwd": str(workspace), "mcpServers": []})
    session_id = until(lambda f: f.get("id") == 1)["result"]["sessionId"]  # type: ignore[index]
    send(2, "session/prompt", {"sessionId": session_id, "prompt": [{"type": "text", "text": "x"}]})
    until(lambda f: f.get("method") == "session/request_permission")
    proc.stdin.close()  # the editor goes away without answering
    assert proc.wait(timeout=30) == 0
    assert canary.exists()
    messages = SQLiteSessionStore(home / "sessions.db").get_messages(session_id)
    assert [m["role"] for m in messages][:2] == ["user", "assistant"]
    assert messages[-1]["role"] == "tool" and messages[-1]["content"].startswith("BLOCKED")


def test_two_sessions_run_their_turns_at_once(home: Path, llm: FakeLLM, workspace: Path) -> None:
    llm.add({"text": "same answer", "delay": 2.0}, {"text": "same answer", "delay": 2.0})
    client = RecordingClient()

    async def go() -> tuple[list[str], float]:
        async with connect(home, client) as (conn, _):
            one = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            two = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            started = time.monotonic()
            done = await asyncio.gather(
                conn.prompt(session_id=one.session_id, prompt=[text_block("a")]),
                conn.prompt(session_id=two.session_id, prompt=[text_block("b")]),
            )
            return [d.stop_reason for d in done], time.monotonic() - started

    reasons, took = run(go())
    assert reasons == ["end_turn", "end_turn"] and took < 3.8  # not one after the other
    sessions = {s for s, u in client.updates if u.session_update == "agent_message_chunk"}
    assert len(sessions) == 2


def test_a_turn_waits_while_another_process_holds_the_session(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    import threading

    llm.add(text("first"), text("after the wait"))
    client = RecordingClient()
    store = SQLiteSessionStore(home / "sessions.db")
    release, holding = threading.Event(), threading.Event()

    def other_process_turn(session_id: str) -> None:  # as a `hermes chat --resume` holds it
        with store.hold_session(session_id, threading.Event()):
            holding.set()
            release.wait(20)

    async def go() -> tuple[str, str]:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = new.session_id
            await conn.prompt(session_id=sid, prompt=[text_block("one")])
            threading.Thread(target=other_process_turn, args=(sid,), daemon=True).start()
            holding.wait(10)
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("two")]))
            while "Waiting for another turn" not in client.text("agent_thought_chunk"):
                await asyncio.sleep(0.05)
            assert len(llm.model_requests) == 1  # nothing ran meanwhile
            release.set()
            second = (await turn).stop_reason
            # a cancel while waiting runs nothing
            release.clear()
            holding.clear()
            threading.Thread(target=other_process_turn, args=(sid,), daemon=True).start()
            holding.wait(10)
            turn = asyncio.ensure_future(conn.prompt(session_id=sid, prompt=[text_block("3")]))
            await asyncio.sleep(0.3)
            await conn.cancel(session_id=sid)
            third = (await turn).stop_reason
            release.set()
            return second, third

    assert run(go()) == ("end_turn", "cancelled")
    assert client.text().endswith("after the wait")
    assert len(llm.model_requests) == 2


def test_always_allow_is_remembered_as_the_chat_remembers_it(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add(
        tool_call("terminal", {"command": "rm -rf src"}),
        text("removed"),
        tool_call("terminal", {"command": "rm -rf src"}),
        text("removed again"),
    )
    client = RecordingClient(answer=lambda call, options: "allow_always")

    async def go() -> None:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            for _ in range(2):
                canary = _canary(workspace)
                await conn.prompt(session_id=new.session_id, prompt=[text_block("clean")])
                assert not canary.exists()

    run(go())
    assert len(client.asked) == 1  # the second time no one was asked


def test_closing_a_session_during_its_turn_cancels_it(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add({"text": "far too slow an answer", "chunks": 20, "chunk_delay": 0.5})
    client = RecordingClient()

    async def go() -> str:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            turn = asyncio.ensure_future(
                conn.prompt(session_id=new.session_id, prompt=[text_block("talk")])
            )
            while not client.updates:
                await asyncio.sleep(0.05)
            await conn.close_session(session_id=new.session_id)
            return (await turn).stop_reason

    assert run(go()) == "cancelled"
