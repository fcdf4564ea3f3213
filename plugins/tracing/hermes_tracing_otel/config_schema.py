"""The configuration keys the tracing plugin reads (``tracing.*``)."""

from __future__ import annotations

from collections.abc import Callable

from hermes_hookspecs import ConfigKey, ConfigSection, hookimpl


@hookimpl
def hermes_register_config(register: Callable[[ConfigSection], None]) -> None:
    """Declare ``tracing.*``."""
    register(
        ConfigSection(
            "tracing",
            [
                ConfigKey(
                    "enabled",
                    ("boolean", "null"),
                    doc="emit OpenTelemetry spans and metrics (unset: on when "
                    "OTEL_EXPORTER_OTLP_ENDPOINT is set)",
                ),
                ConfigKey(
                    "endpoint",
                    ("string", "null"),
                    doc="OTLP/HTTP base URL of the collector, e.g. http://localhost:4318 "
                    "(unset: OTEL_EXPORTER_OTLP_ENDPOINT, else http://localhost:4318)",
                ),
                ConfigKey(
                    "headers",
                    "object",
                    doc="HTTP headers sent with every export (values may be ${VAR}); "
                    "OTEL_EXPORTER_OTLP_HEADERS adds to them",
                ),
                ConfigKey(
                    "service_name",
                    ("string", "null"),
                    doc="service.name of the spans (unset: OTEL_SERVICE_NAME, else hermes)",
                ),
                ConfigKey(
                    "capture_content",
                    ("boolean", "null"),
                    doc="record messages, tool arguments and results on the spans (unset: "
                    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT)",
                ),
                ConfigKey(
                    "metrics",
                    "boolean",
                    default=True,
                    doc="also export the gen_ai.client metrics (off for a traces-only backend)",
                ),
                ConfigKey(
                    "export_timeout",
                    "number",
                    default=10.0,
                    doc="seconds one export may take, retries included",
                    minimum=0,
                    exclusive_minimum=True,
                ),
                ConfigKey(
                    "max_queue_size",
                    "integer",
                    default=2048,
                    doc="spans kept waiting for export; beyond it the oldest are dropped",
                    minimum=1,
                ),
                ConfigKey(
                    "exit_timeout",
                    "number",
                    default=3.0,
                    doc="seconds the process waits at exit for the last export",
                    minimum=0,
                ),
            ],
            doc="OpenTelemetry GenAI traces (docs/tracing.md)",
        )
    )
