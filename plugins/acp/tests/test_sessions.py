"""Editor sessions are hermes sessions: listed, loaded (with the history replayed), resumed
(without it), closed, deleted; continued from the chat and the reverse; kept across restarts."""

from __future__ import annotations

import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp_client import HERMES, RecordingClient, connect, hermes_env, run

from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import FakeLLM, text, tool_call
from hermes_hookspecs import SessionInfo


def _first_session(home: Path, workspace: Path, prompt: str = "hello") -> str:
    async def go() -> str:
        async with connect(home, RecordingClient()) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=new.session_id, prompt=[text_block(prompt)])
            return new.session_id

    return run(go())


def test_load_after_a_restart_replays_the_history_with_its_tool_calls(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("remember the milk\n", encoding="utf-8")
    llm.add(tool_call("read_file", {"path": "notes.txt"}), text("It says: milk"))
    session_id = _first_session(home, workspace, "what do my notes say?")
    client = RecordingClient()  # a new process: nothing of the first one is left

    async def go() -> Any:
        async with connect(home, client) as (conn, _):
            return await conn.load_session(
                cwd=str(workspace), session_id=session_id, mcp_servers=[]
            )

    loaded = run(go())
    assert loaded.modes.current_mode_id == "ask"
    assert client.kinds() == [
        "user_message_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]
    assert client.text("user_message_chunk") == "what do my notes say?"
    assert client.text() == "It says: milk"
    [(_, call)] = [(s, u) for s, u in client.updates if u.session_update == "tool_call"]
    assert call.kind == "read" and call.locations[0].path == str(workspace / "notes.txt")


def test_resume_continues_without_replaying(home: Path, llm: FakeLLM, workspace: Path) -> None:
    llm.add(text("first answer"), text("second answer"))
    session_id = _first_session(home, workspace)
    client = RecordingClient()

    async def go() -> str:
        async with connect(home, client) as (conn, _):
            await conn.resume_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
            assert client.updates == []  # nothing replayed
            done = await conn.prompt(session_id=session_id, prompt=[text_block("and now?")])
            return done.stop_reason

    assert run(go()) == "end_turn"
    assert client.text() == "second answer"
    sent = [m["content"] for m in llm.model_requests[1].json["messages"] if m["role"] != "system"]
    assert sent[-3:] == ["hello", "first answer", "and now?"]


def test_list_pages_through_the_store_and_filters_by_folder(
    home: Path, llm: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    store = SQLiteSessionStore(home / "sessions.db")
    elsewhere = str(tmp_path / "other-project")
    now = time.time()
    made = []
    for n in range(110):  # newest last; every third from the chat, every fifth elsewhere
        folder = None if n % 3 == 0 else (elsewhere if n % 5 == 0 else str(workspace))
        source = "subagent" if n == 7 else ("cli" if folder is None else "acp")
        person = "alice" if n == 11 else None  # a gateway's user: not the editor's to see
        session_id = f"session_{n:016x}"
        store.create_session(
            SessionInfo(
                id=session_id,
                source=source,
                started_at=now - 1000 + n,
                title=f"talk {n}",
                metadata={"acp": {"cwd": folder}} if folder else {},
                person=person,
            )
        )
        made.append((session_id, folder, source, person))

    async def go() -> tuple[list[Any], list[Any], Any]:
        pages: list[Any] = []
        here: list[Any] = []
        async with connect(home, RecordingClient()) as (conn, _):
            for into, cwd in ((pages, None), (here, str(workspace))):
                cursor = None
                while True:
                    page = await conn.list_sessions(cwd=cwd, cursor=cursor)
                    into.append(page)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
            with pytest.raises(RequestError) as bad:
                await conn.list_sessions(cursor="not-a-cursor")
        return pages, here, bad.value

    pages, here, bad = run(go())
    newest_first = [m for m in reversed(made) if m[2] != "subagent" and m[3] is None]
    listed = [s for page in pages for s in page.sessions]
    assert [s.session_id for s in listed] == [m[0] for m in newest_first]
    assert len(pages) == 3 and len(pages[0].sessions) == 50  # pages of 50
    ours = [s for page in here for s in page.sessions]
    assert [s.session_id for s in ours] == [m[0] for m in newest_first if m[1] != elsewhere]
    assert {s.cwd for s in ours} == {str(workspace)}  # chat sessions open in this folder
    assert listed[0].title == "talk 109" and listed[0].updated_at
    assert bad.code == -32602


def test_a_session_started_in_the_editor_continues_in_the_chat_and_back(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add(text("from the editor"), text("from the chat"), text("back in the editor"))
    session_id = _first_session(home, workspace, "editor question")
    chat = subprocess.run(
        [HERMES, "chat", "--resume", session_id, "-q", "chat question"],
        env=hermes_env(home, HERMES_SERVE="off"),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert chat.returncode == 0, chat.stderr
    assert "from the chat" in chat.stdout
    client = RecordingClient()

    async def go() -> None:
        async with connect(home, client) as (conn, _):
            await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
            await conn.prompt(session_id=session_id, prompt=[text_block("editor again")])

    run(go())
    assert client.text("user_message_chunk") == "editor questionchat question"
    contents = [
        m.get("content") for m in SQLiteSessionStore(home / "sessions.db").get_messages(session_id)
    ]
    assert contents == [
        "editor question",
        "from the editor",
        "chat question",
        "from the chat",
        "editor again",
        "back in the editor",
    ]


def test_close_and_delete(home: Path, llm: FakeLLM, workspace: Path) -> None:
    llm.add(text("kept for a moment"))
    session_id = _first_session(home, workspace)

    async def go() -> list[int]:
        codes = []
        async with connect(home, RecordingClient()) as (conn, _):
            await conn.resume_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])
            await conn.close_session(session_id=session_id)
            for call in (
                conn.prompt(session_id=session_id, prompt=[text_block("closed?")]),
                conn.close_session(session_id=session_id),
            ):
                with pytest.raises(RequestError) as closed:
                    await call
                codes.append(closed.value.code)
            await conn._conn.send_request("session/delete", {"sessionId": session_id})
            for call in (
                conn._conn.send_request("session/delete", {"sessionId": session_id}),
                conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[]),
                conn._conn.send_request("session/delete", {}),
            ):
                with pytest.raises(RequestError) as gone:
                    await call
                codes.append(gone.value.code)
        return codes

    assert run(go()) == [-32002, -32002, -32002, -32002, -32602]
    assert SQLiteSessionStore(home / "sessions.db").get_session(session_id) is None


def test_a_new_session_is_stored_at_once_and_loads_in_another_process(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add(text("the first answer"))
    plugins = {"HERMES_PLUGINS": "acp,openai,local,terminal,file,approvals,todo,prompt_identity"}

    async def create() -> tuple[str, Any]:
        async with connect(home, RecordingClient(), **plugins) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.set_config_option(
                config_id="reasoning_effort", session_id=new.session_id, value="low"
            )
            return new.session_id, await conn.list_sessions(cwd=str(workspace))

    session_id, listed = run(create())
    assert [s.session_id for s in listed.sessions] == [session_id]

    async def later() -> Any:  # another process, as acpx runs `sessions new` then `prompt`
        async with connect(home, RecordingClient(), **plugins) as (conn, _):
            loaded = await conn.load_session(
                cwd=str(workspace), session_id=session_id, mcp_servers=[]
            )
            await conn.prompt(session_id=session_id, prompt=[text_block("first words")])
            return loaded

    loaded = run(later())
    assert {o.id: o.current_value for o in loaded.config_options}["reasoning_effort"] == "low"
    request = llm.model_requests[0].json
    assert request.get("reasoning_effort") == "low"
    assert request["messages"][0]["role"] == "system"  # the prompt was built on the first turn
    stored = SQLiteSessionStore(home / "sessions.db")
    assert [m["role"] for m in stored.get_messages(session_id)] == ["user", "assistant"]
    assert stored.get_session(session_id).system_prompt


def test_load_replays_images_reasoning_and_refused_calls(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    store = SQLiteSessionStore(home / "sessions.db")
    session_id = "session_00000000000000aa"
    store.create_session(SessionInfo(id=session_id, source="cli", started_at=time.time()))
    picture = (home / "images" / "dot.png").as_uri()
    call = {"id": "call_1", "type": "function"}
    for message in (
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "what is this?"},
                {"type": "image_url", "image_url": {"url": picture}},
            ],
        },
        {
            "role": "assistant",
            "content": None,
            "reasoning": "it may be dangerous",
            "tool_calls": [
                {**call, "function": {"name": "terminal", "arguments": '{"command": "rm -rf src"}'}}
            ],
        },
        {"role": "tool", "tool_call_id": "call_1", "content": "BLOCKED: not approved"},
        {"role": "assistant", "content": "A dot; I did not delete anything."},
    ):
        store.append_message(session_id, message)
    client = RecordingClient()

    async def go() -> None:
        async with connect(home, client) as (conn, _):
            await conn.load_session(cwd=str(workspace), session_id=session_id, mcp_servers=[])

    run(go())
    updates = [u for _s, u in client.updates]
    assert [u.session_update for u in updates] == [
        "user_message_chunk",
        "user_message_chunk",
        "agent_thought_chunk",
        "tool_call",
        "tool_call_update",
        "agent_message_chunk",
    ]
    link = updates[1].content
    assert link.type == "resource_link" and link.uri == picture and link.name == "dot.png"
    assert updates[2].content.text == "it may be dangerous"
    assert updates[3].title == "rm -rf src" and updates[3].kind == "execute"
    assert updates[4].status == "failed" and updates[4].tool_call_id == "call_1"
