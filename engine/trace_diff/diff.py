"""`diff_traces`: two traces → a TraceDiff (settings, steps, chunks, final graph, answer)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from engine.codec import to_jsonable
from engine.errors import RagscopeError
from engine.trace import GraphDeltaStep, RetrievalStep, Step, Trace
from engine.trace_diff.records import (
    MISSING,
    AnswerSide,
    ChunkRow,
    FieldDiff,
    GraphDiff,
    GraphEdge,
    GraphNode,
    RoundGraph,
    TraceDiff,
    shown,
)
from engine.trace_diff.steps import align_steps
from engine.trace_graph.fold import GraphView, ViewEdge, edge_key, graph_at


def diff_traces(a: Trace, b: Trace) -> TraceDiff:
    """What differs between run A and run B (A is the reference: "added" means in B and not in A)."""
    rounds_a, rounds_b = {s.iteration for s in a.steps}, {s.iteration for s in b.steps}
    answer_a, answer_b = answer_side(a), answer_side(b)
    return TraceDiff(
        a_id=a.id, b_id=b.id, same_question=_same_text(a.question, b.question),
        header=_header(a, b), steps=align_steps(a.steps, b.steps),
        rounds_only_a=tuple(sorted(rounds_a - rounds_b)), rounds_only_b=tuple(sorted(rounds_b - rounds_a)),
        chunks=_chunks(a.steps, b.steps), graph=_graph(a, b),
        answer_a=answer_a, answer_b=answer_b, answer_changes=_answer_changes(answer_a, answer_b))


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


def _header(a: Trace, b: Trace) -> tuple[FieldDiff, ...]:
    basics = [FieldDiff(name, shown(getattr(a, name)), shown(getattr(b, name)))
              for name in ("question", "method", "backend", "model", "pack")]
    settings_a, settings_b = _asked_with(a), _asked_with(b)
    names = dict.fromkeys([*settings_a, *settings_b])
    return (*basics, *(FieldDiff(n, shown(settings_a.get(n)), shown(settings_b.get(n))) for n in names))


def _asked_with(trace: Trace) -> dict[str, Any]:
    """What the run was asked with; an edited or imported trace whose policy values no longer check is shown as
    saved rather than refused — a diff is for looking, not for running."""
    try:
        return trace.settings()
    except RagscopeError:
        return {**trace.params, **(to_jsonable(trace.policy) if trace.policy is not None else {})}




def _best_hits(steps: Iterable[Step]) -> dict[str, tuple[str, str, int]]:
    """chunk id → (doc id, title, best rank) over every retrieval step, in the order chunks first came back."""
    best: dict[str, tuple[str, str, int]] = {}
    for step in steps:
        if isinstance(step, RetrievalStep):
            for hit in step.hits:
                old = best.get(hit.chunk_id)
                if old is None or hit.rank < old[2]:
                    best[hit.chunk_id] = (hit.doc_id, hit.title, hit.rank)
    return best


def _chunks(steps_a: Sequence[Step], steps_b: Sequence[Step]) -> tuple[ChunkRow, ...]:
    hits_a, hits_b = _best_hits(steps_a), _best_hits(steps_b)
    rows = []
    for chunk_id in dict.fromkeys([*hits_a, *hits_b]):
        doc_id, title, _ = hits_a.get(chunk_id) or hits_b[chunk_id]
        rows.append(ChunkRow(chunk_id, doc_id, title, _rank(hits_a, chunk_id), _rank(hits_b, chunk_id)))
    return tuple(rows)


def _rank(hits: dict[str, tuple[str, str, int]], chunk_id: str) -> int | None:
    return hits[chunk_id][2] if chunk_id in hits else None


def _edge(edge: ViewEdge, labels: dict[str, str]) -> GraphEdge:
    return GraphEdge(edge.source, edge.relation, edge.target,
                     f"{labels.get(edge.source, edge.source)} –{edge.relation}→ {labels.get(edge.target, edge.target)}")


def _graph(a: Trace, b: Trace) -> GraphDiff:
    view_a, view_b = graph_at(a.steps, a.iterations), graph_at(b.steps, b.iterations)
    nodes_a, nodes_b = {n.id: n for n in view_a.nodes}, {n.id: n for n in view_b.nodes}
    edges_a, edges_b = {edge_key(e): e for e in view_a.edges}, {edge_key(e): e for e in view_b.edges}
    labels = {**{i: n.label for i, n in nodes_a.items()}, **{i: n.label for i, n in nodes_b.items()}}
    both = [i for i in nodes_a if i in nodes_b]
    return GraphDiff(
        nodes_added=tuple(GraphNode(i, n.label) for i, n in nodes_b.items() if i not in nodes_a),
        nodes_removed=tuple(GraphNode(i, n.label) for i, n in nodes_a.items() if i not in nodes_b),
        edges_added=tuple(_edge(e, labels) for k, e in edges_b.items() if k not in edges_a),
        edges_removed=tuple(_edge(e, labels) for k, e in edges_a.items() if k not in edges_b),
        pruned_only_in_a=tuple(GraphNode(i, labels[i]) for i in both if nodes_a[i].pruned and not nodes_b[i].pruned),
        pruned_only_in_b=tuple(GraphNode(i, labels[i]) for i in both if nodes_b[i].pruned and not nodes_a[i].pruned),
        rounds=_graph_rounds(a, b))


def _graph_rounds(a: Trace, b: Trace) -> tuple[RoundGraph, ...]:
    """Per round r, A's graph as of r against B's as of r (only when either run has a graph at all)."""
    if not any(isinstance(s, GraphDeltaStep) for s in (*a.steps, *b.steps)):
        return ()

    def ids(view: GraphView) -> tuple[set[str], set[tuple[str, str, str]]]:
        return {n.id for n in view.nodes}, {edge_key(e) for e in view.edges}

    rounds = []
    for r in range(max(a.iterations, b.iterations) + 1):
        (na, ea), (nb, eb) = ids(graph_at(a.steps, r)), ids(graph_at(b.steps, r))
        rounds.append(RoundGraph(r, len(nb - na), len(na - nb), len(eb - ea), len(ea - eb)))
    return tuple(rounds)


def answer_side(trace: Trace) -> AnswerSide:
    answer, totals = trace.answer, trace.totals
    return AnswerSide(
        answered=answer is not None, text=answer.text if answer else "", refused=bool(answer and answer.refused),
        confidence=answer.confidence if answer else 0.0, guess=answer.guess if answer else "",
        evidence=answer.evidence if answer else (), latency_ms=totals.latency_ms, llm_calls=totals.llm_calls,
        tokens_in=totals.tokens_in, tokens_out=totals.tokens_out)


def _answer_changes(a: AnswerSide, b: AnswerSide) -> tuple[FieldDiff, ...]:
    only_a = [d for d in a.evidence if d not in b.evidence]
    only_b = [d for d in b.evidence if d not in a.evidence]
    values = [("answered", a.answered, b.answered), ("text", a.text, b.text), ("refused", a.refused, b.refused),
              ("confidence", f"{a.confidence:.3f}", f"{b.confidence:.3f}"), ("guess", a.guess, b.guess),
              ("evidence only in one run", ", ".join(only_a) or MISSING, ", ".join(only_b) or MISSING),
              ("LLM calls", a.llm_calls, b.llm_calls), ("tokens in", a.tokens_in, b.tokens_in),
              ("tokens out", a.tokens_out, b.tokens_out)]
    return tuple(FieldDiff(name, shown(x), shown(y)) for name, x, y in values if x != y)
