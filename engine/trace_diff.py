"""What changed between two saved runs: settings, steps aligned by round and kind, chunks, graph, answer (issue 28).

Researchers rerun a question with another method, parameter, model or pack version and ask what moved. Steps are
aligned without guessing at meaning: the n-th step of a kind in a round of A is paired with the n-th step of that
kind in the same round of B. Timings are shown but never counted as a difference — two runs of one setting differ
in them every time. `format_diff` writes the terminal text of `python -m engine diff`, `to_dict` its `--json`.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, fields
from typing import Any

from engine.app.runs import recorded_settings
from engine.codec import to_jsonable
from engine.errors import RagscopeError
from engine.graph.view import GraphView, ViewEdge, edge_key, graph_at
from engine.trace import (
    AnswerStep,
    DecisionStep,
    ErrorStep,
    GraphDeltaStep,
    Hit,
    LlmCallStep,
    RetrievalStep,
    RulesMatchedStep,
    Step,
    Trace,
    saved_kind,
    step_payload,
)

TIMING_FIELDS = frozenset({"latency_ms"})  # differ between two runs of one setting: shown, never a difference
MISSING = "—"  # a setting one run has and the other has not


# ---- the diff's records ---------------------------------------------------------------------------


@dataclass(frozen=True)
class FieldDiff:
    """One named value of each run, as text (MISSING when that run has none)."""

    name: str
    a: str
    b: str

    @property
    def same(self) -> bool:
        return self.a == self.b


@dataclass(frozen=True)
class StepPair:
    """The n-th step (1-based) of `kind` in round `iteration` of each run; None on the side that has no such step."""

    iteration: int
    kind: str
    n: int
    title_a: str | None
    title_b: str | None
    changes: tuple[str, ...] = ()  # what changed, one short line each; for an unpaired step what it did

    @property
    def side(self) -> str:
        """"both", "A" (only in A) or "B" (only in B)."""
        return "both" if self.title_a is not None and self.title_b is not None else \
            "A" if self.title_a is not None else "B"

    @property
    def changed(self) -> bool:
        return self.side != "both" or bool(self.changes)


@dataclass(frozen=True)
class ChunkRow:
    """A chunk either run retrieved, with its best (lowest) rank over all of that run's retrieval steps."""

    chunk_id: str
    doc_id: str
    title: str
    rank_a: int | None
    rank_b: int | None

    @property
    def side(self) -> str:
        return "both" if self.rank_a is not None and self.rank_b is not None else \
            "A" if self.rank_a is not None else "B"


@dataclass(frozen=True)
class GraphNode:
    id: str
    label: str


@dataclass(frozen=True)
class GraphEdge:
    source: str
    relation: str
    target: str
    label: str  # "source label –relation→ target label"


@dataclass(frozen=True)
class RoundGraph:
    """How the graph as of one round differs: counts of nodes and edges in B and not A (added) and back."""

    iteration: int
    nodes_added: int
    nodes_removed: int
    edges_added: int
    edges_removed: int

    @property
    def changed(self) -> bool:
        return any((self.nodes_added, self.nodes_removed, self.edges_added, self.edges_removed))


@dataclass(frozen=True)
class GraphDiff:
    """Each run's final graph (its deltas folded to its last round): added = in B not A, removed = in A not B."""

    nodes_added: tuple[GraphNode, ...] = ()
    nodes_removed: tuple[GraphNode, ...] = ()
    edges_added: tuple[GraphEdge, ...] = ()
    edges_removed: tuple[GraphEdge, ...] = ()
    pruned_only_in_a: tuple[GraphNode, ...] = ()  # in both graphs, pruned in A's only
    pruned_only_in_b: tuple[GraphNode, ...] = ()
    rounds: tuple[RoundGraph, ...] = ()

    @property
    def changed(self) -> bool:
        return any((self.nodes_added, self.nodes_removed, self.edges_added, self.edges_removed,
                    self.pruned_only_in_a, self.pruned_only_in_b))


@dataclass(frozen=True)
class AnswerSide:
    """One run's outcome, for the side-by-side view; `answered` is False for a run that ended without an answer."""

    answered: bool
    text: str
    refused: bool
    confidence: float
    guess: str
    evidence: tuple[str, ...]
    latency_ms: float
    llm_calls: int
    tokens_in: int
    tokens_out: int


@dataclass(frozen=True)
class TraceDiff:
    a_id: str
    b_id: str
    same_question: bool
    header: tuple[FieldDiff, ...]  # question, method, backend, model, pack, then every parameter of either run
    steps: tuple[StepPair, ...]
    rounds_only_a: tuple[int, ...]
    rounds_only_b: tuple[int, ...]
    chunks: tuple[ChunkRow, ...]
    graph: GraphDiff
    answer_a: AnswerSide
    answer_b: AnswerSide
    answer_changes: tuple[FieldDiff, ...]  # only the values that differ (latency never: see the module)

    @property
    def header_changes(self) -> tuple[FieldDiff, ...]:
        return tuple(f for f in self.header if not f.same)

    @property
    def identical(self) -> bool:
        """Nothing but timings differs."""
        return not (self.header_changes or any(p.changed for p in self.steps) or self.answer_changes
                    or any(c.side != "both" or c.rank_a != c.rank_b for c in self.chunks) or self.graph.changed)

    def to_dict(self) -> dict[str, Any]:
        """The `--json` form: every record as JSON values, and `identical`."""
        return {**to_jsonable(self), "identical": self.identical}


# ---- computing it -----------------------------------------------------------------------------------


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


def _shown(value: Any) -> str:
    if value is None:
        return MISSING
    return value if isinstance(value, str) else json.dumps(to_jsonable(value), ensure_ascii=False)


def _header(a: Trace, b: Trace) -> tuple[FieldDiff, ...]:
    basics = [FieldDiff(name, _shown(getattr(a, name)), _shown(getattr(b, name)))
              for name in ("question", "method", "backend", "model", "pack")]
    settings_a, settings_b = _asked_with(a), _asked_with(b)
    names = dict.fromkeys([*settings_a, *settings_b])
    return (*basics, *(FieldDiff(n, _shown(settings_a.get(n)), _shown(settings_b.get(n))) for n in names))


def _asked_with(trace: Trace) -> dict[str, Any]:
    """What the run was asked with; an edited or imported trace whose policy values no longer check is shown as
    saved rather than refused — a diff is for looking, not for running."""
    try:
        return recorded_settings(trace)
    except RagscopeError:
        return {**trace.params, **(to_jsonable(trace.policy) if trace.policy is not None else {})}


# ---- steps, aligned by round and kind -----------------------------------------------------------------


def align_steps(steps_a: Sequence[Step], steps_b: Sequence[Step]) -> tuple[StepPair, ...]:
    """Round by round; within a round, kinds in A's order with B's own kinds merged in where B has them; the
    n-th step of a kind pairs with the n-th of that kind in the other run, the rest stand alone."""
    groups_a, groups_b = _groups(steps_a), _groups(steps_b)
    pairs = []
    for iteration in sorted({i for i, _ in (*groups_a, *groups_b)}):
        kinds = _merged([k for i, k in groups_a if i == iteration], [k for i, k in groups_b if i == iteration])
        for kind in kinds:
            side_a, side_b = groups_a.get((iteration, kind), []), groups_b.get((iteration, kind), [])
            for n in range(max(len(side_a), len(side_b))):
                step_a = side_a[n] if n < len(side_a) else None
                step_b = side_b[n] if n < len(side_b) else None
                pairs.append(StepPair(iteration, kind, n + 1, step_a and step_a.title, step_b and step_b.title,
                                      _step_changes(step_a, step_b)))
    return tuple(pairs)


def _merged(order_a: list[str], order_b: list[str]) -> list[str]:
    """A's order, each kind only B has placed right after the kind it follows in B (first when none)."""
    merged = list(order_a)
    for position, kind in enumerate(order_b):
        if kind not in merged:
            before = next((k for k in reversed(order_b[:position]) if k in merged), None)
            merged.insert(0 if before is None else merged.index(before) + 1, kind)
    return merged


def _groups(steps: Iterable[Step]) -> dict[tuple[int, str], list[Step]]:
    groups: dict[tuple[int, str], list[Step]] = {}
    for step in steps:
        groups.setdefault((step.iteration, saved_kind(step)), []).append(step)
    return groups


def _step_changes(a: Step | None, b: Step | None) -> tuple[str, ...]:
    if a is None or b is None:
        return (_gist(a or b),)  # type: ignore[arg-type]  # one of the two is a step
    specific = _SUMMARIES.get(type(a))
    lines = specific(a, b) if specific and type(a) is type(b) else []
    return tuple(lines or _other_fields(a, b))


def _gist(step: Step) -> str:
    """One line saying what an unpaired step did."""
    from engine.textview import format_step

    body = format_step(step).split("\n")[1:2]
    return _clip(body[0].strip()) if body else ""


def _other_fields(a: Step, b: Step) -> list[str]:
    """A kind without a summary of its own (or one whose summary saw no change): which payload fields differ."""
    pa, pb = step_payload(a), step_payload(b)
    names = [n for n in dict.fromkeys([*pa, *pb]) if n not in TIMING_FIELDS and pa.get(n) != pb.get(n)]
    return [f"changed: {', '.join(names)}"] if names else []


def _clip(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"


def _moved(name: str, a: object, b: object) -> list[str]:
    """"name: 'old' → 'new'" (text quoted, numbers and flags not), or nothing when equal."""
    def said(value: object) -> str:
        return repr(_clip(value, 60)) if isinstance(value, str) else _shown(value)

    return [] if a == b else [f"{name}: {said(a)} → {said(b)}"]


def _only(what: str, ids_a: Sequence[str], ids_b: Sequence[str]) -> list[str]:
    """"hits: 1 only in A (c1); 2 only in B (c3, c4); 3 in both" — or nothing when both hold the same ids."""
    only_a = [i for i in dict.fromkeys(ids_a) if i not in set(ids_b)]
    only_b = [i for i in dict.fromkeys(ids_b) if i not in set(ids_a)]
    if not (only_a or only_b):
        return []
    parts = [f"{len(only_a)} only in A ({', '.join(only_a)})" if only_a else "",
             f"{len(only_b)} only in B ({', '.join(only_b)})" if only_b else "",
             f"{len(set(ids_a) & set(ids_b))} in both"]
    return [f"{what}: " + "; ".join(p for p in parts if p)]


def _retrieval(a: RetrievalStep, b: RetrievalStep) -> list[str]:
    ids_a, ids_b = [h.chunk_id for h in a.hits], [h.chunk_id for h in b.hits]
    hits = _only("hits", ids_a, ids_b) or (["same hits, ranked differently"] if ids_a != ids_b else
                                           _hit_fields(a.hits, b.hits))
    return [*_moved("query", a.query, b.query), *_moved("retriever", a.retriever, b.retriever), *hits]


def _hit_fields(hits_a: Sequence[Hit], hits_b: Sequence[Hit]) -> list[str]:
    """Same chunks in the same order: which of their other fields (score, provenance, text…) differ."""
    names = [f.name for f in fields(Hit) if any(getattr(x, f.name) != getattr(y, f.name)
                                                 for x, y in zip(hits_a, hits_b))]
    verb = "differs" if len(names) == 1 else "differ"
    return [f"same hits in the same order; their {', '.join(names)} {verb}"] if names else []


def _rules(a: RulesMatchedStep, b: RulesMatchedStep) -> list[str]:
    return _only("rules", [r.id for r in a.rules], [r.id for r in b.rules])


def _decision(a: DecisionStep, b: DecisionStep) -> list[str]:
    return [*_moved("action", a.action, b.action), *(["detail changed"] if a.detail != b.detail else [])]


def _llm_call(a: LlmCallStep, b: LlmCallStep) -> list[str]:
    same = (a.role, a.prompt, a.output, a.tokens_in, a.tokens_out) == (b.role, b.prompt, b.output, b.tokens_in,
                                                                       b.tokens_out)
    if same:
        return []
    def said(x: str, y: str) -> str:
        return "same" if x == y else "changed"

    return [*_moved("role", a.role, b.role), f"prompt {said(a.prompt, b.prompt)}, output {said(a.output, b.output)}",
            f"tokens in/out: A {a.tokens_in}/{a.tokens_out}, B {b.tokens_in}/{b.tokens_out}"]


def _graph_delta(a: GraphDeltaStep, b: GraphDeltaStep) -> list[str]:
    def counts(d: GraphDeltaStep) -> str:
        return (f"+{len(d.added_nodes)} nodes +{len(d.added_edges)} edges "
                f"−{len(d.pruned_nodes)} nodes −{len(d.pruned_edges)} edges")

    if counts(a) != counts(b):
        return [f"A {counts(a)}; B {counts(b)}"]
    return ["same counts, other nodes or edges"] if step_payload(a) != step_payload(b) else []


def _answer(a: AnswerStep, b: AnswerStep) -> list[str]:
    return [*_moved("text", a.text, b.text), *_moved("refused", a.refused, b.refused),
            *_moved("confidence", round(a.confidence, 3), round(b.confidence, 3))]


def _error(a: ErrorStep, b: ErrorStep) -> list[str]:
    return _moved("message", a.message, b.message)


_SUMMARIES: dict[type[Step], Callable[[Any, Any], list[str]]] = {
    RetrievalStep: _retrieval, RulesMatchedStep: _rules, DecisionStep: _decision, LlmCallStep: _llm_call,
    GraphDeltaStep: _graph_delta, AnswerStep: _answer, ErrorStep: _error,
}


# ---- chunks, graph, answer --------------------------------------------------------------------------------


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
    return tuple(FieldDiff(name, _shown(x), _shown(y)) for name, x, y in values if x != y)


# ---- terminal text --------------------------------------------------------------------------------------

_MARK = {"A": "-", "B": "+"}


def format_diff(diff: TraceDiff) -> str:
    """Plain text, stable line for line: "- " what only A has, "+ " what only B has, "~ " what both have but
    differently, "= " what is the same. The first line says whether the runs asked the same question."""
    return "\n".join([*_title(diff), "", *_settings(diff), "", *_answers(diff), "", *_steps(diff), "",
                      *_chunk_lines(diff), "", *_graph_lines(diff.graph), "",
                      "no differences but timings" if diff.identical else "the runs differ (see above)"])


def _title(diff: TraceDiff) -> list[str]:
    question = next(f for f in diff.header if f.name == "question")
    method = next(f for f in diff.header if f.name == "method")
    head = f"A {diff.a_id} ({method.a}) vs B {diff.b_id} ({method.b})"
    if diff.same_question:
        return [f"{head}: same question", f"question: {_clip(question.a, 200)}"]
    return [f"{head}: DIFFERENT questions", f"- question: {_clip(question.a, 200)}",
            f"+ question: {_clip(question.b, 200)}"]


def _settings(diff: TraceDiff) -> list[str]:
    changed = [f for f in diff.header_changes if f.name != "question"]
    if not changed:
        return ["settings: the same"]
    width = max(len(f.name) for f in changed)
    return ["settings (- A, + B)", *(line for f in changed
                                     for line in (f"  - {f.name:<{width}}  {_clip(f.a)}",
                                                  f"  + {f.name:<{width}}  {_clip(f.b)}"))]


def _answer_line(name: str, side: AnswerSide) -> list[str]:
    if not side.answered:
        return [f"  {name}  (no answer: the run stopped before answering)"]
    text = f"REFUSED · {side.text}" if side.refused else side.text
    facts = [f"confidence {side.confidence:.3f}", *([f"guess {_clip(side.guess, 40)}"] if side.guess else []),
             f"evidence {', '.join(side.evidence) or MISSING}", f"{side.llm_calls} LLM calls",
             f"{side.tokens_in}/{side.tokens_out} tokens", f"{side.latency_ms:.0f} ms"]
    return [f"  {name}  {_clip(text, 200)}", f"     {' · '.join(facts)}"]


def _answers(diff: TraceDiff) -> list[str]:
    changes = "; ".join(f"{f.name} (A {_clip(f.a, 40)}, B {_clip(f.b, 40)})" for f in diff.answer_changes)
    return ["answer", *_answer_line("A", diff.answer_a), *_answer_line("B", diff.answer_b),
            f"  differs: {changes}" if changes else "  the same (timings aside)"]


def _steps(diff: TraceDiff) -> list[str]:
    lines = ["steps, aligned by round and kind (= same, ~ changed, - only in A, + only in B)"]
    for pair in diff.steps:
        mark = _MARK.get(pair.side) or ("~" if pair.changes else "=")
        titles = dict.fromkeys(t for t in (pair.title_a, pair.title_b) if t is not None)
        lines.append(f"  {mark} [{pair.iteration}] {pair.kind} #{pair.n}  "
                     + " → ".join(_clip(t, 60) for t in titles))
        lines.extend(f"        {change}" for change in pair.changes if change)
    if not diff.steps:
        lines.append("  neither run has steps")
    for name, rounds in (("A", diff.rounds_only_a), ("B", diff.rounds_only_b)):
        if rounds:
            lines.append(f"  rounds only in {name}: {', '.join(map(str, rounds))}")
    return lines


def _chunk_lines(diff: TraceDiff) -> list[str]:
    if not diff.chunks:
        return ["chunks: neither run retrieved any"]
    lines = ["chunks, best rank in A / B (- only in A, + only in B, ~ ranked differently, = same rank)"]
    for row in diff.chunks:
        mark = _MARK.get(row.side) or ("=" if row.rank_a == row.rank_b else "~")
        ranks = f"{_shown(row.rank_a)} / {_shown(row.rank_b)}"
        lines.append(f"  {mark} {row.chunk_id}  doc {row.doc_id}  {_clip(row.title, 50)}  rank {ranks}")
    return lines


def _graph_lines(graph: GraphDiff) -> list[str]:
    if not graph.rounds:
        return ["graph: neither run built one"]
    if not graph.changed:
        return ["graph: the same final graph"]
    lines = ["graph, final (+ in B not A, - in A not B)",
             *(f"  + node {_node(n)}" for n in graph.nodes_added),
             *(f"  - node {_node(n)}" for n in graph.nodes_removed),
             *(f"  + edge {_clip(e.label, 100)}" for e in graph.edges_added),
             *(f"  - edge {_clip(e.label, 100)}" for e in graph.edges_removed),
             *(f"  pruned in A only: {_node(n)}" for n in graph.pruned_only_in_a),
             *(f"  pruned in B only: {_node(n)}" for n in graph.pruned_only_in_b)]
    lines.extend(f"  round {r.iteration}: +{r.nodes_added} −{r.nodes_removed} nodes, +{r.edges_added} "
                 f"−{r.edges_removed} edges" for r in graph.rounds if r.changed)
    return lines


def _node(node: GraphNode) -> str:
    label = _clip(node.label, 60)
    return label if node.label == node.id else f"{label} ({node.id})"
