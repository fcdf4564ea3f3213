"""Native tool search: on Anthropic's Messages API, deferred tools sent with defer_loading and
hermes's own search answered with tool_reference blocks; on OpenAI's Responses API, deferred
functions in a namespace per toolset with a client tool_search, whose calls hermes runs and
answers with tool_search_output. The found tool is then called directly; the shapes are
checked against the SDKs' own types and by the fake server; a server without the feature gets
the portable request."""

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


# --- OpenAI Responses ---------------------------------------------------------------------

RESPONSES_SCRIPT = (
    {"calls": [{"name": "tool_search", "arguments": {"query": "create issue"}}]},
    {"calls": [{"name": "mcp_gh_create_issue", "arguments": {"repo": "r", "title": "t"}}]},
    "filed",
)


def run_responses(fake: FakeLLM, ran: list[Any], config: dict[str, Any] | None = None) -> str:
    agent = Agent.from_config(
        {"model": {"api_mode": "codex_responses"}, **(config or {})},
        provider="custom",
        base_url=fake.openai_base_url,
        api_key="k",
        model="gpt-test",
        plugins=plugin_manager(["openai", toolset_plugin(*mcp_tools(ran), name="mcp-gh")]),
    )
    with agent:
        answer = agent.chat("file an issue")
        stored = agent.messages
    assert any(call.get("_tool_search") for m in stored for call in m.get("tool_calls") or []), (
        "the model's tool_search_call is stored as a call of hermes's search"
    )
    return answer


def test_tool_search_with_namespaces_on_the_responses_api():
    responses_types = pytest.importorskip("openai.types.responses")
    from pydantic import TypeAdapter

    ran: list[Any] = []
    with FakeLLM(*RESPONSES_SCRIPT) as fake:
        assert run_responses(fake, ran) == "filed"
        assert not fake.errors, fake.errors
        bodies = [r.json for r in fake.model_requests]
    assert ran == [{"repo": "r", "title": "t"}]
    assert len({json.dumps(b["tools"]) for b in bodies}) == 1  # byte-stable tool array
    tools = bodies[0]["tools"]
    tool_adapter = TypeAdapter(responses_types.ToolParam)
    for tool in tools:
        tool_adapter.validate_python(tool, strict=True)
    (space,) = [t for t in tools if t["type"] == "namespace"]
    assert space["name"] == "mcp_gh"
    assert all(fn["defer_loading"] is True for fn in space["tools"])
    assert {fn["name"] for fn in space["tools"]} == {t.name for t in mcp_tools([])}
    assert {"type": "tool_search", "execution": "client"}.items() <= [
        t for t in tools if t["type"] == "tool_search"
    ][0].items()
    assert {t["name"] for t in tools if t["type"] == "function"} == set(BRIDGE_NAMES)
    # the search went back as the model wrote it, with the tool it loaded
    items = bodies[1]["input"]
    search = [i for i in items if i.get("type") == "tool_search_call"]
    output = [i for i in items if i.get("type") == "tool_search_output"]
    assert search[0]["arguments"] == {"query": "create issue"}
    assert output[0]["call_id"] == search[0]["call_id"]
    assert output[0]["tools"][0]["name"] == "mcp_gh"
    assert output[0]["tools"][0]["tools"][0]["name"] == "mcp_gh_create_issue"
    item_adapter = TypeAdapter(responses_types.ResponseInputItemParam)
    for item in (search[0], output[0]):
        item_adapter.validate_python(item, strict=True)
    # the direct call of the loaded function keeps its namespace
    calls = [i for i in bodies[2]["input"] if i.get("type") == "function_call"]
    assert calls[-1]["name"] == "mcp_gh_create_issue" and calls[-1]["namespace"] == "mcp_gh"
    item_adapter.validate_python(calls[-1], strict=True)


def test_a_responses_server_without_tool_search_gets_the_portable_request():
    ran: list[Any] = []
    script = (
        {"calls": [{"name": FIND, "arguments": {"query": "create issue"}}]},
        {
            "calls": [
                {
                    "name": "call_tool",
                    "arguments": {
                        "name": "mcp_gh_create_issue",
                        "arguments": {"repo": "r", "title": "t"},
                    },
                }
            ]
        },
        "filed",
    )
    with FakeLLM(*script, native_tool_search=False) as fake:
        agent = Agent.from_config(
            {"model": {"api_mode": "codex_responses"}},
            provider="custom",
            base_url=fake.openai_base_url,
            api_key="k",
            model="gpt-test",
            plugins=plugin_manager(["openai", toolset_plugin(*mcp_tools(ran), name="mcp-gh")]),
        )
        with agent:
            assert agent.chat("file it") == "filed"
        assert not fake.errors, fake.errors
        bodies = [r.json for r in fake.requests if r.json]
    assert ran == [{"repo": "r", "title": "t"}]
    assert "tool_search" in json.dumps(bodies[0]["tools"])  # tried once, refused
    assert all("defer_loading" not in json.dumps(b) for b in bodies[1:])


def _blocks(body: dict[str, Any]) -> list[str]:
    """A Messages request as the sequence the cache reads: tools, system, then each message's
    blocks with their role, cache markers left out (they move from request to request)."""

    def bare(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: bare(v) for k, v in value.items() if k != "cache_control"}
        if isinstance(value, list):
            return [bare(v) for v in value]
        return value

    out = [json.dumps(bare(t), sort_keys=True) for t in body.get("tools") or []]
    out += [json.dumps(bare(b), sort_keys=True) for b in body.get("system") or []]
    for message in body["messages"]:
        for block in message["content"]:
            out.append(message["role"] + json.dumps(bare(block), sort_keys=True))
    return out


def test_twenty_turns_of_native_discoveries_keep_each_cached_prefix():
    ran: list[Any] = []
    names = ["mcp_gh_create_issue", *(f"mcp_gh_misc{i}" for i in range(19))]
    script: list[Any] = []
    for turn, name in enumerate(names):
        args = {"repo": "r", "title": str(turn)} if name == "mcp_gh_create_issue" else {}
        words = "create issue" if turn == 0 else f"miscellaneous helper {turn - 1}"
        script += [
            {"calls": [{"name": FIND, "arguments": {"query": words}}]},
            {"calls": [{"name": name, "arguments": args}]},
            f"turn {turn}",
        ]
    with FakeLLM(*script) as fake:
        agent = Agent.from_config(
            {},
            provider="anthropic",
            base_url=fake.anthropic_base_url,
            api_key="k",
            model="claude-test",
            plugins=plugin_manager(["anthropic", toolset_plugin(*mcp_tools(ran), name="mcp-gh")]),
        )
        with agent:
            for turn in range(20):
                assert agent.chat(f"turn {turn}") == f"turn {turn}"
        assert not fake.errors, fake.errors
        bodies = [r.json for r in fake.model_requests]
    assert len(bodies) == 60 and len(ran) == 1
    last = json.dumps(bodies[-1])
    for name in names:  # every discovery stays loaded
        assert f'"tool_name": "{name}"' in last, name
    for before, after in zip(bodies, bodies[1:], strict=False):
        earlier, later = _blocks(before), _blocks(after)
        marked = max(i for i, block in enumerate(_marked_blocks(before)) if block)
        assert later[: marked + 1] == earlier[: marked + 1], "an earlier cached byte changed"
        assert later[: len(earlier)] == earlier


def _marked_blocks(body: dict[str, Any]) -> list[bool]:
    """For each item of :func:`_blocks`, whether it carries a cache marker."""
    marks = [False for _ in body.get("tools") or []]
    marks += ["cache_control" in b for b in body.get("system") or []]
    for message in body["messages"]:
        marks += ["cache_control" in block for block in message["content"]]
    return marks
