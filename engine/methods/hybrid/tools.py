"""The hybrid method's tool interfaces: attributes, entities, calculator and reasoner, and how many samples each
LLM twin draws. Twins in `llm.py` and `offline.py`; `method.py` takes them from the bundle."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.methods.hybrid.attributes import Attributes
from engine.methods.hybrid.calculations import Calculations
from engine.methods.hybrid.knowledge import DirectAnswer
from engine.methods.hybrid.reasoner import Decision, References
from engine.trace import Step


class AttributePredictor(Protocol):
    def predict(self, question: str) -> Attributes: ...


class EntityFinder(Protocol):
    def find(self, question: str, query_time: str = "",
             ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[Step, ...]]: ...


class Calculator(Protocol):
    def propose(self, question: str, references: str, tables: str, facts: Sequence[str] = ()) -> Calculations: ...


class KnowledgeExtractor(Protocol):
    def answer(self, question: str) -> DirectAnswer: ...


class Reasoner(Protocol):
    def reason(self, question: str, refs: References) -> Decision: ...


@dataclass(frozen=True)
class Sampling:
    """How many samples each LLM module draws (spec §4; unused offline)."""

    attributes: int = 3
    calculator: int = 5
    reasoning: int = 1


@dataclass(frozen=True)
class HybridTools:
    attributes: AttributePredictor
    entities: EntityFinder
    calculator: Callable[[tuple[str, ...]], Calculator]  # given the question's entities
    reasoner: Reasoner
    extractor: KnowledgeExtractor | None  # LLM backends only (spec §2.5)
