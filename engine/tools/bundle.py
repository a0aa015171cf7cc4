"""The tool bundle a run uses; the chosen backend decides which implementations it holds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, TypeVar

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Pack
from engine.llm.base import open_chat
from engine.llm.chat import ChatModel
from engine.retrieval.suite import Retrieval
from engine.tools.base import QuestionClassifier, Reader

OFFLINE_LABEL = "offline (no language model)"
T = TypeVar("T")


@dataclass(frozen=True)
class ToolBundle:
    backend: str
    model: str
    classifier: QuestionClassifier
    reader: Reader
    kg: KnowledgeGraph
    chat: ChatModel | None = None  # None on the offline backend

    def twin(self, llm: Callable[[ChatModel], T], offline: Callable[[], T]) -> T:
        """A method-specific tool in its LLM or offline form: the bundle decides, never the method."""
        return llm(self.chat) if self.chat is not None else offline()


def build_tools(backend: str, pack: Pack, retrieval: Retrieval, options: dict[str, Any] | None = None) -> ToolBundle:
    """Open the backend's model (none offline) and wrap the matching tools around it."""
    options = dict(options or {})
    chat = open_chat(backend, options)
    if chat is None:
        return offline_bundle(pack, retrieval, options)
    return llm_bundle(chat, pack)


def llm_bundle(chat: ChatModel, pack: Pack) -> ToolBundle:
    """The tool bundle of any language-model backend: LLM tools over one chat model."""
    from engine.tools.llm_classifier import LlmQuestionClassifier
    from engine.tools.llm_reader import LlmReader

    return ToolBundle(backend=chat.backend, model=chat.model, classifier=LlmQuestionClassifier(chat),
                      reader=LlmReader(chat), kg=KnowledgeGraph.from_pack(pack), chat=chat)


def offline_bundle(pack: Pack, retrieval: Retrieval, options: dict[str, Any]) -> ToolBundle:
    """No weights: MiniLM, the pack's KG, rules and the calculator."""
    from engine.tools.offline_classifier import OfflineQuestionClassifier
    from engine.tools.offline_reader import OfflineReader

    kg = KnowledgeGraph.from_pack(pack)
    classifier = OfflineQuestionClassifier()
    reader_options = {"threshold": float(options["threshold"])} if "threshold" in options else {}
    reader = OfflineReader(retrieval.embedder, classifier=classifier, entities=kg.entities,
                           relations=kg.entity_relations, **reader_options)
    return ToolBundle(backend="offline", model=OFFLINE_LABEL, classifier=classifier, reader=reader, kg=kg)
