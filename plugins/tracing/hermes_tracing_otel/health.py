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
    """Whether the collector takes what is exported, shared by the span and metric exporters:
    one warning when an export first fails (whichever signal, and however many fail while it
    lasts), one line when every signal goes through again.

    :param where: the collector's URL, for the warning.
    """

    def __init__(self, where: str) -> None:
        self.where = where
        self.failing: set[str] = set()
        self.answered = False
        """Some export went through: the collector is there."""
        self.closing = False
        self.warnings = 0
        self._lock = threading.Lock()

    @property
    def down(self) -> bool:
        """Whether some signal fails to export now."""
        return bool(self.failing)

    def report(self, ok: bool, signal: str = "spans", detail: str = "") -> None:
        """Record the outcome of one export of ``signal`` (``spans`` or ``metrics``)."""
        with self._lock:
            was_down = bool(self.failing)
            if ok:
                self.answered = True
                self.failing.discard(signal)
            else:
                self.failing.add(signal)
            warn = not ok and not was_down
            recovered = ok and was_down and not self.failing
            if warn:
                self.warnings += 1
        if recovered:
            log.info("tracing: the collector at %s takes everything again", self.where)
        elif warn:
            hint = (
                "; a collector that takes traces only needs tracing.metrics: false"
                if signal == "metrics"
                else ""
            )
            log.warning(
                "tracing: the collector at %s cannot be reached or refused the %s%s; what "
                "fails to export is dropped until it answers (the agent is not affected)%s",
                self.where,
                signal,
                f" ({detail})" if detail else "",
                hint,
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
            self.health.report(False, "spans", f"{type(exc).__name__}: {exc}")
            return SpanExportResult.FAILURE
        self.health.report(result is SpanExportResult.SUCCESS, "spans")
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
            self.health.report(False, "metrics", f"{type(exc).__name__}: {exc}")
            return MetricExportResult.FAILURE
        self.health.report(result is MetricExportResult.SUCCESS, "metrics")
        return result

    def force_flush(self, timeout_millis: float = 10_000) -> bool:
        """Flush the inner exporter."""
        return self.inner.force_flush(timeout_millis)

    def shutdown(self, timeout_millis: float = 30_000, **kwargs: Any) -> None:
        """Stop the inner exporter."""
        self.inner.shutdown(timeout_millis=timeout_millis, **kwargs)
