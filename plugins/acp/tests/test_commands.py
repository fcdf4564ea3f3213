"""The session's slash commands (``available_commands_update``, a prompt that is a command) and
``logout``, through a real ``hermes acp``."""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest
from acp import RequestError, text_block
from acp_client import RecordingClient, connect, install_plugin, run

from hermes_core.testing import FakeLLM, text

GREETER = """
from hermes_hookspecs import HermesError, SlashCommand, hookimpl


def greet(arguments, context):
    if arguments == "fail":
        raise HermesError("cannot greet nobody")
    context.echo(f"hello {arguments} in {context.config['terminal']['cwd']}")
    context.echo(f"stored: {context.session_store().get_session(context.session_id).id}")


@hookimpl
def hermes_register_slash_commands(register):
    register(SlashCommand(name="greet", summary="say hello", handler=greet, usage="NAME"))
"""


def _env(tmp_path: Path) -> dict[str, str]:
    plugin = install_plugin(tmp_path / "site", "greeter", GREETER)
    return {
        "PYTHONPATH": os.pathsep.join(filter(None, [plugin, os.environ.get("PYTHONPATH")])),
        "HERMES_PLUGINS": "acp,openai,local,terminal,file,approvals,todo,greeter",
    }


async def _commands(client: RecordingClient, session_id: str) -> list[tuple[str, str, str]]:
    for _ in range(100):
        found = [u for s, u in client.commands if s == session_id]
        if found:
            return [
                (c.name, c.description, c.input.root.hint if c.input else "")
                for c in found[-1].available_commands
            ]
        await asyncio.sleep(0.05)
    raise AssertionError("no available_commands_update")


def test_commands_are_announced_and_run(
    home: Path, llm: FakeLLM, workspace: Path, tmp_path: Path
) -> None:
    llm.add(text("an answer"))
    client = RecordingClient()
    outputs: list[str] = []

    async def go() -> None:
        async with connect(home, client, **_env(tmp_path)) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            listed = await _commands(client, new.session_id)
            assert listed == [
                ("help", "the commands of this session", ""),
                ("usage", "tokens this session used in this editor", ""),
                ("greet", "say hello (greeter)", "NAME"),
            ]
            for line in ("/greet Ada", "/greet fail", "/help"):
                before = len(client.updates)
                answer = await conn.prompt(session_id=new.session_id, prompt=[text_block(line)])
                assert answer.stop_reason == "end_turn"
                outputs.append(
                    "".join(
                        u.content.text
                        for _s, u in client.updates[before:]
                        if u.session_update == "agent_message_chunk"
                    )
                )
            await conn.prompt(session_id=new.session_id, prompt=[text_block("a real turn")])
            before = len(client.updates)
            await conn.prompt(session_id=new.session_id, prompt=[text_block("/usage")])
            outputs.append(
                "".join(
                    u.content.text
                    for _s, u in client.updates[before:]
                    if u.session_update == "agent_message_chunk"
                )
            )
            await conn.resume_session(session_id=new.session_id, cwd=str(workspace))
            for _ in range(100):
                if len(client.commands) == 2:
                    break
                await asyncio.sleep(0.05)
            assert [s for s, _u in client.commands] == [new.session_id] * 2  # again on resume

    run(go())
    greeting, failure, help_text, usage = outputs
    assert greeting.startswith(f"hello Ada in {workspace}\nstored: session_")
    assert failure == "/greet: cannot greet nobody\n"
    assert "/greet NAME" in help_text and "/usage" in help_text
    assert "input tokens:" in usage and "total tokens:" in usage
    assert len(llm.model_requests) == 1  # only the real turn reached the model


def test_unknown_slash_text_goes_to_the_model(home: Path, llm: FakeLLM, workspace: Path) -> None:
    llm.add(text("that is a path"))
    client = RecordingClient()

    async def go() -> None:
        async with connect(home, client) as (conn, _):
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            await conn.prompt(session_id=new.session_id, prompt=[text_block("/etc/hosts?")])

    run(go())
    assert client.text() == "that is a path"
    assert "/etc/hosts?" in str(llm.last_request.body)


def test_logout_closes_sessions_until_authenticate(
    home: Path, llm: FakeLLM, workspace: Path
) -> None:
    client = RecordingClient()

    async def go() -> None:
        async with connect(home, client) as (conn, _):
            init = await conn.initialize(protocol_version=1)
            assert init.agent_capabilities.auth.logout is not None
            new = await conn.new_session(cwd=str(workspace), mcp_servers=[])
            assert await conn._conn.send_request("logout", {}) == {}
            with pytest.raises(RequestError) as closed:
                await conn.prompt(session_id=new.session_id, prompt=[text_block("hi")])
            assert closed.value.code == -32002  # resource_not_found: the session was closed
            with pytest.raises(RequestError) as refused:
                await conn.new_session(cwd=str(workspace), mcp_servers=[])
            assert refused.value.code == -32000  # auth_required
            assert "authenticate again" in str(refused.value.data)
            await conn.authenticate(method_id="hermes-setup")
            await conn.load_session(session_id=new.session_id, cwd=str(workspace))

    run(go())
    assert llm.model_requests == []
