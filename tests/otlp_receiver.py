"""An OTLP/HTTP trace receiver on loopback that decodes what arrives, for export tests (never a real network).

It parses each POST body as the collector does (`ExportTraceServiceRequest`, protobuf) and keeps
the spans flat, with hex ids and plain attribute values, so tests compare them directly.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import Status


@dataclass(frozen=True)
class ReceivedSpan:
    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    start_ns: int
    end_ns: int
    status: str  # STATUS_CODE_OK, STATUS_CODE_ERROR, STATUS_CODE_UNSET
    status_message: str
    attributes: dict[str, Any]
    resource: dict[str, Any]


@dataclass
class Receiver:
    """Answers every POST with `status`; records the paths asked for and the spans received."""

    url: str
    status: int = 200
    location: str = ""  # sent as Location with every answer (a 3xx status sends the client there)
    paths: list[str] = field(default_factory=list)
    spans: list[ReceivedSpan] = field(default_factory=list)


@contextmanager
def receiving(status: int = 200, location: str = "") -> Iterator[Receiver]:
    """A receiver on 127.0.0.1 at a free port for the duration of the block; `url` is its base address."""
    receiver: Receiver

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
            receiver.paths.append(self.path)
            if receiver.status == 200:
                receiver.spans.extend(_decoded(ExportTraceServiceRequest.FromString(body)))
            reply = ExportTraceServiceResponse().SerializeToString()
            self.send_response(receiver.status)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(reply)))
            if receiver.location:
                self.send_header("Location", receiver.location)
            self.end_headers()
            self.wfile.write(reply)

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    receiver = Receiver(url=f"http://127.0.0.1:{server.server_address[1]}", status=status, location=location)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


def _decoded(request: ExportTraceServiceRequest) -> Iterator[ReceivedSpan]:
    for resource_spans in request.resource_spans:
        resource = _attributes(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                yield ReceivedSpan(
                    name=span.name, trace_id=span.trace_id.hex(), span_id=span.span_id.hex(),
                    parent_id=span.parent_span_id.hex() or None, start_ns=span.start_time_unix_nano,
                    end_ns=span.end_time_unix_nano, status=Status.StatusCode.Name(span.status.code),
                    status_message=span.status.message, attributes=_attributes(span.attributes), resource=resource,
                )


def _attributes(pairs: Any) -> dict[str, Any]:
    return {pair.key: _value(pair.value) for pair in pairs if isinstance(pair, KeyValue)}


def _value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "array_value":
        return [_value(v) for v in value.array_value.values]
    return getattr(value, which) if which else None
