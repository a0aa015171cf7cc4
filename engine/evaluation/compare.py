"""Comparing methods: chunks in common between traces, the question sample an evaluation asks, and metric tables."""

from __future__ import annotations

import csv
import io
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from typing import Any

from engine.evaluation.runner import QuestionResult
from engine.knowledge.records import Question
from engine.trace import RetrievalStep, Trace

OVERALL = "overall"


@dataclass(frozen=True)
class Overlap:
    """Pairwise overlap of the distinct documents each method retrieved (rows and columns: `methods`)."""

    methods: tuple[str, ...]
    docs: tuple[tuple[str, ...], ...]     # distinct doc ids per method, in first-retrieved order
    common: tuple[tuple[int, ...], ...]   # |A ∩ B|
    union: tuple[tuple[int, ...], ...]    # |A ∪ B|
    share: tuple[tuple[float, ...], ...]  # |A ∩ B| / |A ∪ B|; 0.0 when neither retrieved anything


def retrieved_docs(trace: Trace) -> tuple[str, ...]:
    """Distinct doc ids over every retrieval step of a trace, in the order they first came back."""
    hits = (hit.doc_id for step in trace.steps if isinstance(step, RetrievalStep) for hit in step.hits)
    return tuple(dict.fromkeys(hits))


def overlap(docs_by_method: Mapping[str, Sequence[str]]) -> Overlap:
    """Jaccard overlap: symmetric and 1.0 only when two methods read exactly the same documents,
    so a method that retrieves many documents does not look close to everything."""
    methods = tuple(docs_by_method)
    docs = tuple(tuple(dict.fromkeys(docs_by_method[m])) for m in methods)
    sets = [set(d) for d in docs]
    common = tuple(tuple(len(a & b) for b in sets) for a in sets)
    union = tuple(tuple(len(a | b) for b in sets) for a in sets)
    share = tuple(tuple(c / u if u else 0.0 for c, u in zip(crow, urow)) for crow, urow in zip(common, union))
    return Overlap(methods=methods, docs=docs, common=common, union=union, share=share)


def trace_overlap(traces: Sequence[Trace]) -> Overlap:
    """The overlap of traces of one question, labelled by method id (one trace per method)."""
    return overlap({trace.method: retrieved_docs(trace) for trace in traces})


def answer_evidence(trace: Trace) -> set[str]:
    """The documents a trace's answer was read from (none when it has no answer)."""
    return set(trace.answer.evidence) if trace.answer else set()


def shared_evidence(traces: Sequence[Trace]) -> tuple[int, ...]:
    """Per trace, how many of its evidence documents at least one other trace also answered from
    (one trace per method)."""
    evidence = [answer_evidence(t) for t in traces]
    traces_per_doc = Counter(doc for docs in evidence for doc in docs)
    return tuple(sum(traces_per_doc[doc] > 1 for doc in docs) for docs in evidence)


def metric_rows(report: Mapping[str, Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Flatten `summarise` output: one row per method × (overall, then each question type)."""
    rows: list[dict[str, Any]] = []
    for method, parts in report.items():
        rows.append({"method": method, "scope": OVERALL, **parts["overall"]})
        for qtype, metrics in parts.get("by_type", {}).items():
            rows.append({"method": method, "scope": qtype, **metrics})
    return rows


def results_csv(results: Sequence[QuestionResult]) -> str:
    """The per-question results as CSV text, the columns of `QuestionResult` (as `write_report` writes)."""
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=list(QuestionResult.__dataclass_fields__), lineterminator="\n")
    writer.writeheader()
    writer.writerows(asdict(r) for r in results)
    return out.getvalue()


def pick_questions(questions: Sequence[Question], types: Sequence[str], limit: int) -> list[Question]:
    """At most `limit` questions of the chosen types, taken in turn from each type (in pack order), so a
    small run still covers every type instead of only the type the pack happens to list first."""
    queues = {t: [q for q in questions if q.type == t] for t in types}
    picked: list[Question] = []
    while len(picked) < limit and any(queues.values()):
        for queue in queues.values():
            if queue and len(picked) < limit:
                picked.append(queue.pop(0))
    return picked
