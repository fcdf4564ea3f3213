"""MCP servers the client passes in ``session/new``: started for that session, sandboxed as
``acp.mcp_sandbox`` says, their tools offered to its turns. Through a real ``hermes acp`` and
a real stdio MCP server."""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from acp import text_block
from acp.schema import EnvVariable, McpServerStdio
from acp_client import RecordingClient, connect, run, write_config

from hermes_core.testing import FakeLLM, text, tool_call

SERVER = """
import os
from mcp.server.mcpserver import MCPServer

server = MCPServer("notes")


@server.tool()
def shout(words: str) -> str:
    \"\"\"The words in capitals, with the server's NOTE variable.\"\"\"
    return words.upper() + " " + os.environ.get("NOTE", "?")


server.run()
"""

PLUGINS = "acp,openai,local,terminal,file,approvals,todo,mcp"


def _server(tmp_path: Path, **env: str) -> McpServerStdio:
    script = tmp_path / "notes_server.py"
    script.write_text(SERVER, encoding="utf-8")
    return McpServerStdio(
        name="notes",
        command=sys.executable,
        args=[str(script)],
        env=[EnvVariable(name=k, value=v) for k, v in env.items()],
    )


def _tool_results(llm: FakeLLM) -> list[str]:
    body = llm.model_requests[-1].json or {}
    return [str(m.get("content")) for m in body["messages"] if m.get("role") == "tool"]


def test_a_client_server_is_started_for_its_session(
    home: Path, llm: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    write_config(home, llm.openai_base_url, extra='acp:\n  mcp_sandbox: "off"\n')
    llm.add(tool_call("mcp_editor-notes_shout", {"words": "hello"}), text("shouted"))
    llm.add(text("no tools here"))
    client = RecordingClient()

    async def go() -> None:
        async with connect(home, client, HERMES_PLUGINS=PLUGINS) as (conn, _):
            server = _server(tmp_path, NOTE="from-the-editor")
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
            await conn.prompt(session_id=new.session_id, prompt=[text_block("shout")])
            other = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=other.session_id, prompt=[text_block("plain")])

    run(go())
    first, second = llm.model_requests[0], llm.model_requests[-1]
    offered = [t["function"]["name"] for t in (first.json or {}).get("tools", [])]
    assert "mcp_editor-notes_shout" in offered
    assert "HELLO from-the-editor" in json.dumps((llm.model_requests[1].json or {})["messages"])
    later = [t["function"]["name"] for t in (second.json or {}).get("tools", [])]
    assert not any(name.startswith("mcp_") for name in later)  # that session's only
    [start] = [u for _s, u in client.updates if u.session_update == "tool_call"]
    assert start.title and start.kind == "other"


def test_by_default_a_client_server_runs_in_the_sandbox_and_a_leaky_one_is_refused(
    home: Path, llm: FakeLLM
) -> None:
    import hermes_env_sandbox

    # the sandbox gives a server a /tmp of its own: the project lies elsewhere
    workspace = Path(tempfile.mkdtemp(prefix="hermes-acp-ws-", dir="/var/tmp"))
    llm.add(tool_call("mcp_editor-notes_shout", {"words": "boxed"}), text("carried on"))
    client = RecordingClient()
    leaky = McpServerStdio(name="leaky", command="printenv", args=["${OPENAI_API_KEY}"], env=[])

    async def go() -> None:
        async with connect(home, client, HERMES_PLUGINS=PLUGINS) as (conn, _):
            servers = [_server(workspace), leaky]
            new = await conn.new_session(cwd=str(workspace), mcp_servers=servers)
            await conn.prompt(session_id=new.session_id, prompt=[text_block("go")])

    try:
        run(go())
    finally:
        shutil.rmtree(workspace, ignore_errors=True)
    thoughts = client.text("agent_thought_chunk")
    assert "MCP server leaky: '${' in its command or environment is not filled in" in thoughts
    offered = [t["function"]["name"] for t in (llm.model_requests[0].json or {}).get("tools", [])]
    assert not any(name.startswith("mcp_editor-leaky") for name in offered)
    if hermes_env_sandbox.unavailable_reason() is not None:  # pragma: no cover - fails closed
        assert "MCP server notes:" in thoughts and "sandbox" in thoughts
        assert not any(name.startswith("mcp_") for name in offered)
    else:
        assert "mcp_editor-notes_shout" in offered
        assert "BOXED ?" in json.dumps((llm.model_requests[1].json or {})["messages"])
