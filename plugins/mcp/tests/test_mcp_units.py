"""The pieces without a server: MCP results as tool result text, the ``mcp_servers`` entries,
and what loading the plugin costs."""

from __future__ import annotations

import base64
import json
import os
import subprocess
import sys
from pathlib import Path

import mcp_types as types
import pytest
from hermes_toolset_mcp.results import result_text
from hermes_toolset_mcp.settings import ServerConfigError, expand, parse_server, parse_servers

from hermes_hookspecs import ToolError


def _result(*content: object, structured: object = None, error: bool = False) -> object:
    return types.CallToolResult(
        content=list(content), structured_content=structured, is_error=error
    )


def test_text_blocks_are_joined_in_order() -> None:
    result = _result(
        types.TextContent(type="text", text="one"), types.TextContent(type="text", text="two")
    )
    assert result_text(result) == "one\ntwo"


def test_images_and_audio_are_a_short_note() -> None:
    data = base64.b64encode(b"x" * 300).decode()
    result = _result(
        types.ImageContent(type="image", data=data, mime_type="image/png"),
        types.AudioContent(type="audio", data=data, mime_type="audio/wav"),
    )
    assert result_text(result).splitlines() == [
        "[image image/png, 300 bytes: binary content is not shown to the model]",
        "[audio audio/wav, 300 bytes: binary content is not shown to the model]",
    ]


def test_structured_content_stands_in_for_missing_text() -> None:
    assert result_text(_result(structured={"b": 1, "a": [2]})) == json.dumps({"a": [2], "b": 1})
    with_text = _result(types.TextContent(type="text", text="3"), structured={"result": 3})
    assert result_text(with_text) == "3"  # the text already says it


def test_resources_show_their_text_or_a_note() -> None:
    text = types.EmbeddedResource(
        type="resource",
        resource=types.TextResourceContents(uri="file:///a.txt", mime_type="text/plain", text="hi"),
    )
    blob = types.EmbeddedResource(
        type="resource",
        resource=types.BlobResourceContents(
            uri="file:///b.bin", blob=base64.b64encode(b"12").decode()
        ),
    )
    link = types.ResourceLink(
        type="resource_link", name="c", uri="file:///c.md", mime_type="text/markdown"
    )
    assert result_text(_result(text, blob, link)).splitlines() == [
        "[resource <file:///a.txt> (text/plain)]",
        "hi",
        "[resource <file:///b.bin> binary, 2 bytes: not shown]",
        "[resource link: c <file:///c.md> (text/markdown)]",
    ]


def test_an_error_result_raises_its_text_and_an_empty_one_says_so() -> None:
    with pytest.raises(ToolError, match="^disk full$"):
        result_text(_result(types.TextContent(type="text", text="disk full"), error=True))
    with pytest.raises(ToolError, match="without a message"):
        result_text(_result(error=True))
    assert result_text(_result()) == "(the tool returned no output)"


def test_entries_in_the_agents_shape() -> None:
    server = parse_server(
        "files",
        {
            "command": "npx",
            "args": ["-y", "@modelcontextprotocol/server-filesystem", "/tmp"],
            "env": {"DEBUG": 1},
            "timeout": 30,
            "tools": {"include": ["read_*"]},
            "sampling": {"enabled": False},
        },
    )
    assert (server.transport, server.timeout, server.env) == ("stdio", 30.0, (("DEBUG", "1"),))
    assert server.target == "npx -y @modelcontextprotocol/server-filesystem /tmp"
    assert server.wants("read_file") and not server.wants("write_file")
    assert server.extra == ("sampling",)
    remote = parse_server("r", {"url": "https://h/mcp", "headers": {"A": "b"}, "enabled": "no"})
    assert (remote.transport, remote.enabled, remote.headers) == ("http", False, (("A", "b"),))
    assert parse_server("q", {"command": "x", "require_approval": "maybe"}).require_approval


@pytest.mark.parametrize(
    "entry, says",
    [
        ("npx server", "must be a mapping"),
        ({}, "exactly one of 'command'"),
        ({"command": "a", "url": "http://h"}, "exactly one of 'command'"),
        ({"url": "h/mcp"}, "http:// or https://"),
        ({"command": "a", "timeout": "soon"}, "timeout must be a number"),
        ({"command": "a", "timeout": 0}, "more than 0"),
        ({"command": "a", "env": ["A=b"]}, "env must be a mapping"),
        ({"command": "a", "tools": ["x"]}, "tools must be a mapping"),
    ],
)
def test_unusable_entries_are_one_line_naming_the_server(entry: object, says: str) -> None:
    with pytest.raises(ServerConfigError, match=says) as caught:
        parse_server("s", entry)
    assert str(caught.value).startswith("mcp_servers.s")
    assert "\n" not in str(caught.value)


def test_parse_servers_keeps_going_past_a_bad_entry() -> None:
    good, bad = parse_servers({"mcp_servers": {"a": {"command": "x"}, "b b": {"command": "y"}}})
    assert good.name == "a" and isinstance(bad, ServerConfigError) and bad.server == "b b"
    assert parse_servers({}) == [] and parse_servers({"mcp_servers": None}) == []


def test_references_to_variables_are_expanded(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("MCP_TEST_TOKEN", "abc")
    monkeypatch.delenv("MCP_TEST_UNSET", raising=False)
    found: list[str] = []
    assert expand("Bearer ${MCP_TEST_TOKEN}", found) == "Bearer abc" and found == ["abc"]
    assert expand("${env:MCP_TEST_TOKEN}/${MCP_TEST_UNSET}") == "abc/${MCP_TEST_UNSET}"


@pytest.mark.parametrize("args", [["--help"], ["tools", "list"], ["mcp", "list"]])
def test_the_sdk_is_not_imported_without_a_server_to_start(args: list[str], tmp_path: Path) -> None:
    (tmp_path / "config.yaml").write_text(
        "mcp_servers:\n  off:\n    command: never-started\n    enabled: false\n"
    )
    probe = (
        "import sys\nfrom hermes_core.cli import main\n"
        f"sys.argv = ['hermes', *{args!r}]\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "sdk = ('mcp', 'mcp_types', 'anyio')\n"
        "heavy = sorted(m for m in sys.modules if m.split('.')[0] in sdk)\n"
        "print('@@', heavy)\n"
    )
    env = {k: v for k, v in os.environ.items() if not k.startswith("HERMES_")}
    env["HERMES_HOME"] = str(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", probe], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.rsplit("@@", 1)[1].strip() == "[]"
