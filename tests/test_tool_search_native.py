"""Native tool search on Anthropic's Messages API: deferred tools sent with defer_loading,
hermes's own search answered with tool_reference blocks, the found tool then called directly;
the shapes checked against the SDK's own types and by the fake server; a server without the
feature gets the portable request."""

from __future__ import annotations

import json
from typing import Any

import pytest

from hermes_core.loop.agent import Agent
from hermes_core.testing import FakeLLM, plugin_manager, toolset_plugin
from hermes_core.tools.bridge import BRIDGE_NAMES, FIND
from hermes_hookspecs import Tool

SCHEMA = {
    "type": "object",
    "properties": {"repo": {"type": "string"}, "title": {"type": "string"}},
    "required": ["repo", "title"],
}


def mcp_tools(ran: list[Any]) -> list[Tool]:
    tools = [
        Tool(
            "mcp_gh_create_issue",
            "Create a new issue in a GitHub repository.",
            SCHEMA,
            lambda a, c: ran.append(a) or "issue 7",
        )
    ]
    tools += [
        Tool(f"mcp_gh_misc{i}", f"Miscellaneous helper {i}.", {"type": "object"}, str)
        for i in range(25)
    ]
    return tools


def run(fake: FakeLLM, ran: list[Any], config: dict[str, Any] | None = None) -> str:
    agent = Agent.from_config(
        config or {},
        provider="anthropic",
        base_url=fake.anthropic_base_url,
        api_key="k",
        model="claude-test",
        plugins=plugin_manager(["anthropic", toolset_plugin(*mcp_tools(ran), name="mcp-gh")]),
    )
    with agent:
        return agent.chat("file an issue")


SCRIPT = (
    {"calls": [{"name": FIND, "arguments": {"query": "create issue"}}]},
    {"calls": [{"name": "mcp_gh_create_issue", "arguments": {"repo": "r", "title": "t"}}]},
    "filed",
)


def test_deferred_tools_and_tool_references_on_the_messages_api():
    anthropic_types = pytest.importorskip("anthropic.types")
    from pydantic import TypeAdapter

    ran: list[Any] = []
    with FakeLLM(*SCRIPT) as fake:
        assert run(fake, ran) == "filed"
        assert not fake.errors, fake.errors
        bodies = [r.json for r in fake.model_requests]
    assert ran == [{"repo": "r", "title": "t"}]
    assert len(bodies) == 3
    assert len({json.dumps(b["tools"]) for b in bodies}) == 1  # byte-stable tool array
    tools = bodies[0]["tools"]
    deferred = [t for t in tools if t.get("defer_loading") is True]
    assert {t["name"] for t in deferred} == {t.name for t in mcp_tools([])}
    assert {t["name"] for t in tools if "defer_loading" not in t} == set(BRIDGE_NAMES)
    tool_adapter = TypeAdapter(anthropic_types.ToolParam)
    for tool in tools:
        tool_adapter.validate_python(tool, strict=True)
    # the search's result loads the tool it found
    results = [
        block
        for message in bodies[1]["messages"]
        if isinstance(message["content"], list)
        for block in message["content"]
        if block.get("type") == "tool_result"
    ]
    refs = [part for part in results[0]["content"] if part["type"] == "tool_reference"]
    assert refs[0] == {"type": "tool_reference", "tool_name": "mcp_gh_create_issue"}
    assert results[0]["content"][0]["type"] == "text"
    TypeAdapter(anthropic_types.ToolResultBlockParam).validate_python(results[0], strict=True)
    # the model's direct call of the loaded tool stays in the history as it was made
    assert '"name": "mcp_gh_create_issue"' in json.dumps(bodies[2]["messages"])


def test_a_server_without_native_search_gets_the_portable_request():
    ran: list[Any] = []
    with FakeLLM(*SCRIPT, native_tool_search=False) as fake:
        assert run(fake, ran) == "filed"
        assert not fake.errors, fake.errors
        bodies = [r.json for r in fake.requests if r.json]
    assert ran == [{"repo": "r", "title": "t"}]
    assert "defer_loading" in json.dumps(bodies[0]["tools"])  # tried once, refused
    after = bodies[1:]
    assert after and all("defer_loading" not in json.dumps(b) for b in after)
    assert all("tool_reference" not in json.dumps(b) for b in after)


def test_portable_backend_setting_keeps_native_fields_out():
    ran: list[Any] = []
    with FakeLLM(*SCRIPT) as fake:
        config = {"tools": {"defer": {"backend": "portable"}}}
        assert run(fake, ran, config) == "filed"
        bodies = [r.json for r in fake.model_requests]
    assert all("defer_loading" not in json.dumps(b) for b in bodies)


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"tools": [{"name": "a", "defer_loading": True}]}, "at least one tool"),
        (
            {
                "tools": [{"name": "a"}],
                "messages": [
                    {
                        "role": "user",
                        "content": [
                            {
                                "type": "tool_result",
                                "tool_use_id": "x",
                                "content": [{"type": "tool_reference", "tool_name": "zz"}],
                            }
                        ],
                    }
                ],
            },
            "is not a deferred tool",
        ),
    ],
)
def test_the_fake_server_refuses_what_the_api_refuses(body: dict[str, Any], message: str):
    from hermes_core.testing.fake_llm.tool_search import problem

    assert message in (problem("anthropic_messages", body, True) or "")
