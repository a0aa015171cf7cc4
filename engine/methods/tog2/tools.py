"""ToG-2's tool interfaces and what they return: topic prune, relation prune, reasoning, query re-formulation.

Each has an LLM twin (`llm.py`) and an offline twin (`offline.py`); `method.py` takes them from the bundle and
never looks at the backend. The entity/context scorer has no LLM twin on purpose: ToG-2 prunes entities with a
dense retrieval model, not an LLM (spec §1, §2.2.5; Fig. 3 shows the LLM ranker doing no better), so it lives
in exploration.py and is the same on every backend.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.graph.linking import EntityLink
from engine.knowledge.records import Triple
from engine.tools.base import Reading
from engine.trace import Hit, Step


@dataclass(frozen=True)
class TopicChoice:
    kept: tuple[str, ...]
    scores: tuple[tuple[str, float], ...] = ()  # entity → how well it suits as a start (0..1)
    steps: tuple[Step, ...] = ()


@dataclass(frozen=True)
class RelationScore:
    entity: str
    relation: str
    score: float  # 0..10, as the spec's prompt asks
    reason: str = ""
    kept: bool = False


@dataclass(frozen=True)
class RelationChoice:
    scores: tuple[RelationScore, ...]
    steps: tuple[Step, ...] = ()

    @property
    def kept(self) -> tuple[RelationScore, ...]:
        return tuple(s for s in self.scores if s.kept)


@dataclass(frozen=True)
class Reasoning:
    """The reasoning step's verdict: an answer when `sufficient`, else a clue for the next depth."""

    sufficient: bool
    reading: Reading
    clue: str = ""
    steps: tuple[Step, ...] = ()


@dataclass(frozen=True)
class Reformulation:
    """Query re-formulation after a {No} (spec §2.2.6): the missing evidence and the next retrieval query."""

    query: str
    missing: str = ""
    steps: tuple[Step, ...] = ()


class TopicPruner(Protocol):
    def prune(self, question: str, links: Sequence[EntityLink], width: int) -> TopicChoice: ...


class RelationPruner(Protocol):
    """Score each frontier entity's relations 0..10 and mark the kept ones (<= width per entity)."""

    def prune(self, question: str, clue: str, paths: Mapping[str, str], relations: Mapping[str, Sequence[str]],
              width: int, mode: str) -> RelationChoice: ...


class Reasoner(Protocol):
    """Answer from triples and chunks if they suffice; `final` asks for a best-effort answer."""

    def reason(self, question: str, facts: Sequence[Triple], evidence: Sequence[Hit], clue: str,
               final: bool) -> Reasoning: ...


class QueryReformer(Protocol):
    """After a {No}: name the missing evidence and write the next round's retrieval query."""

    def reform(self, question: str, clue: str, facts: Sequence[Triple]) -> Reformulation: ...


@dataclass(frozen=True)
class Tog2Tools:
    topic: TopicPruner
    relations: RelationPruner
    reasoner: Reasoner
    requery: QueryReformer
