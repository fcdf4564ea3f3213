"""``hermes mcp list | add | remove | test`` in a real ``hermes`` process with its own home,
against the demo MCP server."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml

from hermes_core.testing import FakeLLM

SERVER = Path(__file__).resolve().parent / "demo_server.py"


@pytest.fixture
def hermes(tmp_path: Path) -> Any:
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(tmp_path)

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        code = "import sys; from hermes_core.cli import main; sys.exit(main())"
        return subprocess.run(
            [sys.executable, "-c", code, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=120,
        )

    return run


def config(home: Path) -> dict[str, Any]:
    return yaml.safe_load((home / "config.yaml").read_text())


def one_line_error(done: subprocess.CompletedProcess[str], *needles: str) -> None:
    assert done.returncode == 1, done
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr, done.stderr
    for needle in needles:
        assert needle in done.stderr


def test_add_list_test_remove(hermes: Any, tmp_path: Path) -> None:
    empty = hermes("mcp", "list")
    assert empty.returncode == 0 and "no MCP servers configured" in empty.stdout

    added = hermes(
        "mcp", "add", "demo", "--command", sys.executable, "-e", "MODE=test",
        "--exclude", "slow", "--", str(SERVER),
    )  # fmt: skip
    assert added.returncode == 0, added.stderr
    assert "added MCP server demo (stdio: " in added.stdout and "toolset mcp-demo" in added.stdout
    remote = hermes("mcp", "add", "remote", "--url", "http://127.0.0.1:9/mcp", "-H", "X-Key=k")
    assert remote.returncode == 0, remote.stderr
    assert config(tmp_path)["mcp_servers"] == {
        "demo": {
            "command": sys.executable,
            "args": [str(SERVER)],
            "env": {"MODE": "test"},
            "tools": {"exclude": ["slow"]},
        },
        "remote": {"url": "http://127.0.0.1:9/mcp", "headers": {"X-Key": "k"}},
    }

    listed = hermes("mcp", "list")
    assert listed.returncode == 0, listed.stderr
    header, demo, remote_row = listed.stdout.splitlines()
    assert header.split() == ["NAME", "TRANSPORT", "STATUS", "TOOLS", "TARGET"]
    assert demo.split()[:5] == ["demo", "stdio", "enabled", "all", "but"]
    assert remote_row.split() == ["remote", "http", "enabled", "all", "http://127.0.0.1:9/mcp"]
    as_json = json.loads(hermes("mcp", "list", "--json").stdout)
    assert [s["toolset"] for s in as_json] == ["mcp-demo", "mcp-remote"]

    tested = hermes("mcp", "test", "demo")
    assert tested.returncode == 0, tested.stderr
    lines = tested.stdout.splitlines()
    assert lines[0].startswith("connected to demo (stdio) in ")
    assert lines[0].endswith("7 tools, 6 offered as toolset mcp-demo")
    assert "  mcp_demo_add  Add two integers." in lines
    assert "  mcp_demo_slow  (excluded)  Answer after some seconds." in lines

    one_line_error(hermes("mcp", "test", "remote"), "MCP server 'remote' could not start")
    one_line_error(
        hermes("mcp", "add", "demo", "--url", "http://x/mcp"), "already configured (use --replace)"
    )

    removed = hermes("mcp", "remove", "remote")
    assert removed.returncode == 0 and "removed MCP server remote" in removed.stdout
    assert list(config(tmp_path)["mcp_servers"]) == ["demo"]
    one_line_error(hermes("mcp", "remove", "remote"), "no MCP server 'remote'", "demo")


def test_mistakes_are_one_line_errors(hermes: Any, tmp_path: Path) -> None:
    one_line_error(hermes("mcp", "add", "x"), "either --command CMD")
    one_line_error(hermes("mcp", "add", "x", "--command", "a", "--url", "http://h/"), "either")
    one_line_error(hermes("mcp", "add", "bad name", "--command", "a"), "invalid server name")
    one_line_error(hermes("mcp", "add", "x", "--url", "ftp://h/"), "http:// or https://")
    one_line_error(hermes("mcp", "add", "x", "--command", "a", "-e", "NOVALUE"), "NAME=VALUE")
    one_line_error(hermes("mcp", "test", "nothing"), "no MCP server 'nothing'")
    assert not (tmp_path / "config.yaml").exists()  # nothing was written

    hermes("mcp", "add", "gone", "--command", "/nonexistent/server")
    one_line_error(
        hermes("mcp", "test", "gone"), "could not start: command not found: /nonexistent/server"
    )


def test_a_chat_names_a_broken_server_once_and_the_tools_list_shows_it(
    hermes: Any, tmp_path: Path
) -> None:
    with FakeLLM() as llm:
        llm.add("hello")
        model = {"provider": "custom", "base_url": llm.openai_base_url, "default": "m"}
        (tmp_path / "config.yaml").write_text(
            yaml.safe_dump({"model": {**model, "api_key": "test"}, "agent": {"api_max_retries": 0}})
        )
        hermes("mcp", "add", "gone", "--command", "/nonexistent/server")
        hermes("mcp", "add", "demo", "--command", sys.executable, "--", str(SERVER))
        chat = hermes("chat", "-q", "hi")
        assert chat.returncode == 0, chat.stderr
        assert chat.stdout.strip() == "hello"
        assert chat.stderr.splitlines() == [
            "hermes: warning: toolset 'mcp-gone' unavailable: MCP server 'gone' could not "
            "start: command not found: /nonexistent/server"
        ]
        (request,) = llm.model_requests
        names = [t["function"]["name"] for t in request.json["tools"]]
        assert "mcp_demo_add" in names and not any(n.startswith("mcp_gone") for n in names)
    listed = hermes("tools", "list")
    assert listed.returncode == 0, listed.stderr
    (row,) = [line for line in listed.stdout.splitlines() if line.startswith("mcp-gone")]
    assert "unavailable: toolset 'mcp-gone' unavailable: MCP server 'gone' could not start" in row


def test_tools_disable_and_enable_take_an_mcp_tool(hermes: Any, tmp_path: Path) -> None:
    hermes("mcp", "add", "demo", "--command", sys.executable, "--", str(SERVER))
    off = hermes("tools", "disable", "mcp_demo_add")
    assert off.returncode == 0, off.stderr
    assert config(tmp_path)["disabled_tools"] == ["mcp_demo_add"]
    listed = hermes("tools", "list")
    (row,) = [line for line in listed.stdout.splitlines() if " mcp_demo_add " in line]
    assert row.split()[:3] == ["mcp-demo", "mcp_demo_add", "disabled"]
    on = hermes("tools", "enable", "mcp_demo_add")
    assert on.returncode == 0 and "enabled tool mcp_demo_add (toolset mcp-demo)" in on.stdout
    assert "disabled_tools" not in config(tmp_path)
