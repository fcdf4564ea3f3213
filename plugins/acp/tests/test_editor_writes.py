"""``write_file`` and ``patch`` write through the editor when the client offers
``fs/write_text_file``: after the file tools' own checks and approvals, and to disk when the
client cannot. Through a real ``hermes acp``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from acp import text_block
from acp_client import RecordingClient, connect, run

from hermes_core.testing import FakeLLM, text, tool_call


def _turn(home: Path, client: RecordingClient, workspace: Path, writes: bool = True) -> None:
    async def go() -> None:
        async with connect(home, client, writes_files=writes, reads_buffers=writes) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=new.session_id, prompt=[text_block("edit")])

    run(go())


def _results(llm: FakeLLM) -> list[str]:
    return [
        str(m.get("content"))
        for m in (llm.last_request.json or {})["messages"]
        if isinstance(m, dict) and m.get("role") == "tool"
    ]


def _diffs(client: RecordingClient) -> list[Any]:
    return [
        c
        for _s, u in client.updates
        if u.session_update == "tool_call_update"
        for c in (u.content or [])
        if c.type == "diff"
    ]


def test_write_file_and_patch_go_through_the_editor(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    target = workspace / "notes.txt"
    patched = workspace / "main.py"
    patched.write_text("x = 1\ny = 2\n", encoding="utf-8")
    llm.add(
        tool_call("write_file", {"path": "notes.txt", "content": "from the agent\n"}),
        tool_call("patch", {"path": "main.py", "old_string": "y = 2", "new_string": "y = 3"}),
        text("edited"),
    )
    client = RecordingClient(buffers={str(patched): "x = 0\ny = 2\n"})  # unsaved in the editor
    _turn(home, client, workspace)
    assert client.written == [
        (str(target), "from the agent\n"),
        (str(patched), "x = 0\ny = 3\n"),  # the patch applies to what the editor has
    ]
    assert not target.exists()  # the editor holds it, unsaved: hermes did not write the disk
    assert patched.read_text(encoding="utf-8") == "x = 1\ny = 2\n"
    results = _results(llm)
    assert results[0].startswith("Wrote 15 bytes") and "main.py" in results[1]
    diffs = _diffs(client)
    assert [(d.path, d.new_text) for d in diffs][-1] == (str(patched), "x = 0\ny = 3\n")


def test_a_write_the_guard_refuses_never_reaches_the_editor(
    home: Path, llm: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    outside = tmp_path / "outside.txt"
    llm.add(tool_call("write_file", {"path": str(outside), "content": "escape\n"}), text("ok"))
    client = RecordingClient(answer=lambda call, options: "reject_once")
    _turn(home, client, workspace)
    assert len(client.asked) == 1  # the file tools' approval, asked before any write
    assert client.written == []
    assert not outside.exists()
    assert "BLOCKED" in _results(llm)[0] or "denied" in _results(llm)[0].lower()


def test_the_disk_when_the_editor_cannot_or_does_not_offer(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add(tool_call("write_file", {"path": "a.txt", "content": "one\n"}), text("done"))
    client = RecordingClient(refuse_writes=True)
    _turn(home, client, workspace)
    assert (workspace / "a.txt").read_text(encoding="utf-8") == "one\n"
    assert client.written == []

    llm.add(tool_call("write_file", {"path": "b.txt", "content": "two\n"}), text("done"))
    plain = RecordingClient()
    _turn(home, plain, workspace, writes=False)
    assert (workspace / "b.txt").read_text(encoding="utf-8") == "two\n"
    assert plain.written == []
