"""Traces → OpenInference spans: one CHAIN root per run, a child per step, the conventions' attribute names."""

from __future__ import annotations

import json
from datetime import datetime

import pytest

from engine.export.openinference import SYNTHETIC_STEP_NS, spans_jsonl, trace_spans
from engine.llm.chat import Message
from engine.tools.llm_call import render_messages
from engine.trace import (
    CalculationStep,
    DecisionStep,
    ErrorStep,
    Hit,
    LlmCallStep,
    RetrievalStep,
    RuleMatch,
    RulesMatchedStep,
    UnknownStep,
)

# the keys of Phoenix's span JSON (phoenix.trace.span_json_encoder), which its JSONL decoder requires exactly
PHOENIX_KEYS = {"name", "context", "span_kind", "parent_id", "start_time", "end_time", "status_code",
                "status_message", "attributes", "events", "conversation"}
STARTED_NS = 1_767_323_045 * 10**9  # 2026-01-02T03:04:05Z


def _hit(n: int) -> Hit:
    return Hit(doc_id=f"d{n}", chunk_id=f"d{n}#0", title=f"Doc {n}", text=f"text {n}", score=1.0 / n, rank=n,
               retriever="bm25", provenance="question")


def test_every_method_exports_one_chain_root_with_every_step_its_child(method_traces):
    for trace in method_traces:
        root, *children = trace_spans(trace)
        assert (root.kind, root.parent_id, root.name) == ("CHAIN", None, trace.method)
        assert root.attributes["input.value"] == trace.question
        assert root.attributes["output.value"] == trace.answer.text
        assert json.loads(root.attributes["metadata"])["timing"] == "measured"
        assert len(children) == len(trace.steps) > 0
        assert {c.parent_id for c in children} == {root.span_id}
        assert {s.trace_id for s in (root, *children)} == {root.trace_id} and len(root.trace_id) == 32
        assert len({s.span_id for s in (root, *children)}) == len(children) + 1
        expected = {"retrieval": "RETRIEVER", "rules_matched": "RETRIEVER", "llm_call": "LLM", "calculation": "TOOL"}
        assert [c.kind for c in children] == [expected.get(s.kind, "CHAIN") for s in trace.steps]
        assert all(c.attributes["openinference.span.kind"] == c.kind for c in children)
        # each step ends at its stamp; the steps tile the run without going back in time
        assert [c.end_ns - root.start_ns for c in children] == [round(s.elapsed_ms * 1e6) for s in trace.steps]
        assert all(a.end_ns == b.start_ns for a, b in zip(children, children[1:]))
        assert root.start_ns <= children[0].start_ns and children[-1].end_ns <= root.end_ns


def test_the_jsonl_is_phoenix_span_json_with_plain_attribute_values(method_traces):
    lines = spans_jsonl([s for t in method_traces for s in trace_spans(t)]).splitlines()
    assert len(lines) == sum(len(t.steps) + 1 for t in method_traces)
    for line in lines:
        span = json.loads(line)
        assert set(span) == PHOENIX_KEYS and set(span["context"]) == {"trace_id", "span_id"}
        assert span["status_code"] in ("OK", "ERROR")
        assert datetime.fromisoformat(span["start_time"]) <= datetime.fromisoformat(span["end_time"])
        assert span["attributes"]["openinference.span.kind"] == span["span_kind"]
        assert all(isinstance(v, (str, int, float, bool)) for v in span["attributes"].values())


def test_retrieval_hits_become_retrieval_documents(make_trace):
    step = RetrievalStep(iteration=1, title="Top 2", query="who wrote it", retriever="bm25", hits=(_hit(1), _hit(2)),
                         elapsed_ms=3.0)
    span = trace_spans(make_trace(step))[1]
    a = span.attributes
    assert (span.kind, a["input.value"]) == ("RETRIEVER", "who wrote it")
    assert [a[f"retrieval.documents.{n}.document.id"] for n in (0, 1)] == ["d1#0", "d2#0"]
    assert [a[f"retrieval.documents.{n}.document.content"] for n in (0, 1)] == ["text 1", "text 2"]
    assert [a[f"retrieval.documents.{n}.document.score"] for n in (0, 1)] == [1.0, 0.5]
    assert json.loads(a["retrieval.documents.1.document.metadata"]) == {
        "doc_id": "d2", "title": "Doc 2", "rank": 2, "retriever": "bm25", "provenance": "question"}
    assert "retrieval.documents.2.document.id" not in a


def test_matched_rules_are_the_documents_of_a_retriever_span(make_trace):
    rule = RuleMatch(id="r1", text="born_in(X,Y) <= lived_in(X,Y)", head="born_in", body=("lived_in",),
                     confidence=0.8, support=4, similarity=0.71)
    span = trace_spans(make_trace(RulesMatchedStep(rules=(rule,), elapsed_ms=1.0)))[1]
    a = span.attributes
    assert span.kind == "RETRIEVER" and a["input.value"] == "Who wrote the notes?"
    assert (a["retrieval.documents.0.document.id"], a["retrieval.documents.0.document.score"]) == ("r1", 0.71)
    assert json.loads(a["retrieval.documents.0.document.metadata"])["body"] == ["lived_in"]


def test_an_llm_call_carries_its_messages_model_and_token_counts(make_trace):
    prompt = render_messages([Message("system", "Answer briefly."), Message("user", "Who wrote the notes?")])
    call = LlmCallStep(title="reader call", role="reader", prompt=prompt, output="Ada Lovelace", tokens_in=12,
                       tokens_out=3, latency_ms=40.0, backend="hf: tiny-llama", elapsed_ms=41.0)
    span = trace_spans(make_trace(call))[1]
    a = span.attributes
    assert span.kind == "LLM" and a["llm.model_name"] == "tiny-llama"
    assert [(a[f"llm.input_messages.{n}.message.role"], a[f"llm.input_messages.{n}.message.content"])
            for n in (0, 1)] == [("system", "Answer briefly."), ("user", "Who wrote the notes?")]
    assert (a["llm.output_messages.0.message.role"], a["llm.output_messages.0.message.content"]) == \
        ("assistant", "Ada Lovelace")
    assert (a["input.value"], a["output.value"]) == (prompt, "Ada Lovelace")
    assert (a["llm.token_count.prompt"], a["llm.token_count.completion"], a["llm.token_count.total"]) == (12, 3, 15)


def test_an_llm_call_without_messages_or_counts_is_one_user_message_and_no_counts(make_trace):
    call = LlmCallStep(title="R2AG generation", role="r2ag", prompt="raw prompt text", output="x", elapsed_ms=1.0)
    a = trace_spans(make_trace(call))[1].attributes
    assert (a["llm.input_messages.0.message.role"], a["llm.input_messages.0.message.content"]) == \
        ("user", "raw prompt text")
    assert "llm.input_messages.1.message.role" not in a
    assert not any(key.startswith("llm.token_count") for key in a)


def test_a_calculation_is_a_calculator_tool_span(make_trace):
    span = trace_spans(make_trace(CalculationStep(expression="2026 - 1815", result=211.0, elapsed_ms=1.0)))[1]
    a = span.attributes
    assert span.kind == "TOOL" and a["tool.name"] == "calculator"
    assert json.loads(a["tool.parameters"]) == {"expression": "2026 - 1815"}
    assert (a["input.value"], a["output.value"]) == ("2026 - 1815", "211.0")


def test_error_steps_are_error_spans_and_a_fatal_one_fails_the_run(make_trace):
    soft = ErrorStep(title="reader fell back", message="unparsable output", elapsed_ms=1.0)
    hard = ErrorStep(title="Run failed", message="ValueError: boom", recoverable=False, elapsed_ms=2.0)
    root, first = trace_spans(make_trace(soft))
    assert (first.status, first.status_message, root.status) == ("ERROR", "unparsable output", "OK")
    root, _, second = trace_spans(make_trace(soft, hard))
    assert (second.status, root.status, root.status_message) == ("ERROR", "ERROR", "ValueError: boom")


def test_other_kinds_are_chain_spans_with_their_payload_as_json(make_trace):
    decision = DecisionStep(iteration=2, title="Enough", action="[SUFFICIENT]", detail="all facts found",
                            elapsed_ms=1.0)
    unknown = UnknownStep(title="future", original_kind="future_kind", data={"x": [1, 2]}, elapsed_ms=2.0)
    spans = trace_spans(make_trace(decision, unknown))
    assert [s.kind for s in spans[1:]] == ["CHAIN", "CHAIN"]
    assert json.loads(spans[1].attributes["output.value"]) == {"action": "[SUFFICIENT]", "detail": "all facts found"}
    assert spans[1].attributes["output.mime_type"] == "application/json"
    assert json.loads(spans[1].attributes["metadata"])["iteration"] == 2
    assert json.loads(spans[2].attributes["output.value"]) == {"x": [1, 2]}
    assert json.loads(spans[2].attributes["metadata"])["kind"] == "future_kind"


def test_ids_are_the_same_on_every_export_and_differ_between_runs(make_trace):
    steps = (DecisionStep(action="a", elapsed_ms=1.0), DecisionStep(action="b", elapsed_ms=2.0))
    first, again, other = (trace_spans(make_trace(*steps, id=i)) for i in ("t1", "t1", "t2"))
    ids = [[(s.trace_id, s.span_id, s.parent_id) for s in spans] for spans in (first, again)]
    assert ids[0] == ids[1]
    assert spans_jsonl(first) == spans_jsonl(again)
    assert first[0].trace_id != other[0].trace_id
    assert not {s.span_id for s in first} & {s.span_id for s in other}


def test_steps_are_timed_from_started_and_their_stamps(make_trace):
    steps = (DecisionStep(action="a", elapsed_ms=1.5), DecisionStep(action="b", elapsed_ms=4.0))
    root, a, b = trace_spans(make_trace(*steps))
    assert root.start_ns == STARTED_NS
    assert [(a.start_ns, a.end_ns), (b.start_ns, b.end_ns)] == \
        [(STARTED_NS, STARTED_NS + 1_500_000), (STARTED_NS + 1_500_000, STARTED_NS + 4_000_000)]
    assert root.end_ns == STARTED_NS + 4_000_000


@pytest.mark.parametrize("stamps", [(0.0, 0.0, 0.0), (5.0, 2.0, 9.0)], ids=["unstamped", "backwards"])
def test_a_trace_without_usable_stamps_gets_synthesised_times_in_step_order(make_trace, stamps):
    root, *children = trace_spans(make_trace(*(DecisionStep(action=str(s), elapsed_ms=s) for s in stamps)))
    assert [(c.start_ns - root.start_ns, c.end_ns - root.start_ns) for c in children] == \
        [(i * SYNTHETIC_STEP_NS, (i + 1) * SYNTHETIC_STEP_NS) for i in range(3)]
    assert root.end_ns >= children[-1].end_ns
    assert json.loads(root.attributes["metadata"])["timing"] == "synthesised"


def test_a_trace_without_a_readable_start_is_placed_at_the_epoch(make_trace):
    root, _ = trace_spans(make_trace(DecisionStep(action="a", elapsed_ms=1.0), started="yesterday"))
    assert root.start_ns == 0 and root.to_json()["start_time"] == "1970-01-01T00:00:00+00:00"


def test_a_session_id_is_set_only_when_given(make_trace):
    trace = make_trace(DecisionStep(action="a", elapsed_ms=1.0))
    assert trace_spans(trace, session="eval-7")[0].attributes["session.id"] == "eval-7"
    assert "session.id" not in trace_spans(trace)[0].attributes
