"""The run diff's records (frozen, JSON via `TraceDiff.to_dict`) and how a value of either run is written as text."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from engine.codec import to_jsonable

TIMING_FIELDS = frozenset({"latency_ms"})  # differ between two runs of one setting: shown, never a difference
MISSING = "—"  # a setting one run has and the other has not


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
        """The `--json` form: every record as JSON values, with what the text marks spelled out (`same` per
        setting, `side` and `changed` per step, `side` per chunk) and `identical`, so no reader recomputes them."""
        data = to_jsonable(self)
        for row, field_diff in zip(data["header"], self.header):
            row["same"] = field_diff.same
        for row, pair in zip(data["steps"], self.steps):
            row.update(side=pair.side, changed=pair.changed)
        for row, chunk in zip(data["chunks"], self.chunks):
            row["side"] = chunk.side
        return {**data, "identical": self.identical}


def shown(value: Any) -> str:
    """A value of either run as text: MISSING for none, text as it is, anything else as JSON."""
    if value is None:
        return MISSING
    return value if isinstance(value, str) else json.dumps(to_jsonable(value), ensure_ascii=False)


def clip(text: str, width: int = 80) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= width else flat[: width - 1] + "…"
