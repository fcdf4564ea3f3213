"""W3C trace context: a turn joins the trace of the API server request, of the embedding
application's span, or of ``TRACEPARENT``; a subagent's turn nests under the tool call that
started it; a scheduled job's run starts its own trace linked to its origin."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.trace import SpanKind

from hermes_core.testing import FakeLLM, make_runner, text, tool_call
from hermes_hookspecs import AgentTask

TRACE_ID = "4bf92f3577b34da6a3ce929d0e0e4736"
PARENT_ID = "00f067aa0ba902b7"
TRACEPARENT = f"00-{TRACE_ID}-{PARENT_ID}-01"


def trace_id(span: ReadableSpan) -> str:
    assert span.context is not None
    return f"{span.context.trace_id:032x}"


def parent_id(span: ReadableSpan) -> str | None:
    return f"{span.parent.span_id:016x}" if span.parent is not None else None


def test_a_traceparent_given_to_the_turn_is_its_parent(
    server: FakeLLM, telemetry: Any, make_agent: Any
) -> None:
    server.add("hi")
    bot = make_agent(server)
    bot.run_conversation("hello", trace_context={"traceparent": TRACEPARENT})
    bot.close()
    [root] = telemetry.named("invoke_agent")
    assert trace_id(root) == TRACE_ID and parent_id(root) == PARENT_ID
    assert root.parent is not None and root.parent.is_remote
    assert all(trace_id(s) == TRACE_ID for s in telemetry.spans())


def test_traceparent_in_the_environment_is_the_parent_of_a_chat(
    server: FakeLLM, telemetry: Any, make_agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TRACEPARENT", TRACEPARENT)
    server.add("hi")
    bot = make_agent(server)
    bot.chat("hello")
    bot.close()
    [root] = telemetry.named("invoke_agent")
    assert trace_id(root) == TRACE_ID and parent_id(root) == PARENT_ID


def test_a_malformed_traceparent_starts_a_trace_of_its_own(
    server: FakeLLM, telemetry: Any, make_agent: Any
) -> None:
    server.add("hi")
    bot = make_agent(server)
    result = bot.run_conversation("hello", trace_context={"traceparent": "00-nonsense-01"})
    bot.close()
    assert result["final_response"] == "hi"
    [root] = telemetry.named("invoke_agent")
    assert root.parent is None and trace_id(root) != TRACE_ID


def test_an_embedding_applications_current_span_is_the_parent(
    server: FakeLLM, telemetry: Any, make_agent: Any
) -> None:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    app = TracerProvider()
    app.add_span_processor(SimpleSpanProcessor(telemetry.exporter))
    server.add("hi")
    bot = make_agent(server)
    with app.get_tracer("the-app").start_as_current_span("handle request") as outer:
        bot.chat("hello")
    bot.close()
    [root] = telemetry.named("invoke_agent")
    assert root.parent is not None and root.parent.span_id == outer.get_span_context().span_id


def test_a_subagent_nests_under_the_tool_call_that_started_it(
    server: FakeLLM, telemetry: Any, make_agent: Any
) -> None:
    server.add(
        tool_call("delegate_task", {"goal": "count the files"}, id="call_d"),
        text("there are three"),
        text("The child says three."),
    )
    bot = make_agent(server, plugins=("openai", "tracing", "delegation"))
    assert bot.chat("delegate it") == "The child says three."
    bot.close()
    parent_turn, child_turn = telemetry.named("invoke_agent")
    [delegate] = telemetry.named("execute_tool delegate_task")
    assert parent_turn.parent is None
    assert delegate.parent is not None and delegate.parent.span_id == parent_turn.context.span_id
    assert child_turn.parent is not None and child_turn.parent.span_id == delegate.context.span_id
    assert trace_id(child_turn) == trace_id(parent_turn)
    child = child_turn.attributes or {}
    assert child["hermes.source"] == "subagent"
    assert (
        child["gen_ai.conversation.id"] != (parent_turn.attributes or {})["gen_ai.conversation.id"]
    )
    [child_chat] = [
        s
        for s in telemetry.named("chat ")
        if s.parent and s.parent.span_id == child_turn.context.span_id
    ]
    assert child_chat.kind is SpanKind.CLIENT


def test_a_scheduled_run_starts_its_own_trace_linked_to_its_origin(telemetry: Any) -> None:
    runner = make_runner("job done", plugins=["tracing"])
    outcome = runner.run(
        AgentTask(
            prompt="nightly report", source="cron", trace_context={"traceparent": TRACEPARENT}
        )
    )
    assert outcome.status == "completed"
    [root] = telemetry.named("invoke_agent")
    assert root.parent is None and trace_id(root) != TRACE_ID
    [link] = root.links
    assert f"{link.context.trace_id:032x}" == TRACE_ID
    assert f"{link.context.span_id:016x}" == PARENT_ID


def test_the_api_servers_traceparent_header_is_the_turns_parent(
    tmp_path: Path, server: FakeLLM, telemetry: Any
) -> None:
    pytest.importorskip("hermes_gateway")
    import openai
    from hermes_gateway.hookspecs import PLATFORM_ADAPTERS_HOOK
    from hermes_gateway.serve import GatewayThread, build

    server.add("from the gateway")
    runner = make_runner(
        scripted=False,
        plugins=["gateway", "openai", "tracing"],
        home=tmp_path,
        config={
            "model": {
                "provider": "custom",
                "base_url": server.openai_base_url,
                "default": "fake-model",
                "api_key": "test",
            },
            "toolsets": [],
        },
    )
    factories = {
        name: entry.value
        for name, entry in runner.host.registry.named(PLATFORM_ADAPTERS_HOOK).items()
    }
    platforms = {"api": {"adapter": "api_server", "port": 0, "key": "k-1", "allow_all": True}}
    gateway = build(tmp_path, {"gateway": {"platforms": platforms}}, runner, factories, print)
    served = GatewayThread(gateway, tmp_path).start()
    try:
        client = openai.OpenAI(
            base_url=gateway.adapters["api"].url, api_key="k-1", max_retries=0, timeout=30
        )
        answer = client.chat.completions.create(
            model="hermes-agent",
            messages=[{"role": "user", "content": "hi"}],
            extra_headers={"traceparent": TRACEPARENT, "tracestate": "vendor=1"},
        )
    finally:
        served.stop()
    assert answer.choices[0].message.content == "from the gateway"
    [root] = telemetry.named("invoke_agent")
    assert trace_id(root) == TRACE_ID and parent_id(root) == PARENT_ID
    assert root.parent is not None and root.parent.trace_state.to_header() == "vendor=1"
    assert (root.attributes or {})["hermes.source"] == "api"


def test_a_tool_gets_the_trace_context_of_its_call_to_send_along(
    server: FakeLLM, telemetry: Any, make_agent: Any
) -> None:
    from hermes_core.testing import toolset_plugin
    from hermes_hookspecs import Tool

    seen: list[dict[str, str]] = []

    def call_out(args: dict[str, Any], ctx: Any) -> str:
        seen.append(dict(ctx.trace_context))  # what an HTTP call would send as headers
        return "sent"

    tools = toolset_plugin(
        Tool("call_out", "Calls a service", {"type": "object", "properties": {}}, call_out),
        name="outbound",
    )
    server.add(tool_call("call_out", {}, id="call_o"), text("ok"))
    bot = make_agent(server, tools)
    bot.run_conversation("go", trace_context={"traceparent": TRACEPARENT})
    bot.close()
    [span] = telemetry.named("execute_tool call_out")
    [headers] = seen
    assert headers["traceparent"] == f"00-{TRACE_ID}-{span.context.span_id:016x}-01"


def test_a_job_scheduled_in_a_traced_turn_runs_linked_to_that_call(
    tmp_path: Path, telemetry: Any
) -> None:
    pytest.importorskip("hermes_cron")
    from hermes_cron.jobs import JobStore
    from hermes_cron.scheduler import claim_now, run_claimed

    runner = make_runner(
        tool_call(
            "cronjob",
            {"action": "create", "schedule": "every 1h", "prompt": "Post the report"},
            id="call_cron",
        ),
        text("Scheduled."),
        text("Report posted."),
        plugins=["cron", "tracing"],
        home=tmp_path,
    )
    created = runner.run(AgentTask(prompt="post the report hourly", toolsets=["cron"]))
    assert created.text == "Scheduled."
    store = JobStore(tmp_path)
    [job] = store.load()
    assert job["origin"]["traceparent"].startswith("00-")
    outcome = run_claimed(store, runner, claim_now(store, job["id"]))
    assert outcome.text == "Report posted."
    scheduling, run = telemetry.named("invoke_agent")
    [cron_call] = telemetry.named("execute_tool cronjob")
    assert (run.attributes or {})["hermes.source"] == "cron"
    assert run.parent is None and trace_id(run) != trace_id(scheduling)
    [link] = run.links
    assert link.context.span_id == cron_call.context.span_id
    assert link.context.trace_id == scheduling.context.trace_id


def test_a_queued_gateway_turn_carries_the_trace_context_to_its_worker(
    tmp_path: Path, server: FakeLLM, telemetry: Any
) -> None:
    pytest.importorskip("hermes_gateway")
    import json
    import threading

    from hermes_gateway.hookspecs import PLATFORM_ADAPTERS_HOOK
    from hermes_gateway.serve import build
    from hermes_gateway.team import run_request
    from hermes_gateway.turn_queue import TurnRequest

    server.add("from a worker")
    runner = make_runner(
        scripted=False,
        plugins=["gateway", "openai", "tracing"],
        home=tmp_path,
        config={
            "model": {
                "provider": "custom",
                "base_url": server.openai_base_url,
                "default": "fake-model",
                "api_key": "test",
            },
            "toolsets": [],
        },
    )
    factories = {
        name: entry.value
        for name, entry in runner.host.registry.named(PLATFORM_ADAPTERS_HOOK).items()
    }
    platforms = {"api": {"adapter": "api_server", "port": 0, "key": "k-1", "allow_all": True}}
    gateway = build(tmp_path, {"gateway": {"platforms": platforms}}, runner, factories, print)
    queued = TurnRequest(
        turn_id=TurnRequest.new_id(),
        session_id="team-session",
        prompt="hi",
        platform="api",
        trace_context={"traceparent": TRACEPARENT},
    )
    # what travels through the queue: JSON values
    taken = TurnRequest.from_dict(json.loads(json.dumps(queued.as_dict())))
    outcome = run_request(gateway, taken, threading.Event(), lambda piece: None)
    assert outcome.text == "from a worker"
    [root] = telemetry.named("invoke_agent")
    assert trace_id(root) == TRACE_ID and parent_id(root) == PARENT_ID
