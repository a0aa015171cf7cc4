"""Traces as OpenInference spans, so a run opens in Arize Phoenix or any OpenTelemetry backend (issue 18).

One trace is one CHAIN span for the run with every step a child of it: `retrieval` and
`rules_matched` are RETRIEVER spans (hits and rules as `retrieval.documents`), `llm_call` is LLM,
`calculation` is TOOL, and every other kind (one added later included) is CHAIN with its payload as
JSON output. Attribute names are those of the OpenInference semantic conventions
(openinference-semantic-conventions, `SpanAttributes`), flattened to dotted keys as OpenTelemetry
attributes must be.

Ids come from the trace id, never from chance: exporting a run twice gives the same span ids, so a
backend that already holds it recognises the spans instead of showing the run twice.

Timestamps are the run's own where it has them: the runner stamps each step's `elapsed_ms` with the
run clock when the step arrived (engine.runner), so step i runs from step i-1's stamp to its own,
counted from the trace's `started`. Traces whose stamps are all zero or go backwards (built by hand,
edited) get synthesised ones: step i lasts 1 ms from i ms. The root's metadata says which (`timing`).
A trace without a readable `started` is placed at the Unix epoch, so its export stays reproducible.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Any

from engine.trace import (
    AnswerStep,
    CalculationStep,
    ErrorStep,
    LlmCallStep,
    RetrievalStep,
    RulesMatchedStep,
    Step,
    Trace,
    saved_kind,
    step_payload,
)

AttributeValue = str | int | float | bool
Attributes = dict[str, AttributeValue]

TEXT = "text/plain"
JSON = "application/json"
SYNTHETIC_STEP_NS = 1_000_000  # 1 ms per step when a trace carries no usable stamps
_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)
# engine.tools.llm_call.render_messages writes each message as "[role]\ncontent", blank-line separated
_ROLE_HEAD = re.compile(r"(?:\A|\n\n)\[(system|user|assistant)\]\n")


@dataclass(frozen=True)
class Span:
    """One OpenInference span; ids are lower-case hex (32 digits for the trace, 16 for a span)."""

    name: str
    trace_id: str
    span_id: str
    parent_id: str | None
    kind: str  # openinference.span.kind: CHAIN, RETRIEVER, LLM, TOOL
    start_ns: int  # Unix time, nanoseconds
    end_ns: int
    attributes: Attributes = field(default_factory=dict)
    status: str = "OK"  # OK or ERROR
    status_message: str = ""

    def to_json(self) -> dict[str, Any]:
        """Phoenix's span JSON (phoenix.trace.span_json_encoder): exactly the keys its JSONL decoder reads."""
        return {"name": self.name, "context": {"trace_id": self.trace_id, "span_id": self.span_id},
                "span_kind": self.kind, "parent_id": self.parent_id, "start_time": _iso(self.start_ns),
                "end_time": _iso(self.end_ns), "status_code": self.status, "status_message": self.status_message,
                "attributes": dict(self.attributes), "events": [], "conversation": None}


def trace_spans(trace: Trace, session: str = "") -> tuple[Span, ...]:
    """The run's CHAIN span first, then one child span per step in step order."""
    trace_id, root_id = span_ids(trace.id)
    origin = _started_ns(trace.started)
    windows, timing = _step_windows(trace.steps)
    children = tuple(_step_span(trace, i, step, origin + start, origin + end, trace_id, root_id)
                     for i, (step, (start, end)) in enumerate(zip(trace.steps, windows)))
    run_end = max([round(trace.totals.latency_ms * 1e6), *(end for _, end in windows)])
    fatal = next((s for s in trace.steps if isinstance(s, ErrorStep) and not s.recoverable), None)
    root = Span(name=trace.method, trace_id=trace_id, span_id=root_id, parent_id=None, kind="CHAIN",
                start_ns=origin, end_ns=origin + run_end, attributes=_run_attributes(trace, session, timing),
                status="ERROR" if fatal else "OK", status_message=fatal.message if fatal else "")
    return (root, *children)


def spans_jsonl(spans: Sequence[Span]) -> str:
    """One span JSON per line, as Phoenix's `spans_to_jsonl` writes them (a final newline added)."""
    return "".join(json.dumps(span.to_json(), ensure_ascii=False) + "\n" for span in spans)


def span_ids(trace_id: str, step: int | None = None) -> tuple[str, str]:
    """(OpenTelemetry trace id, span id) of the run (`step` None) or of its step number `step`."""
    part = "run" if step is None else f"step {step}"
    return _hex(trace_id, "trace", 32), _hex(trace_id, part, 16)


def _hex(trace_id: str, part: str, digits: int) -> str:
    return hashlib.sha256(f"ragscope\0{trace_id}\0{part}".encode()).hexdigest()[:digits]


# ---- time ----------------------------------------------------------------------------------------


def _started_ns(started: str) -> int:
    """`started` as Unix nanoseconds (a zone-less time is UTC); 0 when it is empty or unreadable."""
    try:
        moment = datetime.fromisoformat(started)
    except ValueError:
        return 0
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    delta = moment - _EPOCH
    return (delta.days * 86_400 + delta.seconds) * 10**9 + delta.microseconds * 1000


def _step_windows(steps: Sequence[Step]) -> tuple[list[tuple[int, int]], str]:
    """Each step's (start, end) in ns after the run began, and "measured" or "synthesised"."""
    stamps = [round(s.elapsed_ms * 1e6) for s in steps]
    if stamps and stamps[-1] > 0 and all(a <= b for a, b in zip([0, *stamps], stamps)):
        return list(zip([0, *stamps], stamps)), "measured"
    return [(i * SYNTHETIC_STEP_NS, (i + 1) * SYNTHETIC_STEP_NS) for i in range(len(steps))], "synthesised"


def _iso(ns: int) -> str:
    return (_EPOCH + timedelta(microseconds=ns // 1000)).isoformat()


# ---- attributes ----------------------------------------------------------------------------------


def _run_attributes(trace: Trace, session: str, timing: str) -> Attributes:
    answer = trace.answer
    meta = {"ragscope.trace_id": trace.id, "method": trace.method, "backend": trace.backend,
            "model": trace.model, "pack": trace.pack, "question_id": trace.question_id, "params": trace.params,
            "totals": {"latency_ms": trace.totals.latency_ms, "llm_calls": trace.totals.llm_calls,
                       "tokens_in": trace.totals.tokens_in, "tokens_out": trace.totals.tokens_out},
            "schema_version": trace.schema_version, "timing": timing}
    attributes = {"openinference.span.kind": "CHAIN", **_io(trace.question, answer.text if answer else None),
                  "metadata": _json(meta)}
    return attributes | ({"session.id": session} if session else {})


def _step_span(trace: Trace, index: int, step: Step, start: int, end: int, trace_id: str, parent: str) -> Span:
    kind, describe = _KINDS.get(type(step), ("CHAIN", _payload))
    error = isinstance(step, ErrorStep)
    attributes = {"openinference.span.kind": kind, **describe(step, trace)}
    return Span(name=step.title or saved_kind(step), trace_id=trace_id, span_id=span_ids(trace.id, index)[1],
                parent_id=parent, kind=kind, start_ns=start, end_ns=end, attributes=attributes,
                status="ERROR" if error else "OK", status_message=step.message if error else "")


def _retrieval(step: RetrievalStep, trace: Trace) -> Attributes:
    documents = [(h.chunk_id or h.doc_id, h.text, h.score,
                  {"doc_id": h.doc_id, "title": h.title, "rank": h.rank, "retriever": h.retriever,
                   "provenance": h.provenance}) for h in step.hits]
    return {**_io(step.query, None), **_documents(documents), "metadata": _metadata(step, retriever=step.retriever)}


def _rules(step: RulesMatchedStep, trace: Trace) -> Attributes:
    """RuleRAG retrieves rules by similarity to the question: they are the documents of this retrieval."""
    documents = [(r.id, r.text, r.similarity, {"head": r.head, "body": list(r.body), "confidence": r.confidence,
                                               "support": r.support}) for r in step.rules]
    return {**_io(trace.question, None), **_documents(documents), "metadata": _metadata(step)}


def _llm_call(step: LlmCallStep, trace: Trace) -> Attributes:
    attributes: Attributes = {"llm.model_name": trace.model, **_io(step.prompt, step.output)}
    for n, (role, content) in enumerate(_messages(step.prompt)):
        attributes |= {f"llm.input_messages.{n}.message.role": role, f"llm.input_messages.{n}.message.content": content}
    attributes |= {"llm.output_messages.0.message.role": "assistant",
                   "llm.output_messages.0.message.content": step.output}
    if step.tokens_in or step.tokens_out:  # both 0: the backend did not count them
        attributes |= {"llm.token_count.prompt": step.tokens_in, "llm.token_count.completion": step.tokens_out,
                       "llm.token_count.total": step.tokens_in + step.tokens_out}
    return attributes | {"metadata": _metadata(step, role=step.role, backend=step.backend, latency_ms=step.latency_ms)}


def _calculation(step: CalculationStep, trace: Trace) -> Attributes:
    output = step.error if step.result is None else repr(step.result)
    return {"tool.name": "calculator", "tool.parameters": _json({"expression": step.expression}),
            **_io(step.expression, output),
            "metadata": _metadata(step, status=step.status, source=step.source, error=step.error)}


def _answer(step: AnswerStep, trace: Trace) -> Attributes:
    return {**_io(trace.question, step.text),
            "metadata": _metadata(step, citations=list(step.citations), confidence=step.confidence,
                                  refused=step.refused, evidence=list(step.evidence), backend=step.backend,
                                  model=step.model)}


def _error(step: ErrorStep, trace: Trace) -> Attributes:
    return {**_io(None, step.message), "metadata": _metadata(step, recoverable=step.recoverable)}


def _payload(step: Step, trace: Trace) -> Attributes:
    """Kinds no OpenInference attribute describes (decisions, graph deltas, features, any new kind): the payload
    as JSON, so a kind added to engine.trace exports with no edit here."""
    return {"output.value": _json(step_payload(step)), "output.mime_type": JSON, "metadata": _metadata(step)}


_KINDS: dict[type[Step], tuple[str, Callable[[Any, Trace], Attributes]]] = {
    RetrievalStep: ("RETRIEVER", _retrieval),
    RulesMatchedStep: ("RETRIEVER", _rules),
    LlmCallStep: ("LLM", _llm_call),
    CalculationStep: ("TOOL", _calculation),
    AnswerStep: ("CHAIN", _answer),
    ErrorStep: ("CHAIN", _error),
}


def _io(given: str | None, produced: str | None) -> Attributes:
    """`input.*` / `output.*` for plain text; None leaves that side out."""
    attributes: Attributes = {}
    if given is not None:
        attributes |= {"input.value": given, "input.mime_type": TEXT}
    if produced is not None:
        attributes |= {"output.value": produced, "output.mime_type": TEXT}
    return attributes


def _documents(documents: Sequence[tuple[str, str, float | None, dict[str, Any]]]) -> Attributes:
    attributes: Attributes = {}
    for n, (doc_id, content, score, meta) in enumerate(documents):
        prefix = f"retrieval.documents.{n}.document"
        # a user's LangChain retriever may give no score (issue 25): the attribute is left out, OTLP has no null
        scored = {f"{prefix}.score": score} if score is not None else {}
        attributes |= {f"{prefix}.id": doc_id, f"{prefix}.content": content, **scored,
                       f"{prefix}.metadata": _json(meta)}
    return attributes


def _messages(prompt: str) -> list[tuple[str, str]]:
    """The chat messages a rendered prompt came from; one user message when it was not rendered from messages.

    A document quoted in the prompt that itself holds a blank line then `[user]` on a line of its own
    would split there: the messages shown are then cut differently, the text is all still there.
    """
    heads = list(_ROLE_HEAD.finditer(prompt))
    if not heads or heads[0].start() != 0:
        return [("user", prompt)]
    ends = [h.start() for h in heads[1:]] + [len(prompt)]
    return [(head.group(1), prompt[head.end():end]) for head, end in zip(heads, ends)]


def _metadata(step: Step, **extra: Any) -> str:
    return _json({"kind": saved_kind(step), "iteration": step.iteration, "elapsed_ms": step.elapsed_ms, **extra})


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)
