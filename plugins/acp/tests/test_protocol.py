"""What one connection answers: capabilities, prompt blocks, config options per session,
authentication, and every request hermes refuses (each with its JSON-RPC error)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest
from acp import RequestError, text_block
from acp.schema import (
    AudioContentBlock,
    EmbeddedResourceContentBlock,
    ImageContentBlock,
    McpServerStdio,
    ResourceContentBlock,
    TextResourceContents,
)
from acp_client import RecordingClient, connect, run, write_config

from hermes_core.testing import FakeLLM, text

PNG = base64.b64encode(b"\x89PNG\r\n\x1a\n" + b"\0" * 64).decode()
INVALID_PARAMS, INVALID_REQUEST, NOT_FOUND, AUTH_REQUIRED, INTERNAL = (
    -32602,
    -32600,
    -32002,
    -32000,
    -32603,
)


async def _code(call: Any) -> int:
    with pytest.raises(RequestError) as refused:
        await call
    return refused.value.code


def test_initialize_advertises_what_hermes_does(home: Path, llm: FakeLLM) -> None:
    async def go() -> Any:
        async with connect(home, RecordingClient()) as (conn, _):
            return await conn.initialize(protocol_version=2)  # a newer client gets v1

    answer = run(go())
    assert answer.protocol_version == 1
    assert answer.agent_info.name == "hermes"
    caps = answer.agent_capabilities
    assert caps.load_session is True
    assert caps.prompt_capabilities.image and caps.prompt_capabilities.embedded_context
    assert not caps.prompt_capabilities.audio
    assert not caps.mcp_capabilities.http and not caps.mcp_capabilities.sse
    session = caps.session_capabilities
    assert session.list is not None and session.resume is not None
    assert session.close is not None and session.delete is not None
    [method] = answer.auth_methods
    assert method.id == "hermes-setup" and method.args == ["setup"]


def test_prompt_blocks_become_one_user_message(home: Path, llm: FakeLLM, workspace: Path) -> None:
    llm.add(text("a small picture and two files"))
    notes = workspace / "notes.md"

    async def go() -> str:
        async with connect(home, RecordingClient()) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            done = await conn.prompt(
                session_id=new.session_id,
                prompt=[
                    text_block("look at these"),
                    ImageContentBlock(type="image", data=PNG, mime_type="image/png"),
                    ResourceContentBlock(type="resource_link", uri=notes.as_uri(), name="notes.md"),
                    EmbeddedResourceContentBlock(
                        type="resource",
                        resource=TextResourceContents(
                            uri=(workspace / "main.py").as_uri(), text="print('hi')"
                        ),
                    ),
                ],
            )
            return done.stop_reason

    assert run(go()) == "end_turn"
    user = llm.model_requests[0].json["messages"][-1]
    assert isinstance(user["content"], list)
    kinds = [part["type"] for part in user["content"]]
    assert "image_url" in kinds
    said = " ".join(part.get("text", "") for part in user["content"])
    assert "look at these" in said and f"[@notes.md]({notes})" in said
    assert "print('hi')" in said and str(workspace / "main.py") in said


def test_config_options_are_per_session_and_reach_the_model(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    write_config(home, llm.openai_base_url, "acp:\n  models: [fake-model-large]\n")
    llm.add(text("from large"), text("from the default"))

    async def go() -> tuple[Any, list[int]]:
        async with connect(home, RecordingClient()) as (conn, _):
            one = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            two = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            changed = await conn.set_config_option(
                config_id="model", session_id=one.session_id, value="fake-model-large"
            )
            await conn.set_config_option(
                config_id="reasoning_effort", session_id=one.session_id, value="high"
            )
            await conn.prompt(session_id=one.session_id, prompt=[text_block("a")])
            await conn.prompt(session_id=two.session_id, prompt=[text_block("b")])
            codes = [
                await _code(
                    conn.set_config_option(
                        config_id="model", session_id=one.session_id, value="gpt-9"
                    )
                ),
                await _code(
                    conn.set_config_option(
                        config_id="colour", session_id=one.session_id, value="red"
                    )
                ),
                await _code(conn.set_session_mode(session_id=one.session_id, mode_id="yolo")),
                await _code(
                    conn.set_config_option(config_id="model", session_id="nope", value="x")
                ),
            ]
            return changed, codes

    changed, codes = run(go())
    assert {o.id: o.current_value for o in changed.config_options}["model"] == "fake-model-large"
    first, second = (r.json for r in llm.model_requests)
    assert first["model"] == "fake-model-large" and first.get("reasoning_effort") == "high"
    assert second["model"] == "fake-model" and "reasoning_effort" not in second
    assert codes == [INVALID_PARAMS, INVALID_PARAMS, INVALID_PARAMS, NOT_FOUND]


def test_requests_hermes_refuses(home: Path, llm: FakeLLM, workspace: Path) -> None:
    async def go() -> list[int]:
        async with connect(home, RecordingClient()) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            sid = new.session_id
            return [
                await _code(conn.new_session(cwd="relative/path", mcp_servers=[])),
                await _code(conn.new_session(cwd=str(workspace / "missing"), mcp_servers=[])),
                await _code(conn.new_session(cwd="/", mcp_servers=[])),
                await _code(conn.new_session(cwd=str(Path.home()), mcp_servers=[])),
                await _code(conn.prompt(session_id="session_unknown", prompt=[text_block("x")])),
                await _code(conn.prompt(session_id=sid, prompt=[])),
                await _code(
                    conn.prompt(
                        session_id=sid,
                        prompt=[AudioContentBlock(type="audio", data=PNG, mime_type="audio/wav")],
                    )
                ),
                await _code(
                    conn.prompt(
                        session_id=sid,
                        prompt=[ImageContentBlock(type="image", data="%%%", mime_type="image/png")],
                    )
                ),
                await _code(
                    conn.load_session(cwd=str(workspace), session_id="session_x", mcp_servers=[])
                ),
                await _code(
                    conn.resume_session(cwd=str(workspace), session_id="session_x", mcp_servers=[])
                ),
                await _code(conn.authenticate(method_id="password")),
                await _code(conn.fork_session(cwd=str(workspace), session_id=sid, mcp_servers=[])),
            ]

    assert run(go()) == [
        INVALID_PARAMS,
        INVALID_PARAMS,
        INVALID_PARAMS,
        INVALID_PARAMS,
        NOT_FOUND,
        INVALID_PARAMS,
        INVALID_PARAMS,
        INVALID_PARAMS,
        NOT_FOUND,
        NOT_FOUND,
        INVALID_PARAMS,
        -32601,
    ]
    assert llm.model_requests == []  # nothing reached the model


def test_a_client_mcp_server_that_does_not_start_is_named_and_the_session_goes_on(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add(text("fine without it"))
    server = McpServerStdio(name="broken", command="true", args=[], env=[])
    client = RecordingClient()

    async def go() -> str:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[server])
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block("x")])
            return done.stop_reason

    assert run(go()) == "end_turn"
    assert client.text("agent_thought_chunk").startswith("MCP server broken: ")
    assert client.text() == "fine without it"
    log = (home / "acp-stderr.log").read_text(encoding="utf-8")
    assert "the client's MCP server broken: " in log


def test_a_second_prompt_while_a_turn_runs_is_refused(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add({"text": "slowly", "delay": 2})

    async def go() -> tuple[int, str]:
        async with connect(home, RecordingClient()) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            first = conn.prompt(session_id=new.session_id, prompt=[text_block("one")])
            import asyncio

            task = asyncio.ensure_future(first)
            await asyncio.sleep(0.5)
            code = await _code(conn.prompt(session_id=new.session_id, prompt=[text_block("2")]))
            return code, (await task).stop_reason

    assert run(go()) == (INVALID_REQUEST, "end_turn")


def test_authentication_needs_a_configured_model(tmp_path: Path, llm: FakeLLM) -> None:
    home = tmp_path / "empty-home"
    home.mkdir()

    async def go() -> tuple[int, Any]:
        async with connect(home, RecordingClient()) as (conn, _):
            refused = await _code(conn.authenticate(method_id="hermes-setup"))
        write_config(home, llm.openai_base_url)  # what `hermes setup` does
        async with connect(home, RecordingClient()) as (conn, _):
            return refused, await conn.authenticate(method_id="hermes-setup")

    refused, accepted = run(go())
    assert refused == AUTH_REQUIRED and accepted is not None


def test_a_provider_error_is_an_error_answer_in_one_line(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add({"error": {"status": 400, "message": "model fake-model does not exist"}})

    async def go() -> RequestError:
        async with connect(home, RecordingClient()) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            with pytest.raises(RequestError) as failed:
                await conn.prompt(session_id=new.session_id, prompt=[text_block("x")])
            return failed.value

    error = run(go())
    assert error.code == INTERNAL
    details = json.dumps(error.data)
    assert "does not exist" in details and "Traceback" not in details


def _tool_names(request: Any) -> set[str]:
    return {tool["function"]["name"] for tool in request.json.get("tools") or ()}


def test_the_toolset_configuration_applies_and_acp_toolsets_only_narrows(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    llm.add(text("one"), text("two"))

    async def turn() -> None:
        async with connect(home, RecordingClient()) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=new.session_id, prompt=[text_block("x")])

    write_config(
        home, llm.openai_base_url, "disabled_toolsets: [terminal]\nacp:\n  toolsets: [file, todo]\n"
    )
    run(turn())
    # acp.toolsets names a toolset the configuration does not enable: it stays off
    write_config(home, llm.openai_base_url, "acp:\n  toolsets: [file, terminal]\n")
    (home / "config.yaml").write_text(
        (home / "config.yaml")
        .read_text(encoding="utf-8")
        .replace("toolsets: [terminal, file, todo]", "toolsets: [file, todo]"),
        encoding="utf-8",
    )
    run(turn())
    first, second = (_tool_names(r) for r in llm.model_requests)
    assert "read_file" in first and "todo" in first and "terminal" not in first
    assert "read_file" in second and "todo" not in second and "terminal" not in second


def test_a_used_up_step_budget_ends_with_max_turn_requests(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    write_config(home, llm.openai_base_url, "agent:\n  max_turns: 1\n")
    llm.add(
        {"calls": [{"name": "todo", "arguments": {}}]},
        text("where I stopped: the list is read"),
    )
    client = RecordingClient()

    async def go() -> str:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            done = await conn.prompt(session_id=new.session_id, prompt=[text_block("go on")])
            return done.stop_reason

    assert run(go()) == "max_turn_requests"
    assert client.text() == "where I stopped: the list is read"
