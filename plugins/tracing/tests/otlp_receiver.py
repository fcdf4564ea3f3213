"""A collector for the tests: an OTLP/HTTP receiver on 127.0.0.1 that decodes what the exporter
sends (protobuf) with the official ``opentelemetry-proto`` messages."""

from __future__ import annotations

import gzip
import threading
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.metrics.v1.metrics_service_pb2 import (
    ExportMetricsServiceRequest,
    ExportMetricsServiceResponse,
)
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)


def _value(any_value: Any) -> Any:
    kind = any_value.WhichOneof("value")
    if kind == "array_value":
        return tuple(_value(v) for v in any_value.array_value.values)
    return getattr(any_value, kind) if kind else None


class Receiver:
    """Receives ``/v1/traces`` and ``/v1/metrics`` (or, with ``metrics=False``, answers 404
    there, as a traces-only backend does); ``spans()`` and ``metric_names()`` say what
    arrived."""

    def __init__(self, *, metrics: bool = True) -> None:
        self.takes_metrics = metrics
        self.traces: list[ExportTraceServiceRequest] = []
        self.metrics: list[ExportMetricsServiceRequest] = []
        self.headers: list[dict[str, str]] = []
        self.changed = threading.Condition()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:  # noqa: N802
                body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                encoding = (self.headers.get("Content-Encoding") or "").lower()
                if encoding == "gzip":
                    body = gzip.decompress(body)
                elif encoding == "deflate":
                    body = zlib.decompress(body)
                answer: bytes
                with receiver.changed:
                    receiver.headers.append({k.lower(): v for k, v in self.headers.items()})
                    if self.path.endswith("/v1/traces"):
                        receiver.traces.append(ExportTraceServiceRequest.FromString(body))
                        answer = ExportTraceServiceResponse().SerializeToString()
                    elif self.path.endswith("/v1/metrics") and receiver.takes_metrics:
                        receiver.metrics.append(ExportMetricsServiceRequest.FromString(body))
                        answer = ExportMetricsServiceResponse().SerializeToString()
                    else:
                        self.send_response(404)
                        self.end_headers()
                        return
                    receiver.changed.notify_all()
                self.send_response(200)
                self.send_header("Content-Type", "application/x-protobuf")
                self.send_header("Content-Length", str(len(answer)))
                self.end_headers()
                self.wfile.write(answer)

            def log_message(self, *args: Any) -> None:
                return None

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def url(self) -> str:
        """The receiver's base URL."""
        return f"http://127.0.0.1:{self.server.server_address[1]}"

    def spans(self) -> list[dict[str, Any]]:
        """Every span received: name, kind, ids, parent, attributes, status, resource."""
        found = []
        with self.changed:
            requests = list(self.traces)
        for request in requests:
            for resource_spans in request.resource_spans:
                resource = {a.key: _value(a.value) for a in resource_spans.resource.attributes}
                for scope_spans in resource_spans.scope_spans:
                    for span in scope_spans.spans:
                        found.append(
                            {
                                "name": span.name,
                                "kind": span.kind,
                                "trace_id": span.trace_id.hex(),
                                "span_id": span.span_id.hex(),
                                "parent": span.parent_span_id.hex(),
                                "attributes": {a.key: _value(a.value) for a in span.attributes},
                                "status": span.status.code,
                                "links": [
                                    (lk.trace_id.hex(), lk.span_id.hex()) for lk in span.links
                                ],
                                "resource": resource,
                                "scope": scope_spans.scope.name,
                                "schema_url": scope_spans.schema_url,
                            }
                        )
        return found

    def metric_names(self) -> set[str]:
        """The names of every metric received."""
        with self.changed:
            requests = list(self.metrics)
        return {
            metric.name
            for request in requests
            for resource_metrics in request.resource_metrics
            for scope_metrics in resource_metrics.scope_metrics
            for metric in scope_metrics.metrics
        }

    def wait_for_spans(self, count: int, timeout: float = 20) -> list[dict[str, Any]]:
        """The spans once at least ``count`` arrived (or the timeout passed)."""
        with self.changed:
            self.changed.wait_for(lambda: sum(_count(r) for r in self.traces) >= count, timeout)
        return self.spans()

    def close(self) -> None:
        """Stop serving."""
        self.server.shutdown()
        self.server.server_close()


def _count(request: ExportTraceServiceRequest) -> int:
    return sum(len(s.spans) for r in request.resource_spans for s in r.scope_spans)
