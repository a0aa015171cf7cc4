"""The tool bundle a run uses; the chosen backend decides which implementations it holds."""

from __future__ import annotations

from dataclasses import dataclass

from engine.graph.kg import KnowledgeGraph
from engine.tools.base import QuestionClassifier, Reader

OFFLINE_LABEL = "offline (no language model)"


@dataclass(frozen=True)
class ToolBundle:
    backend: str
    model: str
    classifier: QuestionClassifier
    reader: Reader
    kg: KnowledgeGraph
