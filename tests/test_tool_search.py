"""Tool search: the deferral policy (tools.defer), the catalogue's search, and the portable
bridge (find_tools, describe_tool, call_tool) through the whole loop, on the three wire
formats with the real SDKs, with a byte-stable prefix, resume, and the same hooks and approvals
as a direct call."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from hermes_core.loop.agent import Agent
from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import (
    FakeLLM,
    assert_valid_transcript,
    make_agent,
    plugin_manager,
    text,
    tool_call,
    toolset_plugin,
)
from hermes_core.tools.bridge import BRIDGE_NAMES, CALL, FIND
from hermes_core.tools.catalogue import Catalogue, one_line, words
from hermes_core.tools.deferral import DeferralError, DeferralPolicy
from hermes_hookspecs import ApprovalRequest, Block, Tool, ToolCall, hookimpl

ISSUE_SCHEMA = {
    "type": "object",
    "properties": {
        "owner": {"type": "string", "description": "repository owner"},
        "repo": {"type": "string", "description": "repository name"},
        "title": {"type": "string"},
        "body": {"type": "string"},
    },
    "required": ["owner", "repo", "title"],
}

SPECS = [
    ("create_issue", "Create a new issue in a GitHub repository.", ISSUE_SCHEMA),
    ("list_issues", "List issues in a GitHub repository, filtered by state and labels.", None),
    ("get_pull_request", "Get the details of a pull request.", None),
    ("merge_pull_request", "Merge a pull request into its base branch.", None),
    ("search_code", "Search code across repositories with a query.", None),
    ("send_message", "Send a message to a Slack channel.", None),
    ("list_channels", "List the channels of the Slack workspace.", None),
    ("get_sentry_issue", "Get a Sentry error event with its stack trace.", None),
    ("run_sql_query", "Run a read-only SQL query against the database.", None),
    ("list_tables", "List the tables of the database schema.", None),
    ("create_branch", "Create a branch from a commit.", None),
    ("get_file_contents", "Read a file from a repository at a ref.", None),
]
"""MCP-like tools of one server; filled to more than the threshold with generic ones."""


def mcp_tools(ran: list[tuple[str, dict[str, Any]]], extra: int = 15) -> list[Tool]:
    tools = []
    for name, description, schema in SPECS:
        params = schema or {"type": "object", "properties": {"query": {"type": "string"}}}
        tools.append(
            Tool(
                f"mcp_gh_{name}",
                description,
                params,
                lambda a, c, n=name: ran.append((n, a)) or f"{n} done",
            )
        )
    for i in range(extra):
        tools.append(Tool(f"mcp_gh_misc{i}", f"Miscellaneous helper {i}.", {"type": "object"}, str))
    return tools


def core_tool(ran: list[tuple[str, dict[str, Any]]]) -> Tool:
    return Tool(
        "terminal", "Run a shell command.", {"type": "object"}, lambda a, c: ran.append(("t", a))
    )


def toolset(*tools: Tool, name: str) -> object:
    """A toolset plugin named after its toolset (several can be loaded at once)."""
    plugin = toolset_plugin(*tools, name=name)
    plugin.__name__ = f"toolset-{name}"  # type: ignore[attr-defined]
    return plugin


def agent_with(*script: Any, ran: list[Any], config: dict[str, Any] | None = None, **kw: Any):
    plugins = [
        toolset(*mcp_tools(ran), name="mcp-gh"),
        toolset(core_tool(ran), name="core"),
        *kw.pop("plugins", []),
    ]
    return make_agent(*script, plugins=plugins, config=config or {}, **kw)


# --- the policy --------------------------------------------------------------------------


def test_policy_defers_mcp_tools_above_the_threshold_only():
    policy = DeferralPolicy()
    rows = [(f"mcp_x_{i}", "mcp-x", {"type": "function"}) for i in range(20)]
    rows.append(("terminal", "terminal", {}))
    assert policy.choose(rows, 200_000) == set()  # 20 is not above 20
    rows.append(("mcp_x_20", "mcp-x", {}))
    assert policy.choose(rows, 200_000) == {f"mcp_x_{i}" for i in range(21)}


def test_policy_defers_big_schemas_by_share_of_the_context_window():
    big = {"description": "x" * 9000}
    rows = [("mcp_a_big", "mcp-a", big), ("terminal", "terminal", big)]
    assert DeferralPolicy().choose(rows, 200_000) == set()
    assert DeferralPolicy().choose(rows, 16_000) == {"mcp_a_big"}  # 2,250 tokens > 1,600


def test_policy_marked_toolsets_keep_and_modes():
    rows = [("a", "web", {}), ("b", "web", {}), ("mcp_s_c", "mcp-s", {}), ("terminal", "t", {})]
    marked = DeferralPolicy.from_config(
        {"tools": {"defer": {"mode": "always", "toolsets": ["web"], "keep": ["b"]}}}
    )
    assert marked.choose(rows, None) == {"a", "mcp_s_c"}
    assert DeferralPolicy.from_config({"tools": {"defer": False}}).choose(rows, None) == set()
    no_mcp = DeferralPolicy.from_config({"tools": {"defer": {"mode": "always", "mcp": False}}})
    assert no_mcp.choose(rows, None) == set()


@pytest.mark.parametrize(
    ("defer", "message"),
    [
        ("yes", "tools.defer must be a mapping"),
        ({"mode": "sometimes"}, "tools.defer.mode must be one of auto, always, never"),
        ({"min_tools": -1}, "tools.defer.min_tools"),
        ({"min_share": 2}, "tools.defer.min_share"),
        ({"toolsets": "web"}, "tools.defer.toolsets must be a list of names"),
    ],
)
def test_bad_policy_settings_say_which(defer: Any, message: str):
    with pytest.raises(DeferralError, match=message.replace(".", r"\.")):
        DeferralPolicy.from_config({"tools": {"defer": defer}})


# --- the catalogue -----------------------------------------------------------------------


def test_search_finds_the_expected_tools_and_is_deterministic():
    catalogue = Catalogue((t, "mcp-gh") for t in mcp_tools([]))
    expected = {
        "open a new github issue": "mcp_gh_create_issue",
        "merge pull request": "mcp_gh_merge_pull_request",
        "slack channel message": "mcp_gh_send_message",
        "sql query database": "mcp_gh_run_sql_query",
        "stack trace sentry": "mcp_gh_get_sentry_issue",
        "read file contents": "mcp_gh_get_file_contents",
        "repository owner title": "mcp_gh_create_issue",  # parameter names count
        "mcp_gh_list_tables": "mcp_gh_list_tables",  # an exact name comes first
    }
    for query, name in expected.items():
        hits = catalogue.search(query, 3)
        assert hits and hits[0].name == name, (query, [h.name for h in hits])
        assert [h.name for h in catalogue.search(query, 3)] == [h.name for h in hits]
    assert catalogue.search("zebra quantum", 5) == []
    assert len(catalogue.search("issue", 2)) == 2


def test_listing_is_one_short_line_per_tool():
    catalogue = Catalogue((t, "mcp-gh") for t in mcp_tools([], extra=0))
    lines = catalogue.listing().splitlines()
    assert lines[0] == "[mcp-gh] mcp_gh_*"  # the shared prefix, said once
    assert "create_issue: Create a new issue in a GitHub repository" in lines
    assert catalogue.resolve("create_issue") == "mcp_gh_create_issue"
    assert catalogue.resolve("issue") is None  # ends no name after an underscore
    mixed = Catalogue([(mcp_tools([])[0], "x"), (Tool("other", "Other.", {}, str), "x")])
    assert mixed.listing().splitlines()[0] == "[x]"  # no shared prefix
    assert one_line("First. Second sentence.") == "First"
    assert len(one_line("word " * 40)) <= 60
    assert words("getPullRequest mcp_gh-x") == ["get", "pull", "request", "mcp", "gh", "x"]


# --- the bridge through the loop ---------------------------------------------------------


def test_deferred_tools_leave_the_tool_array_and_the_catalogue_enters_the_prompt():
    ran: list[Any] = []
    agent = agent_with(text("hi"), ran=ran)
    agent.run_conversation("hello")
    request = agent.client.last_request
    names = [t["function"]["name"] for t in request.tools]
    assert names == sorted(["terminal", *BRIDGE_NAMES])
    system = request.messages[0]["content"]
    assert "# Tool catalogue" in system and "\ncreate_issue: Create a new issue" in system
    assert "[mcp-gh] mcp_gh_*" in system
    assert set(agent.toolbox.deferred) == {t.name for t in mcp_tools([])}


def test_few_tools_are_sent_as_today():
    agent = make_agent(text("hi"), plugins=[toolset_plugin(*mcp_tools([], extra=0), name="mcp-gh")])
    agent.run_conversation("hello")
    assert agent.bridge is None
    assert len(agent.client.last_request.tools) == len(SPECS)
    assert "Tool catalogue" not in (agent.client.last_request.messages[0]["content"] or "")


class Recorder:
    def __init__(self) -> None:
        self.pre: list[ToolCall] = []
        self.post: list[tuple[str, str]] = []

    @hookimpl
    def hermes_pre_tool_call(self, call: ToolCall, context: Any) -> Any:
        self.pre.append(call)
        if call.arguments.get("title") == "forbidden":
            return Block("titles like that are refused")
        return None

    @hookimpl
    def hermes_post_tool_call(self, call: ToolCall, result: Any, context: Any) -> None:
        self.post.append((call.name, result.content))


def test_a_call_through_the_bridge_is_the_real_call_to_hooks_and_transcript():
    ran: list[Any] = []
    recorder = Recorder()
    args = {"owner": "o", "repo": "r", "title": "t"}
    agent = agent_with(
        tool_call(FIND, {"query": "create issue"}),
        tool_call(CALL, {"name": "mcp_gh_create_issue", "arguments": args}),
        tool_call(
            CALL, {"name": "mcp_gh_create_issue", "arguments": {**args, "title": "forbidden"}}
        ),
        text("done"),
        ran=ran,
        plugins=[recorder],
    )
    agent.run_conversation("file an issue")
    assert ran == [("create_issue", args)]
    assert [c.name for c in recorder.pre] == [FIND, "mcp_gh_create_issue", "mcp_gh_create_issue"]
    assert recorder.pre[1].arguments == args
    assert recorder.post[1] == ("mcp_gh_create_issue", "create_issue done")
    found = agent.messages[2]["content"]
    assert found.startswith('1 tool(s) for "create issue"') or "mcp_gh_create_issue" in found
    assert '"required":["owner","repo","title"]' in found  # the best hit's parameters
    stored = agent.messages[3]["tool_calls"][0]
    assert stored["function"] == {"name": "mcp_gh_create_issue", "arguments": json.dumps(args)}
    assert agent.messages[4]["tool_name"] == "mcp_gh_create_issue"
    assert "titles like that are refused" in agent.messages[6]["content"]
    # the model reads back its own bridge call
    sent = agent.client.last_request.messages[4]["tool_calls"][0]["function"]
    assert sent["name"] == CALL and json.loads(sent["arguments"])["name"] == "mcp_gh_create_issue"
    assert_valid_transcript(agent.messages)


def test_a_name_read_without_its_prefix_is_the_full_tool_to_every_hook():
    ran: list[Any] = []
    recorder = Recorder()
    args = {"owner": "o", "repo": "r", "title": "t"}
    agent = agent_with(
        tool_call("describe_tool", {"name": "create_issue"}),
        tool_call(CALL, {"name": "create_issue", "arguments": args}),
        text("done"),
        ran=ran,
        plugins=[recorder],
    )
    agent.run_conversation("file an issue")
    assert ran == [("create_issue", args)]
    assert agent.messages[2]["content"].startswith("mcp_gh_create_issue: Create a new issue")
    assert [c.name for c in recorder.pre] == ["describe_tool", "mcp_gh_create_issue"]


def test_approvals_apply_to_a_bridged_call():
    ran: list[Any] = []
    asked: list[ApprovalRequest] = []
    risky = Tool(
        "mcp_gh_delete_repo",
        "Delete a repository.",
        {"type": "object", "properties": {"repo": {"type": "string"}}},
        lambda a, c: ran.append(("deleted", a)),
        needs_approval=lambda a: ApprovalRequest(f"delete {a.get('repo')}", "deletes a repository"),
    )
    agent = make_agent(
        tool_call(CALL, {"name": "mcp_gh_delete_repo", "arguments": {"repo": "x"}}),
        text("ok"),
        plugins=[toolset_plugin(risky, *mcp_tools(ran), name="mcp-gh")],
        approval_callback=lambda request: asked.append(request) or False,
    )
    agent.run_conversation("delete it")
    assert ran == [] and len(asked) == 1
    answer = agent.messages[2]
    assert (
        answer["tool_name"] == "mcp_gh_delete_repo" and "deletes a repository" in answer["content"]
    )


def test_model_mistakes_come_back_as_clear_results():
    ran: list[Any] = []
    agent = agent_with(
        tool_call(CALL, {"name": "mcp_gh_create_isue", "arguments": {}}),
        tool_call(CALL, {"name": "mcp_gh_create_issue", "arguments": {"owner": 1}}),
        tool_call(CALL, {"name": "mcp_gh_create_issue"}),
        tool_call(CALL, {"name": "mcp_gh_create_issue", "arguments": "not json"}),
        tool_call("describe_tool", {"name": "nothing_like_it"}),
        text("sorry"),
        ran=ran,
        config={"agent": {"tool_max_invalid": 10}},
    )
    agent.run_conversation("go")
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert "unknown tool 'mcp_gh_create_isue'" in results[0]
    assert "Closest: mcp_gh_create_issue," in results[0]
    assert "invalid arguments for tool 'mcp_gh_create_issue'" in results[1]
    assert '"required": ["owner", "repo", "title"]' in results[1]
    assert "missing required property 'repo'" in results[1]
    assert ran == []
    assert "invalid arguments for tool 'mcp_gh_create_issue'" in results[2]  # none given
    assert "invalid arguments for tool 'call_tool': $.arguments: expected object" in results[3]
    assert "unknown tool 'nothing_like_it'" in results[4]


def test_a_tool_disabled_mid_session_is_refused_and_no_longer_found():
    ran: list[Any] = []
    state = {"up": True}
    flaky = Tool(
        "mcp_gh_flaky_report",
        "Report flaky tests.",
        {"type": "object"},
        lambda a, c: ran.append(("flaky", a)) or "reported",
        check=lambda: True if state["up"] else "the server went away",
    )
    agent = make_agent(
        tool_call(CALL, {"name": "mcp_gh_flaky_report", "arguments": {}}),
        text("one"),
        tool_call(CALL, {"name": "mcp_gh_flaky_report", "arguments": {}}),
        tool_call(CALL, {"name": "mcp_gh_create_issue", "arguments": {}}),
        tool_call(FIND, {"query": "issue"}),
        text("two"),
        plugins=[toolset_plugin(flaky, *mcp_tools(ran), name="mcp-gh")],
    )
    agent.run_conversation("first")
    assert ran == [("flaky", {})]
    state["up"] = False
    agent.bridge.disable("mcp_gh_create_issue", "switched off by the user")
    agent.run_conversation("second")
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert "not available now: the server went away" in results[1]
    assert "disabled during this session: switched off by the user" in results[2]
    assert "mcp_gh_create_issue" not in results[3] and "mcp_gh_get_sentry_issue" in results[3]
    assert "mcp_gh_list_issues" in results[3]  # "issues" and "issue" are one word
    assert ran == [("flaky", {})]


def test_a_toolset_restriction_restricts_what_search_finds():
    ran: list[Any] = []
    other = [
        Tool(f"mcp_db_q{i}", f"Database query {i}.", {"type": "object"}, str) for i in range(25)
    ]
    agent = make_agent(
        tool_call(FIND, {"query": "database query"}),
        tool_call(CALL, {"name": "mcp_db_q1", "arguments": {}}),
        text("ok"),
        plugins=[
            toolset(*mcp_tools(ran), name="mcp-gh"),
            toolset(*other, name="mcp-db"),
        ],
        toolsets=["mcp-gh"],
    )
    agent.run_conversation("go")
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert "mcp_db" not in results[0]
    assert "unknown tool 'mcp_db_q1'" in results[1]
    assert "mcp_db_q1" not in agent.client.last_request.messages[0]["content"]


def test_twenty_turns_with_discoveries_keep_every_request_prefix_byte_stable():
    ran: list[Any] = []
    script: list[Any] = []
    for i in range(20):
        name = SPECS[i % len(SPECS)][0]
        script += [
            tool_call(FIND, {"query": name.replace("_", " ")}),
            tool_call(CALL, {"name": f"mcp_gh_{name}", "arguments": {"query": str(i)}}),
            text(f"turn {i}"),
        ]
    agent = agent_with(*script, ran=ran)
    requests: list[tuple[str, str]] = []
    original = agent.client.complete

    def spy(request: Any) -> Any:
        body = json.dumps(request.messages, ensure_ascii=False)
        requests.append((json.dumps(request.tools, ensure_ascii=False), body))
        return original(request)

    agent.client.complete = spy  # type: ignore[method-assign]
    for i in range(20):
        agent.run_conversation(f"turn {i}")
    assert len(requests) == 60
    assert len({tools for tools, _ in requests}) == 1
    for (_, before), (_, after) in zip(requests, requests[1:], strict=False):
        assert after.startswith(before[:-1]), "a request rewrote an earlier byte"


def test_resume_keeps_bridged_calls_and_the_catalogue(tmp_path: Path):
    ran: list[Any] = []
    db = tmp_path / "state.db"
    args = {"owner": "o", "repo": "r", "title": "t"}
    first = agent_with(
        tool_call(CALL, {"name": "mcp_gh_create_issue", "arguments": args}),
        text("made"),
        ran=ran,
        session_store=SQLiteSessionStore(db),
    )
    first.run_conversation("make one")
    sent_before = first.client.last_request
    second = agent_with(
        tool_call(CALL, {"name": "mcp_gh_create_issue", "arguments": args}),
        text("again"),
        ran=ran,
        session_store=SQLiteSessionStore(db),
        session_id=first.session_id,
    )
    second.run_conversation("once more")
    resumed = second.client.requests[0] if hasattr(second.client, "requests") else None
    last = second.client.last_request
    assert ran == [("create_issue", args), ("create_issue", args)]
    assert last.messages[0] == sent_before.messages[0]  # the same system prompt
    assert last.messages[: len(sent_before.messages)] == sent_before.messages
    del resumed


# --- the three wire formats with the real SDKs --------------------------------------------


@pytest.mark.parametrize(
    ("plugin", "provider", "api_mode"),
    [
        ("openai", "custom", "chat_completions"),
        ("openai", "custom", "codex_responses"),
        ("anthropic", "anthropic", "anthropic_messages"),
    ],
)
def test_the_portable_bridge_on_each_wire_format(plugin: str, provider: str, api_mode: str):
    ran: list[Any] = []
    args = {"owner": "o", "repo": "r", "title": "t"}
    with FakeLLM(
        {"calls": [{"name": FIND, "arguments": {"query": "create issue"}}]},
        {
            "calls": [
                {"name": CALL, "arguments": {"name": "mcp_gh_create_issue", "arguments": args}}
            ]
        },
        "filed",
    ) as fake:
        base = fake.anthropic_base_url if plugin == "anthropic" else fake.openai_base_url
        agent = Agent.from_config(
            {
                "tools": {"defer": {"backend": "portable"}},
                **({"model": {"api_mode": api_mode}} if provider == "custom" else {}),
            },
            provider=provider,
            base_url=base,
            api_key="k",
            model="m",
            plugins=plugin_manager([plugin, toolset_plugin(*mcp_tools(ran), name="mcp-gh")]),
        )
        with agent:
            assert agent.chat("file it") == "filed"
        assert not fake.errors, fake.errors
        bodies = [json.loads(r.body) for r in fake.model_requests]
    assert ran == [("create_issue", args)]
    tool_lists = [json.dumps(b["tools"]) for b in bodies]
    assert len(set(tool_lists)) == 1
    assert all(name in tool_lists[0] for name in BRIDGE_NAMES)
    assert "mcp_gh_create_issue" not in tool_lists[0]
    assert "defer_loading" not in tool_lists[0]
    last = json.dumps(bodies[-1])
    assert CALL in last and "create_issue done" in last


def test_a_subagent_defers_the_same_way_within_its_toolsets():
    from hermes_core.testing import ScriptedModel, Turn
    from hermes_core.testing import tool_call as step

    db = [Tool(f"mcp_db_q{i}", f"Database query {i}.", {"type": "object"}, str) for i in range(25)]
    ran: list[Any] = []
    child_requests: list[Any] = []

    def model(request: Any) -> Any:
        users = [m["content"] for m in request.messages if m["role"] == "user"]
        tools_done = [m for m in request.messages if m["role"] == "tool"]
        if users == ["list the issues"]:  # the child
            child_requests.append(request)
            if not tools_done:
                return step(FIND, {"query": "database query issues"})
            return Turn(text="searched")
        if not tools_done:
            return step("delegate_task", {"goal": "list the issues", "toolsets": ["mcp-gh"]})
        return Turn(text="done")

    agent = make_agent(
        model=ScriptedModel(fn=model),
        plugins=[
            "delegation",
            toolset(*mcp_tools(ran), name="mcp-gh"),
            toolset(*db, name="mcp-db"),
        ],
        config={"toolsets": ["delegation", "mcp-gh", "mcp-db"]},
    )
    agent.chat("go")
    first, second = child_requests
    assert sorted(first.tool_names) == sorted(BRIDGE_NAMES)
    system = first.messages[0]["content"]
    assert "[mcp-gh] mcp_gh_*" in system and "mcp-db" not in system
    found = [m["content"] for m in second.messages if m["role"] == "tool"][0]
    assert "mcp_gh_list_issues" in found and "mcp_db" not in found


def test_after_compression_catalogue_tools_still_work():
    from hermes_core.testing import ScriptedModel, Turn
    from hermes_core.testing import tool_call as step

    ran: list[Any] = []
    args = {"owner": "o", "repo": "r", "title": "t"}
    plan = [
        step(CALL, {"name": "mcp_gh_create_issue", "arguments": args}),
        Turn(text="filed one"),
        Turn(text="noted"),
        step(CALL, {"name": "mcp_gh_create_issue", "arguments": args}),
        Turn(text="filed another"),
    ]
    requests: list[Any] = []

    def model(request: Any) -> Any:
        if not request.tools:  # the compressor's summary request
            return Turn(text="The user had an issue filed with call_tool.")
        requests.append(request)
        return plan.pop(0)

    agent = make_agent(
        model=ScriptedModel(fn=model),
        plugins=["compressor", toolset(*mcp_tools(ran), name="mcp-gh")],
        config={"compression": {"protect_last_n": 1}},
    )
    agent.chat("file one")
    agent.chat("remember that")
    tools_before = json.dumps(requests[0].tools)
    agent.compress()
    assert agent.engine is not None and agent.engine.status()["compressions"] == 1
    agent.chat("file another")
    assert ran == [("create_issue", args), ("create_issue", args)]
    after = requests[-2]
    assert json.dumps(after.tools) == tools_before
    assert "[mcp-gh] mcp_gh_*" in after.messages[0]["content"]


def test_a_direct_call_of_a_tool_disabled_mid_session_is_refused():
    ran: list[Any] = []
    args = {"owner": "o", "repo": "r", "title": "t"}
    agent = agent_with(
        tool_call("mcp_gh_create_issue", args),  # loaded natively: called by its own name
        text("one"),
        tool_call("mcp_gh_create_issue", args),
        text("two"),
        ran=ran,
    )
    agent.run_conversation("first")
    assert agent.bridge is not None
    agent.bridge.disable("mcp_gh_create_issue", "the GitHub server was removed")
    agent.run_conversation("second")
    results = [m["content"] for m in agent.messages if m["role"] == "tool"]
    assert results[0] == "create_issue done"
    assert results[1] == (
        "Error: tool 'mcp_gh_create_issue' was disabled during this session: the GitHub "
        "server was removed."
    )
    assert ran == [("create_issue", args)]
