"""The pieces without a collector: when a turn is traced, where spans go, the conventions'
provider names and error types, message shapes, the one warning per outage, and the ``tracing``
configuration keys checked by the host."""

from __future__ import annotations

import json
import logging
from typing import Any

import pytest
from hermes_tracing_otel import content, settings
from hermes_tracing_otel.conventions import provider_name
from hermes_tracing_otel.health import GuardedSpanExporter, Health
from hermes_tracing_otel.trace_context import error_type
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

from hermes_core.testing import ConfigError, make_agent
from hermes_hookspecs import Cancelled, ProviderError


@pytest.mark.parametrize(
    ("config", "environ", "configured", "expected"),
    [
        ({}, {}, False, False),
        ({}, {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c:4318"}, False, True),
        ({}, {"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"}, False, True),
        ({"tracing": {"enabled": True}}, {}, False, True),
        (
            {"tracing": {"enabled": False}},
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c"},
            False,
            False,
        ),
        ({"tracing": {"enabled": False}}, {}, True, False),
        ({}, {}, True, True),
        (
            {},
            {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://c", "OTEL_SDK_DISABLED": "true"},
            False,
            False,
        ),
        ({"tracing": {"enabled": True}}, {"OTEL_SDK_DISABLED": "true"}, False, True),
    ],
)
def test_when_a_turn_is_traced(
    config: dict[str, Any], environ: dict[str, str], configured: bool, expected: bool
) -> None:
    assert settings.wanted(config, environ, configured) is expected


def test_the_configured_endpoint_wins_over_the_variables() -> None:
    environ = {
        "OTEL_EXPORTER_OTLP_ENDPOINT": "http://env:4318",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://traces:4318/v1/traces",
        "OTEL_EXPORTER_OTLP_HEADERS": "api-key=s%20ecret,x-team=a",
        "OTEL_SERVICE_NAME": "svc",
        "TOKEN": "t0k",
    }
    from_env = settings.export_settings({}, environ)
    assert from_env.traces_url == "http://traces:4318/v1/traces"
    assert from_env.metrics_url == "http://env:4318/v1/metrics"
    assert from_env.headers == {"api-key": "s ecret", "x-team": "a"}
    assert from_env.service_name == "svc"
    config = {
        "tracing": {
            "endpoint": "https://collector.example/otel/",
            "headers": {"Authorization": "Bearer ${TOKEN}", "x-team": "b"},
            "service_name": "mine",
            "exit_timeout": 0,
        }
    }
    own = settings.export_settings(config, environ)
    assert own.traces_url == "https://collector.example/otel/v1/traces"
    assert own.metrics_url == "https://collector.example/otel/v1/metrics"
    assert own.headers == {"api-key": "s ecret", "x-team": "b", "authorization": "Bearer t0k"}
    assert own.service_name == "mine" and own.exit_timeout == 0.0
    default = settings.export_settings({}, {})
    assert default.traces_url == "http://localhost:4318/v1/traces"
    assert default.service_name == "hermes" and default.max_queue_size == 2048


@pytest.mark.parametrize(
    ("value", "expected"),
    [("true", True), ("SPAN_ONLY", True), ("span_and_event", True), ("1", True),
     ("false", False), ("event_only", False), ("no_content", False), ("", False)],
)  # fmt: skip
def test_content_capture_follows_the_conventions_variable(value: str, expected: bool) -> None:
    environ = {settings.CAPTURE_VARIABLE: value}
    assert settings.capture_content({}, environ) is expected
    assert settings.capture_content({"tracing": {"capture_content": False}}, environ) is False
    assert settings.capture_content({"tracing": {"capture_content": True}}, {}) is True


@pytest.mark.parametrize(
    ("provider", "base_url", "expected"),
    [
        ("openai", "", "openai"),
        ("openai-codex", "https://chatgpt.com/backend-api/codex", "openai"),
        ("anthropic", "", "anthropic"),
        ("deepseek", "", "deepseek"),
        ("custom", "https://api.groq.com/openai/v1", "groq"),
        ("custom", "https://my-res.openai.azure.com/openai", "azure.ai.openai"),
        ("custom", "http://127.0.0.1:8000/v1", "custom"),
        ("openrouter", "https://openrouter.ai/api/v1", "openrouter"),
        ("", "", "unknown"),
    ],
)
def test_provider_names_follow_the_conventions_list(
    provider: str, base_url: str, expected: str
) -> None:
    assert provider_name(provider, base_url) == expected


def test_error_types_are_low_cardinality() -> None:
    assert error_type(ProviderError("slow down", status=429, kind="rate_limit")) == "rate_limit"
    assert error_type(ProviderError("odd")) == "hermes_hookspecs.errors.ProviderError"
    assert error_type(Cancelled("stop")) == "cancelled"
    assert error_type(TimeoutError("late")) == "TimeoutError"


def test_messages_take_the_conventions_shapes() -> None:
    messages = [
        {"role": "system", "content": "be brief"},
        {"role": "user", "content": [{"type": "text", "text": "look"}, {"type": "image_url"}]},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {"id": "c1", "function": {"name": "read", "arguments": '{"path": "a"}'}},
                {"id": "c2", "function": {"name": "odd", "arguments": "not json"}},
            ],
        },
        {"role": "tool", "tool_call_id": "c1", "content": "text of a"},
    ]
    shaped = json.loads(content.input_messages(messages))
    assert [m["role"] for m in shaped] == ["user", "assistant", "tool"]
    assert shaped[0]["parts"] == [
        {"type": "text", "content": "look"},
        {"type": "uri", "modality": "image", "uri": "(image)"},
    ]
    assert shaped[1]["parts"][0]["arguments"] == {"path": "a"}
    assert shaped[1]["parts"][1]["arguments"] == "not json"
    assert shaped[2]["parts"] == [
        {"type": "tool_call_response", "id": "c1", "response": "text of a"}
    ]
    assert json.loads(content.system_instructions("be brief") or "") == [
        {"type": "text", "content": "be brief"}
    ]
    assert content.system_instructions(None) is None
    huge = content.dumps("x" * (content.MAX_CHARS + 10))
    assert len(huge) == content.MAX_CHARS + 1 and huge.endswith("…")


class Flaky(SpanExporter):
    """Fails while ``down``; raises when ``broken``."""

    def __init__(self) -> None:
        self.down = False
        self.broken = False

    def export(self, spans: Any) -> SpanExportResult:
        if self.broken:
            raise ConnectionError("refused")
        return SpanExportResult.FAILURE if self.down else SpanExportResult.SUCCESS

    def shutdown(self) -> None:
        return None


def test_one_warning_per_outage_and_a_line_when_it_is_over(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO, logger="hermes.tracing")
    inner = Flaky()
    guarded = GuardedSpanExporter(inner, Health("http://collector:4318"))
    assert guarded.export([]) is SpanExportResult.SUCCESS
    inner.down = True
    for _ in range(5):
        assert guarded.export([]) is SpanExportResult.FAILURE
    inner.down, inner.broken = False, True
    assert guarded.export([]) is SpanExportResult.FAILURE  # an exception does not escape
    inner.broken = False
    assert guarded.export([]) is SpanExportResult.SUCCESS
    inner.down = True
    guarded.export([])
    lines = [(r.levelname, r.getMessage()) for r in caplog.records]
    assert [level for level, _ in lines] == ["WARNING", "INFO", "WARNING"]
    assert "http://collector:4318 cannot be reached or refused the spans" in lines[0][1]
    assert "takes everything again" in lines[1][1]
    # spans going through do not hide metrics that keep failing (a traces-only collector)
    health = Health("http://jaeger:4318")
    health.report(False, "metrics")
    for _ in range(3):
        health.report(True, "spans")
        health.report(False, "metrics")
    assert health.warnings == 1 and health.down
    assert "tracing.metrics: false" in caplog.records[-1].getMessage()
    # while leaving, a collector known to be down is not tried again
    guarded.health.closing = True
    inner.down = False
    assert guarded.export([]) is SpanExportResult.FAILURE


def test_the_tracing_keys_are_declared_and_checked() -> None:
    make_agent("hi", plugins=["tracing"], config={"tracing": {"enabled": False}}).close()
    with pytest.raises(ConfigError, match=r"tracing\.enabled"):
        make_agent("hi", plugins=["tracing"], config={"tracing": {"enabled": "yes"}})
    with pytest.raises(ConfigError, match=r"tracing\.max_queue_size"):
        make_agent("hi", plugins=["tracing"], config={"tracing": {"max_queue_size": 0}})


def test_tracing_on_without_opentelemetry_installed_says_so_once(
    monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    import sys

    import hermes_tracing_otel

    for name in [m for m in sys.modules if m.startswith("hermes_tracing_otel.")]:
        if name.endswith((".providers", ".spans", ".health", ".trace_context")):
            monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "opentelemetry", None)  # as if it were not installed
    monkeypatch.setattr(hermes_tracing_otel, "_broken", False)
    caplog.set_level(logging.WARNING, logger="hermes.tracing")
    for _ in range(3):
        bot = make_agent("answered", plugins=["tracing"], config={"tracing": {"enabled": True}})
        assert bot.chat("hi") == "answered"
        bot.close()
    lines = [r.getMessage() for r in caplog.records]
    assert len(lines) == 1 and "OpenTelemetry cannot be imported" in lines[0]
