"""Where a turn's span belongs (W3C trace context in, and out to tools), and the values of a
few attributes: the endpoint's address, a failure's ``error.type``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from opentelemetry import trace
from opentelemetry.context import Context
from opentelemetry.trace import Link, Span
from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

from hermes_hookspecs import Cancelled, ProviderError

from . import conventions as c

_LINKED_SOURCES = frozenset({"cron"})
"""Turns that start a trace of their own, linked to the trace context they were given (a job
runs long after the turn that scheduled it)."""
_PROPAGATOR = TraceContextTextMapPropagator()


def error_type(error: BaseException) -> str:
    """A low-cardinality ``error.type`` of a failed model call: hermes's error kind for a
    provider error, ``cancelled`` for an interrupt, else the exception's qualified name."""
    if isinstance(error, ProviderError) and error.kind != "other":
        return error.kind
    if isinstance(error, Cancelled):
        return "cancelled"
    kind = type(error)
    if kind.__module__ == "builtins":
        return kind.__qualname__
    return f"{kind.__module__}.{kind.__qualname__}"


def server_attributes(base_url: str) -> dict[str, Any]:
    """``server.address`` and ``server.port`` of an endpoint (none without one)."""
    if not base_url:
        return {}
    parts = urlsplit(base_url)
    if not parts.hostname:
        return {}
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return {c.SERVER_ADDRESS: parts.hostname, c.SERVER_PORT: port}


def turn_parent(
    child_of: Context | None,
    source: str,
    carrier: Mapping[str, str],
    environ: Mapping[str, str],
) -> tuple[Context | None, list[Link]]:
    """The parent of a turn's span and its links: the span a subagent nests under
    (``child_of``); else the trace context the turn was given (``carrier``); else the caller's
    current span (``None``); else ``TRACEPARENT`` in ``environ``; else none (a new trace). A
    turn of a linked source (a scheduled job) starts a new trace linked to its context."""
    if child_of is not None:
        return child_of, []
    if not carrier.get("traceparent"):
        if trace.get_current_span().get_span_context().is_valid:
            return None, []
        carrier = {
            name: value
            for name, value in (
                ("traceparent", environ.get("TRACEPARENT", "")),
                ("tracestate", environ.get("TRACESTATE", "")),
            )
            if value
        }
    if not carrier.get("traceparent"):
        return Context(), []
    extracted = _PROPAGATOR.extract(dict(carrier))
    remote = trace.get_current_span(extracted).get_span_context()
    if not remote.is_valid:
        return Context(), []
    if source in _LINKED_SOURCES:
        return Context(), [Link(remote, {c.LINK_KIND: "origin"})]
    return extracted, []


def inject(carrier: dict[str, str], span: Span) -> None:
    """Write ``span``'s W3C trace context into ``carrier`` (``traceparent``, ``tracestate``)."""
    _PROPAGATOR.inject(carrier, trace.set_span_in_context(span, Context()))
