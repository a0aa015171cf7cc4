"""RAS's tool interfaces and what they share: the control tokens, a round's record, planner, text-to-triples
and answerer. Each has an LLM twin (`llm.py`) and an offline twin (`offline.py`; text-to-triples in
`extractor.py`, its sentence parsing being a job of its own); `method.py` takes them from the bundle."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.knowledge.records import Triple
from engine.methods.ras.query_graph import GraphTriple, QueryGraph
from engine.tools.base import Reading
from engine.trace import Hit, Step

NO_RETRIEVAL, SUBQ, SUFFICIENT = "[NO_RETRIEVAL]", "[SUBQ]", "[SUFFICIENT]"
MAX_TRIPLES_PER_CHUNK = 12


@dataclass(frozen=True)
class Round:
    """One finished round: its sub-query, the triples extracted from its chunks, and what it retrieved."""

    subquery: str
    triples: tuple[GraphTriple, ...]
    hits: tuple[Hit, ...] = ()


def render_history(rounds: Sequence[Round], subq_tag: str = SUBQ,
                   info_tag: str = "Retrieved Graph Information:") -> str:
    """Spec §2.1 history block; g_j as a Python list repr of triple strings ([code])."""
    return "".join(f"{subq_tag} {r.subquery}\n{info_tag} {[t.render() for t in r.triples]!r}\n" for r in rounds)


@dataclass(frozen=True)
class Plan:
    """The planner's decision; `fallback` marks a decision the tool made because the model's was unusable."""

    action: str  # no_retrieval | subq | sufficient
    subquery: str = ""
    reason: str = ""
    steps: tuple[Step, ...] = ()
    fallback: bool = False


@dataclass(frozen=True)
class Extraction:
    triples: tuple[Triple, ...]
    steps: tuple[Step, ...] = ()


class Planner(Protocol):
    def plan(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Plan: ...


class Extractor(Protocol):
    def extract(self, hit: Hit) -> Extraction: ...


class Answerer(Protocol):
    def answer(self, question: str, rounds: Sequence[Round], graph: QueryGraph, evidence: Sequence[Hit]) -> Reading: ...


@dataclass(frozen=True)
class RasTools:
    planner: Planner
    extractor: Extractor
    answerer: Answerer
