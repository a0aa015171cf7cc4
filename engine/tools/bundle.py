"""The tool bundle a run uses; the chosen backend decides which implementations it holds."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TypeVar

from engine.graph.kg import KnowledgeGraph
from engine.llm.chat import ChatModel
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
