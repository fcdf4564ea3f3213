"""The tracer and meter providers of this process when the configuration (or the environment)
turns tracing on: OTLP/HTTP exporters behind a bounded batch queue, guarded so that a collector
that is down costs one warning and never a turn's time, and flushed (briefly) at exit."""

from __future__ import annotations

import atexit
import socket
import threading
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit

from opentelemetry.exporter.otlp.proto.http.metric_exporter import OTLPMetricExporter
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.metrics import MeterProvider
from opentelemetry.sdk.metrics.export import PeriodicExportingMetricReader
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor

from .health import GuardedMetricExporter, GuardedSpanExporter, Health, quiet_exporter_logs
from .settings import ExportSettings

SCHEDULE_DELAY_MILLIS = 2000
"""How long finished spans wait before they are sent in a batch."""
METRICS_INTERVAL_MILLIS = 30_000
"""How often the metrics are sent."""


@dataclass
class Providers:
    """What :func:`build` made, and how to stop it."""

    tracer_provider: TracerProvider
    meter_provider: MeterProvider | None
    processor: BatchSpanProcessor
    health: Health
    exit_timeout: float
    traces_url: str = ""

    def close(self) -> None:
        """Send what is queued and stop, waiting at most ``exit_timeout`` seconds: the rest
        is left to the daemon threads, which end with the process. A collector that nothing
        was sent to yet is first checked with a plain connection, so that one that is down
        costs the exit nothing; either way, the warning is given here, while the process can
        still show it. Only the first call does anything."""
        if self.health.closing:
            return
        atexit.unregister(self.close)
        if not self.health.down and not self.health.answered:
            problem = unreachable(self.traces_url, min(self.exit_timeout, CONNECT_SECONDS))
            if problem:
                self.health.report(False, "spans", problem)
        self.health.closing = True

        def stop() -> None:
            self.tracer_provider.shutdown()
            if self.meter_provider is not None:
                self.meter_provider.shutdown()

        worker = threading.Thread(target=stop, name="hermes-tracing-exit", daemon=True)
        worker.start()
        worker.join(self.exit_timeout)
        if worker.is_alive():
            self.health.report(
                False, "spans", f"no answer within tracing.exit_timeout ({self.exit_timeout:g} s)"
            )


CONNECT_SECONDS = 0.5
"""How long the check at exit waits for a connection to the collector."""


def unreachable(url: str, timeout: float) -> str:
    """Why no connection to ``url``'s host and port can be made (``""`` when one can)."""
    parts = urlsplit(url)
    if not parts.hostname:
        return ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        socket.create_connection((parts.hostname, port), timeout=timeout).close()
    except OSError as exc:
        return exc.strerror or type(exc).__name__
    return ""


def build(settings: ExportSettings, version: str) -> Providers:
    """Providers that export over OTLP/HTTP as ``settings`` say; stopped at exit."""
    quiet_exporter_logs()
    resource = Resource.create(
        {
            "service.name": settings.service_name,
            "telemetry.sdk.name": "opentelemetry",
            "hermes.tracing.version": version,
        }
    )
    health = Health(settings.traces_url.rsplit("/v1/", 1)[0])
    spans = OTLPSpanExporter(
        endpoint=settings.traces_url,
        headers=settings.headers,
        timeout=settings.export_timeout,
    )
    processor = BatchSpanProcessor(
        GuardedSpanExporter(spans, health),
        max_queue_size=settings.max_queue_size,
        schedule_delay_millis=SCHEDULE_DELAY_MILLIS,
        max_export_batch_size=min(512, settings.max_queue_size),
    )
    tracer_provider = TracerProvider(resource=resource, shutdown_on_exit=False)
    tracer_provider.add_span_processor(processor)
    meter_provider = None
    if settings.metrics:
        metrics: Any = OTLPMetricExporter(
            endpoint=settings.metrics_url,
            headers=settings.headers,
            timeout=settings.export_timeout,
        )
        reader = PeriodicExportingMetricReader(
            GuardedMetricExporter(metrics, health),
            export_interval_millis=METRICS_INTERVAL_MILLIS,
        )
        meter_provider = MeterProvider(
            resource=resource, metric_readers=[reader], shutdown_on_exit=False
        )
    built = Providers(
        tracer_provider,
        meter_provider,
        processor,
        health,
        settings.exit_timeout,
        settings.traces_url,
    )
    atexit.register(built.close)
    return built
