"""Send OpenInference spans to an OTLP/HTTP receiver: Arize Phoenix, an OpenTelemetry collector, any backend.

The spans already carry their ids and times (engine.export.openinference), so they are handed to
the OTLP/HTTP protobuf exporter as finished `ReadableSpan`s; no tracer provider is set up, and nothing
global changes in the process.
"""

from __future__ import annotations

import logging
import re
import socket
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from engine.errors import RagscopeError
from engine.export.openinference import Span
from engine.urls import http_url

if TYPE_CHECKING:
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import ReadableSpan

TRACES_PATH = "/v1/traces"  # OTLP/HTTP's path for traces; Phoenix serves it on its UI port, 6006
BATCH = 256  # spans per request: an evaluation's traces stay far below the exporter's 64 MiB request cap
# the exporter logs why a request failed instead of raising; its records are collected, not printed
_EXPORTER_LOGGER = "opentelemetry.exporter.otlp.proto.http.trace_exporter"
_HTTP_CODE = re.compile(r"code: (\d+), reason: (.*)")


def endpoint_url(url: str) -> str:
    """`url` checked; a bare server address gets the traces path, as OTEL_EXPORTER_OTLP_ENDPOINT would."""
    parts = http_url(url, "--otlp-endpoint", "http://127.0.0.1:6006/v1/traces (Phoenix) or "
                     "http://127.0.0.1:4318/v1/traces (an OpenTelemetry collector)")
    return url if parts.path not in ("", "/") else urlunsplit(parts._replace(path=TRACES_PATH))


def send_spans(spans: Sequence[Span], url: str, *, project: str = "ragscope", timeout_s: float = 10.0) -> None:
    """Export `spans` to `url` (OTLP/HTTP protobuf); a RagscopeError says why when the receiver does not take them.

    `project` becomes the resource's `openinference.project.name`, the project Phoenix files the traces under.
    """
    try:
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
        from opentelemetry.sdk.resources import Resource
        from opentelemetry.sdk.trace.export import SpanExportResult
    except ImportError:
        raise RagscopeError("sending spans needs the OTLP/HTTP exporter: pip install "
                            "opentelemetry-exporter-otlp-proto-http==1.45.2") from None
    target = endpoint_url(url)
    resource = Resource({"service.name": "ragscope", "openinference.project.name": project})
    session = _NoRedirects.make()
    exporter = OTLPSpanExporter(endpoint=target, timeout=timeout_s, session=session)
    reasons = _Reasons()
    logger = logging.getLogger(_EXPORTER_LOGGER)
    logger.addFilter(reasons)
    try:
        for first in range(0, len(spans), BATCH):
            batch = [_readable(span, resource) for span in spans[first:first + BATCH]]
            if exporter.export(batch) is not SpanExportResult.SUCCESS:
                why = (session.redirect or _http_answer(reasons.messages) or _unreachable(target, timeout_s)
                       or _first(reasons.messages))
                sent = f" ({first} of {len(spans)} spans were sent before)" if first else ""
                raise RagscopeError(f"could not send spans to {target}: {why}{sent}. Check that an OTLP/HTTP "
                                    f"receiver listens at that URL (Phoenix: `phoenix serve`, then "
                                    f"http://HOST:6006{TRACES_PATH})")
    finally:
        logger.removeFilter(reasons)
        exporter.shutdown()


def _readable(span: Span, resource: Resource) -> ReadableSpan:
    from opentelemetry.sdk.trace import ReadableSpan
    from opentelemetry.sdk.util.instrumentation import InstrumentationScope
    from opentelemetry.trace import SpanContext, TraceFlags
    from opentelemetry.trace.status import Status, StatusCode

    def context(span_id: str) -> SpanContext:
        return SpanContext(trace_id=int(span.trace_id, 16), span_id=int(span_id, 16), is_remote=False,
                           trace_flags=TraceFlags(TraceFlags.SAMPLED))

    status = Status(StatusCode.ERROR, span.status_message) if span.status == "ERROR" else Status(StatusCode.OK)
    return ReadableSpan(name=span.name, context=context(span.span_id),
                        parent=context(span.parent_id) if span.parent_id else None, resource=resource,
                        attributes=span.attributes, status=status, start_time=span.start_ns, end_time=span.end_ns,
                        instrumentation_scope=InstrumentationScope("ragscope.export"))


class _NoRedirects:
    """A `requests` session for the exporter that takes a redirect for a failure: the exporter counts any
    answer below 400 as spans taken, and a 307 takes nothing (issue 26). A redirect is never followed
    either: spans go only where the user pointed them."""

    @staticmethod
    def make() -> Any:
        import requests

        class Session(requests.Session):
            redirect = ""  # what the receiver answered instead of taking the spans

            def __init__(self) -> None:
                super().__init__()
                self.max_redirects = 0
                self.hooks["response"].append(self.refuse_redirects)

            def refuse_redirects(self, response: requests.Response, **_kwargs: Any) -> None:
                if 300 <= response.status_code < 400:
                    to = response.headers.get("Location", "")
                    self.redirect = (f"it redirected to {to or 'nowhere'} (HTTP {response.status_code}); ragscope "
                                     "does not follow redirects, so no span was sent there — if you trust that "
                                     "receiver, give its URL yourself")
                    raise requests.RequestException(self.redirect, response=response)

        return Session()


class _Reasons(logging.Filter):
    """Keeps the exporter's log records (its only account of a failure) for the error message, unprinted."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[str] = []

    def filter(self, record: logging.LogRecord) -> bool:
        self.messages.append(record.getMessage())
        return False


def _http_answer(messages: list[str]) -> str:
    """`it answered HTTP 404 Not Found` when the receiver answered with an error; '' when it did not answer."""
    found = next((m for m in map(_HTTP_CODE.search, messages) if m), None)
    return f"it answered HTTP {found.group(1)} {found.group(2)}" if found else ""


def _unreachable(url: str, timeout_s: float) -> str:
    """Why nothing answers at `url` (`[Errno 111] Connection refused`), asked of the system; '' when it is reachable.

    The exporter logs the connection error only when it retries, so its own records may not say.
    """
    parts = urlsplit(url)
    try:
        socket.create_connection((parts.hostname, parts.port or (443 if parts.scheme == "https" else 80)),
                                 timeout=timeout_s).close()
    except OSError as exc:
        return str(exc) or type(exc).__name__
    return ""


def _first(messages: list[str]) -> str:
    return messages[0] if messages else "the exporter gave no reason"
