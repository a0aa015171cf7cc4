"""Steps aligned by round and kind, and what changed in each pair, said per kind where it matters.

Alignment guesses at nothing: the n-th step of a kind in a round of A pairs with the n-th step of that kind in the
same round of B; a step without a partner stands alone. A kind without a summary of its own compares by its payload
(`engine.trace.step_payload`), so a new step kind is diffed the day it is added.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import fields
from typing import Any

from engine.trace import (
    AnswerStep,
    AttentionStep,
    DecisionStep,
    ErrorStep,
    GraphDeltaStep,
    Hit,
    LlmCallStep,
    RetrievalStep,
    RulesMatchedStep,
    Step,
    saved_kind,
    step_payload,
)
from engine.trace_diff.records import TIMING_FIELDS, StepPair, clip, shown


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
                pairs.append(StepPair(iteration, kind, n + 1, _label(step_a), _label(step_b),
                                      _step_changes(step_a, step_b)))
    return tuple(pairs)


def _label(step: Step | None) -> str | None:
    """What a step is called; an attention map without a title (a model's call maps) by its name."""
    if step is None:
        return None
    return step.title or (step.name if isinstance(step, AttentionStep) else "")


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
    return clip(body[0].strip()) if body else ""


def _other_fields(a: Step, b: Step) -> list[str]:
    """A kind without a summary of its own (or one whose summary saw no change): which payload fields differ."""
    pa, pb = step_payload(a), step_payload(b)
    names = [n for n in dict.fromkeys([*pa, *pb]) if n not in TIMING_FIELDS and pa.get(n) != pb.get(n)]
    return [f"changed: {', '.join(names)}"] if names else []


def _moved(name: str, a: object, b: object) -> list[str]:
    """"name: 'old' → 'new'" (text quoted, numbers and flags not), or nothing when equal."""
    def said(value: object) -> str:
        return repr(clip(value, 60)) if isinstance(value, str) else shown(value)

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
