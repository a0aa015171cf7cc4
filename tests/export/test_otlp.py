"""Sending spans over OTLP/HTTP to a receiver on loopback, and a clear error when none takes them."""

from __future__ import annotations

import json
import socket

import pytest

from engine.errors import RagscopeError
from engine.export.openinference import trace_spans
from engine.export.otlp import endpoint_url, send_spans
from engine.trace import ErrorStep, Hit, RetrievalStep
from otlp_receiver import receiving


def _closed_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def test_sent_spans_arrive_with_ids_kinds_parents_times_and_attributes(make_trace):
    hit = Hit(doc_id="d1", chunk_id="d1#0", title="Doc", text="Ada wrote the notes.", score=0.9, rank=1)
    trace = make_trace(RetrievalStep(query="notes", retriever="bm25", hits=(hit,), elapsed_ms=2.0),
                       ErrorStep(title="Run failed", message="boom", recoverable=False, elapsed_ms=3.0))
    spans = trace_spans(trace, session="s1")
    with receiving() as receiver:
        send_spans(spans, receiver.url + "/v1/traces", project="demo")
    assert receiver.paths == ["/v1/traces"]
    got = {s.span_id: s for s in receiver.spans}
    assert set(got) == {s.span_id for s in spans}
    for span in spans:
        arrived = got[span.span_id]
        assert (arrived.name, arrived.trace_id, arrived.parent_id) == (span.name, span.trace_id, span.parent_id)
        assert (arrived.start_ns, arrived.end_ns) == (span.start_ns, span.end_ns)
        assert arrived.attributes == span.attributes
        assert arrived.resource == {"service.name": "ragscope", "openinference.project.name": "demo"}
    root, retrieval, error = (got[s.span_id] for s in spans)
    assert root.attributes["session.id"] == "s1" and root.status == "STATUS_CODE_ERROR"
    assert retrieval.attributes["openinference.span.kind"] == "RETRIEVER"
    assert retrieval.attributes["retrieval.documents.0.document.content"] == "Ada wrote the notes."
    assert json.loads(retrieval.attributes["retrieval.documents.0.document.metadata"])["title"] == "Doc"
    assert (error.status, error.status_message) == ("STATUS_CODE_ERROR", "boom")


def test_many_spans_go_in_several_requests(make_trace, monkeypatch):
    import engine.export.otlp as otlp

    monkeypatch.setattr(otlp, "BATCH", 2)
    spans = trace_spans(make_trace(*(ErrorStep(message=str(i), elapsed_ms=float(i + 1)) for i in range(4))))
    with receiving() as receiver:
        send_spans(spans, receiver.url)
    assert len(receiver.paths) == 3 and [s.span_id for s in receiver.spans] == [s.span_id for s in spans]


@pytest.mark.parametrize("given, expected", [
    ("http://127.0.0.1:6006", "http://127.0.0.1:6006/v1/traces"),
    ("http://127.0.0.1:6006/", "http://127.0.0.1:6006/v1/traces"),
    ("https://otel.example:4318/custom/path", "https://otel.example:4318/custom/path"),
])
def test_a_bare_server_address_gets_the_traces_path(given, expected):
    assert endpoint_url(given) == expected


@pytest.mark.parametrize("url", ["127.0.0.1:6006", "ftp://127.0.0.1/v1/traces", "http:///v1/traces"])
def test_a_url_that_is_not_http_is_refused(url):
    with pytest.raises(RagscopeError, match="must start with http:// or https://"):
        endpoint_url(url)


def test_an_unreachable_receiver_is_a_clear_error(make_trace):
    spans = trace_spans(make_trace())
    with pytest.raises(RagscopeError, match=r"could not send spans to .*: \[Errno \d+\] Connection refused"):
        send_spans(spans, f"http://127.0.0.1:{_closed_port()}/v1/traces", timeout_s=1.0)


def test_a_receiver_that_refuses_the_spans_is_named_with_its_answer(make_trace):
    with receiving(status=404) as receiver, pytest.raises(RagscopeError, match="it answered HTTP 404 Not Found"):
        send_spans(trace_spans(make_trace()), receiver.url + "/wrong", timeout_s=1.0)


def test_a_receiver_that_redirects_is_a_failure_and_nothing_is_sent_where_it_points(make_trace):
    """The exporter counts a 307 as spans taken; a redirect is never followed either (issue 26)."""
    with receiving() as other, receiving(status=307, location=other.url + "/v1/traces") as receiver:
        with pytest.raises(RagscopeError) as caught:
            send_spans(trace_spans(make_trace()), receiver.url, timeout_s=1.0)
    assert receiver.paths == ["/v1/traces"] and receiver.spans == [] and other.paths == []
    assert (f"could not send spans to {receiver.url}/v1/traces: it redirected to {other.url}/v1/traces (HTTP 307); "
            "ragscope does not follow redirects") in str(caught.value)
