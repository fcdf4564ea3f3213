"""MCP servers through the real agent: a scripted model sees the servers' tools with their
schemas, calls them through the same dispatch, hooks and approval as any tool, and reads the
results; broken servers are reported once; servers stop when the session ends."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from hermes_toolset_mcp.runtime import RUNTIME

from hermes_core.testing import Agent, ScriptedModel, make_agent, text, tool_call, tool_calls
from hermes_core.testing.environment_suite import process_alive
from hermes_hookspecs import TOOL_NAME_RE, Block, hookimpl

SERVER = Path(__file__).resolve().parent / "demo_server.py"
DEMO_TOOLS = [
    "mcp_demo_add",
    "mcp_demo_crash",
    "mcp_demo_fail",
    "mcp_demo_picture",
    "mcp_demo_pid",
    "mcp_demo_read_env",
    "mcp_demo_slow",
]


def demo(**extra: Any) -> dict[str, Any]:
    """The stdio demo server, recording its calls in $DEMO_CALLS_PATH."""
    env = {"DEMO_CALLS": "${DEMO_CALLS_PATH}", **extra.pop("env", {})}
    return {"command": sys.executable, "args": [str(SERVER)], "env": env, **extra}


def tool_results(agent: Agent) -> list[str]:
    return [m["content"] for m in agent.messages if m["role"] == "tool"]


def test_stdio_tools_have_the_servers_schemas_and_answer_the_model(calls: Path) -> None:
    with make_agent(
        tool_calls(("mcp_demo_add", {"a": 2, "b": 40}), ("mcp_demo_picture", {})),
        tool_call("mcp_demo_fail", {"message": "no luck"}),
        text("done"),
        plugins=["mcp"],
        config={"mcp_servers": {"demo": demo()}},
    ) as agent:
        assert agent.chat("go") == "done"
        first, second, third = agent.client.requests
        assert first.tool_names == DEMO_TOOLS
        add = next(t for t in first.tools if t["function"]["name"] == "mcp_demo_add")
        assert add["function"]["description"] == "Add two integers."
        parameters = add["function"]["parameters"]
        assert parameters["required"] == ["a", "b"]
        assert parameters["properties"]["a"]["type"] == "integer"
        added, picture = (m["content"] for m in second.messages[-2:])
        assert added == "42"
        assert picture.startswith("[image image/png, 24 bytes")
        assert third.messages[-1]["content"].startswith("Error: ")  # isError: an error result
        # add and picture run side by side: the server may see them in either order
        received = calls.read_text().split()
        assert sorted(received[:2]) == ["add", "picture"] and received[2:] == ["fail"]


def test_streamable_http_server_with_headers(http_url: str, token: str) -> None:
    config = {
        "mcp_servers": {
            "remote": {"url": http_url, "headers": {"Authorization": f"Bearer {token}"}}
        }
    }
    with make_agent(
        tool_call("mcp_remote_add", {"a": 1, "b": 2}), "three", plugins=["mcp"], config=config
    ) as agent:
        assert agent.chat("add") == "three"
        assert "mcp_remote_add" in agent.client.requests[0].tool_names
        assert tool_results(agent) == ["3"]
        assert agent.tool_problems == []


def test_http_server_without_its_token_is_one_reported_line(http_url: str) -> None:
    config = {"mcp_servers": {"remote": {"url": http_url}}}
    with make_agent("no tools", plugins=["mcp"], config=config) as agent:
        assert agent.toolbox.names == ()
        (line,) = agent.tool_problems
        assert line.startswith("toolset 'mcp-remote' unavailable: MCP server 'remote'")
        assert "\n" not in line


def test_include_and_exclude_choose_the_offered_tools(calls: Path) -> None:
    config = {
        "mcp_servers": {
            "demo": demo(tools={"include": ["add", "p*"]}),
            "other": demo(tools={"exclude": ["slow", "fail", "read_env", "crash"]}),
        }
    }
    with make_agent("ok", plugins=["mcp"], config=config) as agent:
        assert agent.toolbox.names == (
            "mcp_demo_add",
            "mcp_demo_picture",
            "mcp_demo_pid",
            "mcp_other_add",
            "mcp_other_picture",
            "mcp_other_pid",
        )


def test_a_broken_server_is_reported_once_and_the_others_work(calls: Path) -> None:
    events: list[str] = []
    config = {
        "mcp_servers": {
            "broken": {"command": "/nonexistent/mcp-server", "args": ["--stdio"]},
            "invalid": {"command": "x", "url": "http://127.0.0.1:1/mcp"},
            "demo": demo(),
        }
    }
    agent = make_agent(
        tool_call("mcp_demo_add", {"a": 1, "b": 1}),
        "two",
        plugins=["mcp"],
        config=config,
        event_sink=lambda e: events.append(e.data.get("text", "")) if e.name == "status" else None,
    )
    with agent:
        assert sorted(agent.tool_problems) == [
            "toolset 'mcp-broken' unavailable: MCP server 'broken' could not start: "
            "command not found: /nonexistent/mcp-server",
            "toolset 'mcp-invalid' unavailable: mcp_servers.invalid needs exactly one of "
            "'command' (stdio) or 'url' (HTTP)",
        ]
        assert sorted(events) == sorted(f"warning: {line}" for line in agent.tool_problems)
        assert agent.chat("add") == "two"
        assert tool_results(agent) == ["2"]
        # A second agent of the same process (same plugins) is not told again.
        with Agent.from_config(
            client=ScriptedModel("hi"), plugins=agent.plugins, config=config
        ) as again:
            assert again.tool_problems == []
            assert "mcp_demo_add" in again.toolbox.names


def test_a_pre_tool_call_block_stops_an_mcp_call_before_the_server(calls: Path) -> None:
    class NoMcp:
        @hookimpl
        def hermes_pre_tool_call(self, call: Any, context: Any) -> Any:
            if call.name.startswith("mcp_"):
                return Block("MCP tools are switched off here")
            return None

    with make_agent(
        tool_call("mcp_demo_add", {"a": 1, "b": 2}),
        "blocked",
        plugins=["mcp", NoMcp()],
        config={"mcp_servers": {"demo": demo()}},
    ) as agent:
        agent.chat("add")
        (result,) = tool_results(agent)
        assert "MCP tools are switched off here" in result
        assert calls.read_text() == ""  # the server never saw the call


def test_require_approval_asks_and_a_denial_never_reaches_the_server(calls: Path) -> None:
    asked: list[Any] = []

    def deny(request: Any) -> str:
        asked.append(request)
        return "deny"

    config = {"mcp_servers": {"demo": demo(require_approval=True)}}
    with make_agent(
        tool_call("mcp_demo_add", {"a": 1, "b": 2}),
        "denied",
        plugins=["mcp"],
        config=config,
        approval_callback=deny,
    ) as agent:
        agent.chat("add")
        (result,) = tool_results(agent)
        assert result.startswith("BLOCKED: not approved") and "(rule user-denied)" in result
        assert calls.read_text() == ""
        (request,) = asked
        assert request.action == 'demo.add {"a": 1, "b": 2}'
    with make_agent(
        tool_call("mcp_demo_add", {"a": 1, "b": 2}),
        "approved",
        plugins=["mcp"],
        config=config,
        approval_callback=lambda request: "once",
    ) as agent:
        agent.chat("add")
        assert tool_results(agent) == ["3"]
        assert calls.read_text() == "add\n"


def test_the_stdio_child_sees_only_its_env_and_a_safe_base(
    calls: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-for-children-123")
    monkeypatch.setenv("UNRELATED_SETTING", "visible-to-hermes-only")
    monkeypatch.setenv("DEMO_TOKEN", "token-from-dotenv-4567")
    config = {"mcp_servers": {"demo": demo(env={"GREETING": "hello", "TOKEN": "${DEMO_TOKEN}"})}}
    names = ["GREETING", "OPENAI_API_KEY", "UNRELATED_SETTING", "PATH", "TOKEN"]
    with make_agent(
        tool_calls(*[("mcp_demo_read_env", {"name": n}) for n in names]),
        "ok",
        plugins=["mcp"],
        config=config,
    ) as agent:
        agent.chat("env")
        greeting, key, unrelated, path, token = tool_results(agent)
        assert (greeting, key, unrelated) == ("hello", "<unset>", "<unset>")
        assert path == os.environ["PATH"]
        assert token == "[REDACTED]"  # the expanded value reached the server, not the model


def test_a_call_longer_than_the_timeout_is_an_error_for_the_model(calls: Path) -> None:
    config = {"mcp_servers": {"demo": demo(timeout=0.5)}}
    with make_agent(
        tool_call("mcp_demo_slow", {"seconds": 5}), "late", plugins=["mcp"], config=config
    ) as agent:
        started = time.monotonic()
        agent.chat("wait")
        assert time.monotonic() - started < 4
        (result,) = tool_results(agent)
        assert result == (
            "Error: MCP server 'demo' did not answer 'slow' within 0.5s (mcp_servers.demo.timeout)"
        )


def test_servers_that_die_or_hang_at_start_are_one_line_each(calls: Path) -> None:
    dies = "import sys; print('bad config: no API_TOKEN', file=sys.stderr); sys.exit(3)"
    config = {
        "mcp_servers": {
            "dies": {"command": sys.executable, "args": ["-c", dies]},
            "mute": {
                "command": sys.executable,
                "args": ["-c", "import time; time.sleep(60)"],
                "connect_timeout": 1,
            },
        }
    }
    started = time.monotonic()
    with make_agent("ok", plugins=["mcp"], config=config) as agent:
        assert time.monotonic() - started < 15  # a hung server is given up, not waited for
        assert sorted(agent.tool_problems) == [
            "toolset 'mcp-dies' unavailable: MCP server 'dies' could not start: "
            "Connection closed (server said: bad config: no API_TOKEN)",
            "toolset 'mcp-mute' unavailable: MCP server 'mute' did not start within 1s "
            "(mcp_servers.mute.connect_timeout)",
        ]


def test_a_server_that_crashes_mid_session_starts_again_at_the_next_call(calls: Path) -> None:
    with make_agent(
        tool_call("mcp_demo_pid", {}),
        tool_call("mcp_demo_crash", {}),
        tool_call("mcp_demo_pid", {}),
        "recovered",
        plugins=["mcp"],
        config={"mcp_servers": {"demo": demo()}},
    ) as agent:
        assert agent.chat("crash it") == "recovered"
        before, crashed, after = tool_results(agent)
        assert crashed.startswith("Error: MCP server 'demo': ")
        assert before.isdigit() and after.isdigit() and before != after
        assert calls.read_text().split() == ["pid", "crash", "pid"]


def test_an_interrupt_cuts_a_running_mcp_call_short(calls: Path) -> None:
    with make_agent(
        tool_call("mcp_demo_slow", {"seconds": 30}),
        "never",
        plugins=["mcp"],
        config={"mcp_servers": {"demo": demo()}},
    ) as agent:
        timer = threading.Timer(1.0, agent.interrupt)
        started = time.monotonic()
        timer.start()
        result = agent.run_conversation("wait")
        assert result["interrupted"] and time.monotonic() - started < 10
        (answer,) = tool_results(agent)
        assert answer == "Error: interrupted by the user while this tool was running."


def test_servers_start_lazily_and_stop_when_the_session_ends(calls: Path) -> None:
    config = {"mcp_servers": {"demo": demo(), "idle": demo()}}
    agent = make_agent(
        tool_call("mcp_demo_pid", {}),
        "pid",
        plugins=["mcp"],
        config={**config, "toolsets": ["mcp-demo"]},
    )
    assert RUNTIME.running() == ["demo"]  # the toolset not enabled never started
    agent.chat("pid?")
    pid = int(tool_results(agent)[0])
    assert process_alive(pid)
    agent.close()
    assert RUNTIME.running() == []
    deadline = time.monotonic() + 5
    while process_alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not process_alive(pid), "the stdio server outlived the session"


def test_tool_names_are_valid_for_every_provider() -> None:
    from hermes_toolset_mcp.names import tool_name

    long = tool_name("a-very-long-server-name-indeed", "and.an/even longer tool name " * 3)
    other = tool_name("a-very-long-server-name-indeed", "and.an/even longer tool name " * 4)
    assert len(long) == 64 and TOOL_NAME_RE.match(long) and long != other
    assert tool_name("files", "read.file") == "mcp_files_read_file"


@pytest.mark.skipif(
    __import__("hermes_env_sandbox").unavailable_reason() is not None, reason="no sandbox here"
)
def test_a_server_with_sandbox_workspace_runs_contained(calls: Path) -> None:
    workspace = Path(tempfile.mkdtemp(prefix="hermes-mcp-ws-", dir="/var/tmp"))
    try:
        recorded = workspace / "calls.txt"
        shutil.copy(SERVER, workspace / "demo_server.py")  # the checkout may lie under /tmp
        server = demo(sandbox="workspace", cwd=str(workspace), env={"DEMO_CALLS": str(recorded)})
        server["args"] = [str(workspace / "demo_server.py")]
        with make_agent(
            tool_calls(("mcp_demo_pid", {}), ("mcp_demo_add", {"a": 1, "b": 2})),
            "ok",
            plugins=["mcp"],
            config={"mcp_servers": {"demo": server}},
        ) as agent:
            agent.chat("go")
            pid, added = tool_results(agent)
        assert int(pid) < 10  # a PID namespace of its own: no host pid is that small
        assert added == "3"
        assert "add" in recorded.read_text()  # it may write its working folder
    finally:
        shutil.rmtree(workspace, ignore_errors=True)


def test_sandbox_is_for_stdio_servers_and_named_profiles() -> None:
    from hermes_toolset_mcp.settings import ServerConfigError, parse_server

    with pytest.raises(ServerConfigError, match="sandbox must be one of"):
        parse_server("demo", demo(sandbox="everything"))
    with pytest.raises(ServerConfigError, match="stdio servers"):
        parse_server("web", {"url": "http://127.0.0.1:1/mcp", "sandbox": "workspace"})
    assert parse_server("demo", demo()).sandbox == "off"
