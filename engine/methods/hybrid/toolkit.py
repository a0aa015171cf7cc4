"""The hybrid method's tools in their LLM or offline form; the bundle chooses, never the method."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.graph.linking import EntityLinker
from engine.methods.hybrid.attributes import Attributes, LlmAttributePredictor, attribute_model
from engine.methods.hybrid.calculations import Calculations, LlmCalculator, OfflineCalculator
from engine.methods.hybrid.kg_module import LlmEntityFinder, OfflineEntityFinder
from engine.methods.hybrid.knowledge import KnowledgeExtractor
from engine.methods.hybrid.reasoner import Decision, LlmReasoner, OfflineReasoner, References
from engine.retrieval.embedder import Embedder
from engine.tools.bundle import ToolBundle
from engine.trace import Step


class AttributePredictor(Protocol):
    def predict(self, question: str) -> Attributes: ...


class EntityFinder(Protocol):
    def find(self, question: str, query_time: str = "",
             ) -> tuple[tuple[str, ...], tuple[str, ...], tuple[Step, ...]]: ...


class Calculator(Protocol):
    def propose(self, question: str, references: str, tables: str, facts: Sequence[str] = ()) -> Calculations: ...


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


def hybrid_tools(bundle: ToolBundle, embedder: Embedder, linker: EntityLinker, sampling: Sampling,
                 reader_floor: float) -> HybridTools:
    model = attribute_model(embedder)
    return bundle.twin(
        lambda chat: HybridTools(LlmAttributePredictor(chat, model, sampling.attributes),
                                 LlmEntityFinder(chat, linker), lambda _: LlmCalculator(chat, sampling.calculator),
                                 LlmReasoner(chat, sampling.reasoning), KnowledgeExtractor(chat)),
        lambda: HybridTools(model, OfflineEntityFinder(linker), OfflineCalculator,
                            OfflineReasoner(bundle.reader, reader_floor, bundle.classifier), None),
    )
