"""Exporters that never trouble a turn: they run on the SDK's background threads, and a
collector that cannot be reached is reported once (one warning per outage), not once per
batch. While the process is leaving and the collector is known to be down, batches are dropped
at once so that exit is not held up."""

from __future__ import annotations

import logging
import threading
from collections.abc import Sequence
from typing import Any

from opentelemetry.sdk.metrics.export import MetricExporter, MetricExportResult, MetricsData
from opentelemetry.sdk.trace import ReadableSpan
from opentelemetry.sdk.trace.export import SpanExporter, SpanExportResult

log = logging.getLogger("hermes.tracing")

QUIET_LOGGERS = ("opentelemetry.exporter.otlp",)
"""The exporters' own loggers: each failed batch logs an error there; :class:`Health` says it
once instead."""


class Health:
    """Whether the collector answers, shared by the span and metric exporters.

    :param where: the collector's URL, for the warning.
    """

    def __init__(self, where: str) -> None:
        self.where = where
        self.down = False
        self.closing = False
        self.warnings = 0
        self._lock = threading.Lock()

    def report(self, ok: bool, detail: str = "") -> None:
        """Record the outcome of one export: the first failure of an outage warns, the first
        success after it says the collector is back."""
        with self._lock:
            if ok == (not self.down):
                return
            self.down = not ok
            if not ok:
                self.warnings += 1
        if ok:
            log.info("tracing: the collector at %s answers again", self.where)
        else:
            log.warning(
                "tracing: the collector at %s cannot be reached%s; spans and metrics are "
                "dropped until it answers (the agent is not affected)",
                self.where,
                f" ({detail})" if detail else "",
            )


def quiet_exporter_logs() -> None:
    """Keep the exporters' per-batch errors out of the user's log (unless a level was set on
    their loggers on purpose)."""
    for name in QUIET_LOGGERS:
        logger = logging.getLogger(name)
        if logger.level == logging.NOTSET:
            logger.setLevel(logging.CRITICAL)


class GuardedSpanExporter(SpanExporter):
    """A span exporter whose failures go to :class:`Health`."""

    def __init__(self, inner: SpanExporter, health: Health) -> None:
        self.inner = inner
        self.health = health

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        """Export ``spans``; never raises."""
        if self.health.closing and self.health.down:
            return SpanExportResult.FAILURE
        try:
            result = self.inner.export(spans)
        except Exception as exc:
            self.health.report(False, f"{type(exc).__name__}: {exc}")
            return SpanExportResult.FAILURE
        self.health.report(result is SpanExportResult.SUCCESS)
        return result

    def shutdown(self) -> None:
        """Stop the inner exporter (which also ends a retry it is waiting in)."""
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Flush the inner exporter."""
        return self.inner.force_flush(timeout_millis)


class GuardedMetricExporter(MetricExporter):
    """A metric exporter whose failures go to :class:`Health`."""

    def __init__(self, inner: MetricExporter, health: Health) -> None:
        super().__init__(
            preferred_temporality=inner._preferred_temporality,
            preferred_aggregation=inner._preferred_aggregation,
        )
        self.inner = inner
        self.health = health

    def export(
        self, metrics_data: MetricsData, timeout_millis: float = 10_000, **kwargs: Any
    ) -> MetricExportResult:
        """Export ``metrics_data``; never raises."""
        if self.health.closing and self.health.down:
            return MetricExportResult.FAILURE
        try:
            result = self.inner.export(metrics_data, timeout_millis=timeout_millis, **kwargs)
        except Exception as exc:
            self.health.report(False, f"{type(exc).__name__}: {exc}")
            return MetricExportResult.FAILURE
        self.health.report(result is MetricExportResult.SUCCESS)
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Flush the inner exporter."""
        return self.inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Stop the inner exporter."""
        self.inner.shutdown(timeout_millis=timeout_millis, **kwargs)
