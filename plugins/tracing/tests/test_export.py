"""Export over OTLP/HTTP as a user turns it on (configuration or environment), to a receiver on
127.0.0.1 that decodes the protobuf; and a collector that is down: the turn is unaffected and
the user sees one warning."""

from __future__ import annotations

import logging
import socket
import threading
import time
from typing import Any

import hermes_tracing_otel
import pytest
from opentelemetry.proto.trace.v1.trace_pb2 import Span as ProtoSpan
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as genai
from opentelemetry.semconv._incubating.metrics import gen_ai_metrics

from hermes_core.testing import FakeLLM, toolset_plugin
from hermes_hookspecs import Tool

TOOLS = toolset_plugin(
    Tool("echo", "Echo", {"type": "object", "properties": {}}, lambda a, c: "echoed"),
    name="echoes",
)


def one_tool_turn(server: FakeLLM) -> None:
    server.add(
        {"calls": [{"name": "echo", "arguments": {}, "id": "call_e"}]},
        {"text": "done", "usage": {"input_tokens": 11, "output_tokens": 3}},
    )


def test_spans_and_metrics_reach_an_otlp_collector(
    server: FakeLLM, collector: Any, make_agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("TEAM_TOKEN", "t-123")
    one_tool_turn(server)
    config = {
        "tracing": {
            "enabled": True,
            "endpoint": collector.url,
            "headers": {"x-team": "${TEAM_TOKEN}"},
            "service_name": "hermes-under-test",
        }
    }
    bot = make_agent(server, TOOLS, config=config)
    result = bot.run_conversation("echo something")
    bot.close()
    assert result["final_response"] == "done"
    hermes_tracing_otel.reset()  # what the exit does: flush, then stop
    spans = collector.wait_for_spans(4)
    by_name = {s["name"]: s for s in spans}
    assert sorted(by_name) == ["chat gpt-test", "execute_tool echo", "invoke_agent hermes"]
    root = by_name["invoke_agent hermes"]
    assert root["parent"] == "" and root["kind"] == ProtoSpan.SPAN_KIND_INTERNAL
    chats = [s for s in spans if s["name"] == "chat gpt-test"]
    assert len(chats) == 2
    for span in [*chats, by_name["execute_tool echo"]]:
        assert span["trace_id"] == root["trace_id"] and span["parent"] == root["span_id"]
    assert {s["kind"] for s in chats} == {ProtoSpan.SPAN_KIND_CLIENT}
    [last] = [
        s for s in chats if s["attributes"][genai.GEN_AI_RESPONSE_FINISH_REASONS] == ("stop",)
    ]
    assert last["attributes"][genai.GEN_AI_USAGE_INPUT_TOKENS] == 11
    assert last["attributes"][genai.GEN_AI_USAGE_OUTPUT_TOKENS] == 3
    assert root["attributes"][genai.GEN_AI_CONVERSATION_ID] == result["session_id"]
    assert by_name["execute_tool echo"]["attributes"][genai.GEN_AI_TOOL_CALL_ID] == "call_e"
    assert root["resource"]["service.name"] == "hermes-under-test"
    assert root["scope"] == "hermes_tracing_otel"
    assert root["schema_url"].startswith("https://opentelemetry.io/schemas/")
    assert all(h.get("x-team") == "t-123" for h in collector.headers)
    assert {
        gen_ai_metrics.GEN_AI_CLIENT_TOKEN_USAGE,
        gen_ai_metrics.GEN_AI_CLIENT_OPERATION_DURATION,
    } <= collector.metric_names()


def test_the_standard_endpoint_variable_turns_tracing_on(
    server: FakeLLM, collector: Any, make_agent: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
    server.add("hi")
    bot = make_agent(server)
    assert bot.chat("hello") == "hi"
    bot.close()
    hermes_tracing_otel.reset()
    names = sorted(s["name"] for s in collector.wait_for_spans(2))
    assert names == ["chat gpt-test", "invoke_agent hermes"]


def test_nothing_is_exported_without_the_variable_or_the_key(
    server: FakeLLM, collector: Any, make_agent: Any
) -> None:
    server.add("hi")
    bot = make_agent(server)
    assert bot.chat("hello") == "hi"
    bot.close()
    hermes_tracing_otel.reset()
    assert collector.traces == [] and collector.metrics == []


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


class HungCollector:
    """Accepts connections on 127.0.0.1 and never answers: a collector that hangs."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.listener.getsockname()[1]}"

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.held.append(conn)

    def close(self) -> None:
        self.listener.close()
        for conn in self.held:
            conn.close()


EXPORT_TIMEOUT = 3.0
"""Seconds an export to a hung collector waits: a turn that waited for one would take longer."""


@pytest.mark.parametrize("collector_state", ["refusing", "hanging"])
def test_a_collector_that_is_down_slows_no_turn_and_warns_once(
    server: FakeLLM, make_agent: Any, caplog: pytest.LogCaptureFixture, collector_state: str
) -> None:
    hung = HungCollector() if collector_state == "hanging" else None
    url = hung.url if hung is not None else f"http://127.0.0.1:{_closed_port()}"
    config = {"tracing": {"enabled": True, "endpoint": url, "export_timeout": EXPORT_TIMEOUT}}
    caplog.set_level(logging.INFO)
    try:
        durations = []
        for turn in range(3):
            one_tool_turn(server)
            bot = make_agent(server, TOOLS, config=config)
            started = time.monotonic()
            result = bot.run_conversation(f"turn {turn}")
            durations.append(time.monotonic() - started)
            bot.close()
            assert result["final_response"] == "done", result["error"]
        # spans are exported by the batch processor's thread: no turn waited for the collector
        assert max(durations) < EXPORT_TIMEOUT - 0.5, durations
        providers = hermes_tracing_otel._providers
        assert providers is not None
        providers.tracer_provider.force_flush()  # the export the batch thread would make
        started = time.monotonic()
        hermes_tracing_otel.reset()  # what the exit does: the collector is known to be down
        assert time.monotonic() - started < 3.5  # exit_timeout (3 s) at most
    finally:
        if hung is not None:
            hung.close()
    warnings = [r for r in caplog.records if r.levelno >= logging.WARNING]
    assert [r.name for r in warnings] == ["hermes.tracing"], [r.getMessage() for r in warnings]
    assert url in warnings[0].getMessage() and "cannot be reached" in warnings[0].getMessage()


def test_a_collector_that_takes_traces_only_gets_them_and_one_hint(
    server: FakeLLM, make_agent: Any, caplog: pytest.LogCaptureFixture
) -> None:
    from otlp_receiver import Receiver

    traces_only = Receiver(metrics=False)
    caplog.set_level(logging.INFO)
    try:
        config = {"tracing": {"enabled": True, "endpoint": traces_only.url}}
        for _ in range(2):
            server.add("hi")
            bot = make_agent(server, config=config)
            assert bot.chat("hello") == "hi"
            bot.close()
            providers = hermes_tracing_otel._providers
            assert providers is not None and providers.meter_provider is not None
            providers.tracer_provider.force_flush()
            providers.meter_provider.force_flush()
        hermes_tracing_otel.reset()
        assert len(traces_only.wait_for_spans(4)) == 4
    finally:
        traces_only.close()
    warnings = [r.getMessage() for r in caplog.records if r.levelno >= logging.WARNING]
    assert len(warnings) == 1, warnings
    assert "refused the metrics" in warnings[0] and "tracing.metrics: false" in warnings[0]
