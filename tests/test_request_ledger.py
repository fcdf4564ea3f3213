"""The token ledger of each request: bytes and estimated tokens by part, what the provider
reported as cached, kept on the answering message (so the store keeps it), logged at debug
level, and printed by ``hermes sessions show --ledger``."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

from hermes_core.loop.request_ledger import LEDGER_FIELD, PARTS, Sizer, measure, rows, table
from hermes_core.loop.transcript import strip_internal
from hermes_core.session_store import SQLiteSessionStore
from hermes_core.testing import (
    FakeLLM,
    ScriptedModel,
    make_agent,
    plugin_manager,
    text,
    tool_call,
    toolset_plugin,
)
from hermes_hookspecs import ModelRequest, Tool


def mcp_tools() -> list[Tool]:
    return [
        Tool(f"mcp_s_t{i}", f"Tool number {i}.", {"type": "object"}, lambda a, c, i=i: f"r{i}")
        for i in range(25)
    ]


def test_measure_splits_a_request_by_part():
    request = ModelRequest(
        model="m",
        messages=[
            {"role": "system", "content": "You help.\n\n# Tool catalogue\nx: y"},
            {"role": "user", "content": "first"},
            {"role": "assistant", "content": "ok"},
            {"role": "user", "content": "second question"},
        ],
        tools=[{"type": "function", "function": {"name": "a"}}],
        deferred_tools=[{"type": "function", "function": {"name": "b"}}],
    )
    assert measure(request)["bytes"]["deferred"] == 0  # not sent: the portable back end
    request.deferred_sent = True  # what a provider that sent them natively says
    entry = measure(request, "# Tool catalogue\nx: y")
    sizes = entry["bytes"]
    assert sizes["catalogue"] == len("# Tool catalogue\nx: y")
    assert sizes["system"] == len("You help.\n\n")
    assert sizes["tools"] == len('[{"type":"function","function":{"name":"a"}}]')
    assert sizes["deferred"] == sizes["tools"]
    assert sizes["new_input"] == len('{"role":"user","content":"second question"}')
    assert sizes["history"] == len('{"role":"user","content":"first"}') + len(
        '{"role":"assistant","content":"ok"}'
    )
    assert entry["tokens"]["new_input"] == -(-sizes["new_input"] // 4)


def test_every_answer_keeps_its_ledger_entry_and_the_store_keeps_it(tmp_path: Path, caplog):
    store = SQLiteSessionStore(tmp_path / "state.db")
    agent = make_agent(
        tool_call("find_tools", {"query": "tool number 3"}),
        text("done"),
        plugins=[toolset_plugin(*mcp_tools(), name="mcp-s")],
        session_store=store,
    )
    with caplog.at_level(logging.DEBUG, logger="hermes.agent"):
        agent.run_conversation("go")
    stored = store.get_messages(agent.session_id)
    entries = rows(stored)
    assert len(entries) == 2
    first, second = entries
    assert first["bytes"]["catalogue"] > 0 and first["bytes"]["tools"] > 0
    assert first["bytes"]["history"] == 0 and second["bytes"]["history"] > 0
    assert second["bytes"]["new_input"] > 0  # the search's result
    assert first["reported"]["input_tokens"] > 0 and first["model"]
    assert "request ledger:" in caplog.text
    # never sent to the model
    assert all(LEDGER_FIELD not in strip_internal(m) for m in stored)
    assert LEDGER_FIELD not in json.dumps(agent.client.last_request.messages)


def test_the_ledger_records_what_the_provider_reported_as_cached(tmp_path: Path):
    with FakeLLM(
        {"text": "one", "usage": {"input_tokens": 1000, "output_tokens": 5}},
        {
            "text": "two",
            "usage": {"input_tokens": 1200, "output_tokens": 5, "cache_read_tokens": 900},
        },
    ) as fake:
        from hermes_core.loop.agent import Agent

        agent = Agent.from_config(
            {},
            provider="custom",
            base_url=fake.openai_base_url,
            api_key="k",
            model="m",
            plugins=plugin_manager(["openai"]),
        )
        with agent:
            agent.chat("a")
            agent.chat("b")
        entries = rows(agent.messages)
    assert [e["reported"]["cached_tokens"] for e in entries] == [0, 900]
    assert entries[1]["reported"]["input_tokens"] == 1200
    shown = table(entries).splitlines()
    assert shown[0].split()[: len(PARTS) + 1] == ["#", *PARTS]
    assert shown[2].split()[-1] == "75"  # 900 of 1,200 cached


def test_sessions_show_ledger(hermes_cli):
    model = ScriptedModel(text("one"), text("two"))
    first = hermes_cli(
        "--plugins", "", "chat", "--provider", "scripted", "-q", "hi", "--json", model=model
    )
    session_id = json.loads(first.stdout)["session_id"]
    shown = hermes_cli("--plugins", "", "sessions", "show", "--ledger", session_id)
    assert shown.exit_code == 0, shown.stderr
    lines = shown.stdout.splitlines()
    assert "1 request(s)" in lines[0]
    assert lines[1].split()[:3] == ["#", "system", "catalogue"]
    assert lines[2].split()[0] == "1"
    as_json = hermes_cli("--plugins", "", "sessions", "show", "--ledger", "--json", session_id)
    data: Any = json.loads(as_json.stdout)
    assert data["session"] == session_id and len(data["requests"]) == 1
    assert set(data["requests"][0]["bytes"]) == set(PARTS)


def test_deferred_schemas_count_only_where_the_provider_sent_them():
    mcp = [Tool(f"mcp_s_t{i}", f"Tool number {i}.", {"type": "object"}, str) for i in range(25)]
    counted = {}
    for plugin, provider, api_mode in (
        ("anthropic", "anthropic", ""),
        ("openai", "custom", "codex_responses"),
        ("openai", "custom", "chat_completions"),
    ):
        with FakeLLM("ok") as fake:
            from hermes_core.loop.agent import Agent

            base = fake.anthropic_base_url if plugin == "anthropic" else fake.openai_base_url
            agent = Agent.from_config(
                {"model": {"api_mode": api_mode}} if api_mode else {},
                provider=provider,
                base_url=base,
                api_key="k",
                model="m",
                plugins=plugin_manager([plugin, toolset_plugin(*mcp, name="mcp-s")]),
            )
            with agent:
                agent.chat("hi")
            counted[api_mode or plugin] = rows(agent.messages)[0]["bytes"]["deferred"]
    assert counted["anthropic"] > 0 and counted["codex_responses"] > 0
    assert counted["chat_completions"] == 0


def test_the_sizer_gives_what_a_full_measure_gives_request_after_request():
    """Measured only where new, the ledger of a growing, compacted and rebuilt transcript equals
    the ledger measured from nothing each time."""
    sizer = Sizer()
    tools = [{"type": "function", "function": {"name": "t", "parameters": {"type": "object"}}}]
    history = [{"role": "system", "content": "sys"}, {"role": "user", "content": "hello ü"}]
    steps = []
    for i in range(6):  # grows
        history.append({"role": "assistant", "content": f"answer {i}"})
        history.append({"role": "user", "content": f"question {i} " * (i + 1)})
        steps.append(list(history))
    compacted = [history[0], {"role": "user", "content": "summary"}, history[-1]]  # compaction
    steps.append(compacted)
    steps.append([dict(m) for m in compacted] + [{"role": "assistant", "content": "new"}])
    for messages in steps:
        request = ModelRequest(model="m", messages=messages, tools=tools)
        assert measure(request, sizer=sizer) == measure(request)
