"""Fixtures of the tracing tests: the fake LLM server spoken to by the real OpenAI SDK, agents
with the tracing plugin loaded through its entry point, and in-process OpenTelemetry providers
whose in-memory exporter and reader hold what the plugin emitted."""

from __future__ import annotations

import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import hermes_tracing_otel
import pytest
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import InMemoryMetricReader
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from hermes_core.testing import Agent, FakeLLM, plugin_manager

sys.path.insert(0, str(Path(__file__).parent))

from otlp_receiver import Receiver  # noqa: E402

MODEL = "gpt-test"


@dataclass
class Telemetry:
    """What the plugin emitted in a test."""

    exporter: InMemorySpanExporter
    reader: InMemoryMetricReader

    def spans(self) -> list[ReadableSpan]:
        """Every finished span, in the order they ended."""
        return list(self.exporter.get_finished_spans())

    def named(self, prefix: str) -> list[ReadableSpan]:
        """The finished spans whose name starts with ``prefix``, by start time."""
        found = [s for s in self.spans() if s.name.startswith(prefix)]
        return sorted(found, key=lambda s: s.start_time or 0)

    def metrics(self) -> dict[str, list[Any]]:
        """Data points by metric name."""
        data = self.reader.get_metrics_data()
        points: dict[str, list[Any]] = {}
        if data is None:
            return points
        for resource in data.resource_metrics:
            for scope in resource.scope_metrics:
                for metric in scope.metrics:
                    points.setdefault(metric.name, []).extend(metric.data.data_points)
        return points


@pytest.fixture(autouse=True)
def _no_tracing_left(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """Each test starts with tracing off and no OTEL_* variable of the machine's, and leaves
    nothing running."""
    for name in (
        "OTEL_EXPORTER_OTLP_ENDPOINT",
        "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
        "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
        "OTEL_EXPORTER_OTLP_HEADERS",
        "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT",
        "OTEL_SDK_DISABLED",
        "TRACEPARENT",
        "TRACESTATE",
    ):
        monkeypatch.delenv(name, raising=False)
    hermes_tracing_otel.reset()
    yield
    hermes_tracing_otel.reset()


@pytest.fixture
def telemetry() -> Telemetry:
    """Tracing on, into an in-memory exporter and metric reader."""
    exporter = InMemorySpanExporter()
    tracer_provider = TracerProvider()
    tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
    reader = InMemoryMetricReader()
    hermes_tracing_otel.configure(tracer_provider, MeterProvider(metric_readers=[reader]))
    return Telemetry(exporter, reader)


@pytest.fixture
def server() -> Iterator[FakeLLM]:
    """The fake LLM server (OpenAI chat completions on its openai URL)."""
    fake = FakeLLM().start()
    try:
        yield fake
    finally:
        fake.stop()
    if fake.errors:
        raise fake.errors[0]


def _agent(
    server: FakeLLM,
    *extra: Any,
    config: dict[str, Any] | None = None,
    plugins: tuple[str, ...] = ("openai", "tracing"),
    **kwargs: Any,
) -> Agent:
    """An agent on the OpenAI provider whose endpoint is ``server``, with the tracing plugin
    (and ``extra`` in-process plugins) loaded."""
    return Agent.from_config(
        {"agent": {"retry_base_delay": 0.01, "api_max_retries": 2}, **(config or {})},
        provider="openai",
        base_url=server.openai_base_url,
        api_key="sk-test",
        model=MODEL,
        plugins=plugin_manager([*plugins, *extra]),
        **kwargs,
    )


@pytest.fixture
def make_agent() -> Any:
    """``make_agent(server, *plugins, config=..., plugins=...)``: an agent on the OpenAI
    provider whose endpoint is ``server``, with the tracing plugin loaded (the test modules
    cannot import this one: ``--import-mode=importlib``)."""
    return _agent


@pytest.fixture
def collector() -> Iterator[Receiver]:
    """An OTLP/HTTP receiver on 127.0.0.1 (see ``otlp_receiver``)."""
    found = Receiver()
    try:
        yield found
    finally:
        found.close()
