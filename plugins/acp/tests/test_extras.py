"""What a turn shows besides text and tools: the todo list as a plan, the trace context it runs
under, a cancelled request, and an escalation beyond the sandbox asked and denied."""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.connection import StreamDirection, StreamEvent
from acp_client import RecordingClient, connect, install_plugin, run, write_config

from hermes_core.testing import FakeLLM, text, tool_call

RECORDER = """
import json, os
from hermes_hookspecs import hookimpl

@hookimpl
def hermes_turn_start(session_id, task_id, source, model, provider, config, trace_context):
    with open(os.environ["RECORD_TO"], "a") as out:
        out.write(json.dumps({"source": source, "trace": dict(trace_context)}) + "\\n")
"""

TRACEPARENT = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01"


def test_the_todo_list_is_shown_as_a_plan(home: Path, llm: FakeLLM, workspace: Path) -> None:
    todos = [
        {"id": "1", "content": "write the tests", "status": "in_progress"},
        {"id": "2", "content": "ship it", "status": "pending"},
        {"id": "3", "content": "an idea dropped", "status": "cancelled"},
    ]
    llm.add(tool_call("todo", {"todos": todos}), text("planned"))
    client = RecordingClient()

    async def go() -> None:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=new.session_id, prompt=[text_block("plan it")])

    run(go())
    [plan] = [u for _s, u in client.updates if u.session_update == "plan"]
    assert [(e.content, e.status) for e in plan.entries] == [
        ("write the tests", "in_progress"),
        ("ship it", "pending"),
    ]
    [start] = [u for _s, u in client.updates if u.session_update == "tool_call"]
    assert start.kind == "think"


def test_a_traceparent_in_meta_is_carried_into_the_turn(
    home: Path, llm: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    record = tmp_path / "turns.jsonl"
    plugin = install_plugin(tmp_path / "site", "recorder", RECORDER)
    env = {
        "RECORD_TO": str(record),
        "PYTHONPATH": os.pathsep.join(filter(None, [plugin, os.environ.get("PYTHONPATH")])),
        "HERMES_PLUGINS": "acp,openai,local,terminal,file,approvals,todo,recorder",
    }
    llm.add(text("traced"), text("untraced"))

    async def go() -> None:
        async with connect(home, RecordingClient(), **env) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(
                session_id=new.session_id, prompt=[text_block("a")], traceparent=TRACEPARENT
            )
            await conn.prompt(session_id=new.session_id, prompt=[text_block("b")])

    run(go())
    turns = [json.loads(line) for line in record.read_text(encoding="utf-8").splitlines()]
    assert turns == [
        {"source": "acp", "trace": {"traceparent": TRACEPARENT}},
        {"source": "acp", "trace": {}},
    ]


def test_cancel_request_of_a_prompt_cancels_its_turn(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add({"text": "far too slow an answer", "chunks": 20, "chunk_delay": 0.5})
    client = RecordingClient()
    prompts: list[Any] = []

    def watch(event: StreamEvent) -> None:
        message = event.message
        if event.direction is StreamDirection.OUTGOING and message.get("method") == (
            "session/prompt"
        ):
            prompts.append(message["id"])

    async def go() -> str:
        async with connect(home, client, observers=[watch]) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            turn = asyncio.ensure_future(
                conn.prompt(session_id=new.session_id, prompt=[text_block("talk")])
            )
            while not client.updates:
                await asyncio.sleep(0.05)
            await conn._conn.send_notification("$/cancel_request", {"requestId": prompts[0]})
            return (await turn).stop_reason

    assert run(go()) == "cancelled"


def test_an_escalation_shows_the_command_offers_once_only_and_a_denial_runs_nothing(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    write_config(home, llm.openai_base_url, sandbox="workspace")
    llm.add(
        tool_call("terminal", {"command": "touch escaped.txt", "escalate": True}),
        text("stayed inside"),
    )
    client = RecordingClient(answer=lambda call, options: "reject_once")

    async def go() -> str:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block("touch")])
            return done.stop_reason

    assert run(go()) == "end_turn"
    [(call, options)] = client.asked
    assert options == ["allow_once", "reject_once", "reject_always"]
    assert call.title == "touch escaped.txt"
    question = call.content[0].content.text
    assert "touch escaped.txt" in question and "OUTSIDE the sandbox" in question
    assert not (workspace / "escaped.txt").exists()
    result = llm.model_requests[1].json["messages"][-1]["content"]
    assert "BLOCKED" in result


def test_read_file_sees_the_editors_unsaved_buffer_when_offered(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    (workspace / "main.py").write_text("print('saved')\n", encoding="utf-8")
    (workspace / "other.py").write_text("print('only on disk')\n", encoding="utf-8")
    llm.add(
        tool_call("read_file", {"path": "main.py"}),
        tool_call("read_file", {"path": "other.py"}),
        text("read"),
        tool_call("read_file", {"path": "main.py"}),
        text("read again"),
    )
    client = RecordingClient(buffers={str(workspace / "main.py"): "print('unsaved')\nx = 1\n"})

    async def turn(reads_buffers: bool) -> None:
        async with connect(home, client, reads_buffers=reads_buffers) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=new.session_id, prompt=[text_block("read")])

    run(turn(True))
    run(turn(False))  # a client that does not offer its buffers: the disk
    results = [r.json["messages"][-1]["content"] for r in llm.model_requests[1:]]
    assert "print('unsaved')" in results[0] and "     2\tx = 1" in results[0]
    assert "unsaved changes included" in results[0] and "print('saved')" not in results[0]
    assert "only on disk" in results[1]  # not open in the editor: read from disk
    assert "print('saved')" in results[3] and "unsaved" not in results[3]


def test_checkpoints_of_the_session_folder_as_extension_methods(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    (workspace / "notes.txt").write_text("before\n", encoding="utf-8")
    llm.add(tool_call("write_file", {"path": "notes.txt", "content": "after\n"}), text("written"))
    env = {"HERMES_PLUGINS": "acp,openai,local,terminal,file,approvals,todo,checkpoints"}
    client = RecordingClient()

    async def go() -> tuple[str, str, str, list[int]]:
        async with connect(home, client, **env) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = new.session_id
            await conn.prompt(session_id=sid, prompt=[text_block("write")])
            listed = await conn.ext_method("hermes/checkpoints/list", {"sessionId": sid})
            dry = await conn.ext_method(
                "hermes/checkpoints/restore", {"sessionId": sid, "checkpoint": "1"}
            )
            after_dry = (workspace / "notes.txt").read_text(encoding="utf-8")
            await conn.ext_method(
                "hermes/checkpoints/restore",
                {"sessionId": sid, "checkpoint": "1", "dryRun": False},
            )
            codes = []
            for method, params in (
                ("hermes/checkpoints/restore", {"sessionId": sid}),
                ("hermes/checkpoints/restore", {"sessionId": sid, "checkpoint": "99"}),
                ("hermes/checkpoints/list", {"sessionId": "session_unknown"}),
                ("hermes/unknown", {}),
            ):
                with pytest.raises(RequestError) as refused:
                    await conn.ext_method(method, params)
                codes.append(refused.value.code)
            return listed["text"], dry["text"], after_dry, codes

    listed, dry, after_dry, codes = run(go())
    assert "before a turn (write_file" in listed
    assert "dry run" in dry and after_dry == "after\n"
    assert (workspace / "notes.txt").read_text(encoding="utf-8") == "before\n"
    assert codes == [-32602, -32600, -32002, -32601]
    [diff] = [
        c for _s, u in client.updates if u.session_update == "tool_call" for c in (u.content or [])
    ]
    assert diff.type == "diff" and diff.old_text == "before\n" and diff.new_text == "after\n"


def test_each_model_call_reports_how_full_the_context_is(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    config = home / "config.yaml"
    config.write_text(
        config.read_text(encoding="utf-8").replace(
            "  default: fake-model\n", "  default: fake-model\n  context_length: 32000\n"
        ),
        encoding="utf-8",
    )
    llm.add(
        {
            "calls": [{"name": "todo", "arguments": {}}],
            "usage": {"input_tokens": 1200, "output_tokens": 34},
        },
        {"text": "done", "usage": {"input_tokens": 1300, "output_tokens": 5}},
    )
    client = RecordingClient()

    async def go() -> None:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=new.session_id, prompt=[text_block("go")])

    run(go())
    usage = [(u.used, u.size) for _s, u in client.updates if u.session_update == "usage_update"]
    assert usage == [(1234, 32000), (1305, 32000)]


def test_an_edit_shows_the_whole_file_before_and_after(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    source = workspace / "app.py"
    source.write_text("a = 1\nb = 2\nc = 3\n", encoding="utf-8")
    llm.add(
        tool_call("patch", {"path": "app.py", "old_string": "b = 2", "new_string": "b = 20"}),
        text("patched"),
    )
    client = RecordingClient()

    async def go() -> None:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=new.session_id, prompt=[text_block("patch it")])

    run(go())
    [start] = [u for _s, u in client.updates if u.session_update == "tool_call"]
    [end] = [u for _s, u in client.updates if u.session_update == "tool_call_update"]
    assert start.kind == "edit" and start.locations[0].path == str(source)
    assert (start.content[0].old_text, start.content[0].new_text) == ("b = 2", "b = 20")
    [diff] = end.content
    assert diff.type == "diff" and diff.path == str(source)
    assert diff.old_text == "a = 1\nb = 2\nc = 3\n" and diff.new_text == "a = 1\nb = 20\nc = 3\n"
