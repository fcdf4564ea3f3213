"""Whether a turn is traced, and where spans go: ``tracing.*`` of the configuration with the
standard ``OTEL_*`` environment variables. Imports nothing of OpenTelemetry."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

ENDPOINT_VARIABLES = ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
"""Setting either turns tracing on when the configuration says nothing."""
CAPTURE_VARIABLE = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
"""The conventions' opt-in for message and tool content."""
CAPTURE_ON = frozenset({"true", "1", "yes", "on", "span_only", "span_and_event"})
"""Its values that record content on spans (the instrumentations' boolean spellings, and the
newer mode names that include spans)."""
DEFAULT_ENDPOINT = "http://localhost:4318"
"""An OTLP/HTTP collector on this machine: what the exporters use by default."""
_VARIABLE_RE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def section(config: Mapping[str, Any]) -> Mapping[str, Any]:
    """The ``tracing`` section of ``config`` (empty when absent or not a mapping)."""
    value = config.get("tracing")
    return value if isinstance(value, Mapping) else {}


def wanted(config: Mapping[str, Any], environ: Mapping[str, str], configured: bool) -> bool:
    """Whether a turn with ``config`` is traced: ``tracing.enabled`` when set; otherwise when
    an OTLP endpoint variable is set or an embedder ``configured`` tracing, unless
    ``OTEL_SDK_DISABLED`` is true."""
    enabled = section(config).get("enabled")
    if enabled is not None:
        return bool(enabled)
    if environ.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    return configured or any(environ.get(name) for name in ENDPOINT_VARIABLES)


def capture_content(config: Mapping[str, Any], environ: Mapping[str, str]) -> bool:
    """Whether message and tool content is recorded: ``tracing.capture_content`` when set,
    else the conventions' environment variable."""
    value = section(config).get("capture_content")
    if value is not None:
        return bool(value)
    return environ.get(CAPTURE_VARIABLE, "").strip().lower() in CAPTURE_ON


def _expand(value: str, environ: Mapping[str, str]) -> str:
    return _VARIABLE_RE.sub(lambda m: environ.get(m.group(1), ""), value)


def _env_headers(raw: str) -> dict[str, str]:
    """``OTEL_EXPORTER_OTLP_HEADERS``: ``key=value`` pairs separated by commas (URL-encoded)."""
    from urllib.parse import unquote

    headers: dict[str, str] = {}
    for pair in raw.split(","):
        key, sep, value = pair.partition("=")
        if sep and key.strip():
            headers[unquote(key.strip()).lower()] = unquote(value.strip())
    return headers


@dataclass(frozen=True)
class ExportSettings:
    """Where and how the spans and metrics of this process are exported.

    :param traces_url: the OTLP/HTTP traces URL (``…/v1/traces``).
    :param metrics_url: the OTLP/HTTP metrics URL (``…/v1/metrics``).
    :param headers: HTTP headers of every export.
    :param service_name: the ``service.name`` resource attribute.
    :param metrics: whether metrics are exported too.
    :param export_timeout: seconds one export may take, retries included.
    :param max_queue_size: spans kept waiting for export.
    :param exit_timeout: seconds the process waits at exit for the last export.
    """

    traces_url: str
    metrics_url: str
    headers: dict[str, str] = field(default_factory=dict)
    service_name: str = "hermes"
    metrics: bool = True
    export_timeout: float = 10.0
    max_queue_size: int = 2048
    exit_timeout: float = 3.0


def export_settings(config: Mapping[str, Any], environ: Mapping[str, str]) -> ExportSettings:
    """The export settings of ``config`` and ``environ`` (configuration first)."""
    tracing = section(config)
    base = str(
        tracing.get("endpoint") or environ.get("OTEL_EXPORTER_OTLP_ENDPOINT") or DEFAULT_ENDPOINT
    ).rstrip("/")
    own = bool(tracing.get("endpoint"))  # a configured endpoint wins over every variable
    traces = "" if own else environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "")
    metrics = "" if own else environ.get("OTEL_EXPORTER_OTLP_METRICS_ENDPOINT", "")
    headers = _env_headers(environ.get("OTEL_EXPORTER_OTLP_HEADERS", ""))
    configured = tracing.get("headers")
    if isinstance(configured, Mapping):
        headers.update({str(k).lower(): _expand(str(v), environ) for k, v in configured.items()})
    exit_timeout = tracing.get("exit_timeout")
    return ExportSettings(
        traces_url=traces or f"{base}/v1/traces",
        metrics_url=metrics or f"{base}/v1/metrics",
        headers=headers,
        service_name=str(
            tracing.get("service_name") or environ.get("OTEL_SERVICE_NAME") or "hermes"
        ),
        metrics=bool(tracing.get("metrics", True)),
        export_timeout=float(tracing.get("export_timeout") or 10.0),
        max_queue_size=int(tracing.get("max_queue_size") or 2048),
        exit_timeout=float(exit_timeout) if exit_timeout is not None else 3.0,
    )


def environ() -> Mapping[str, str]:
    """The process environment (a function, so tests may pass another mapping instead)."""
    return os.environ
