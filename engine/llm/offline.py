"""The offline backend: no weights, the offline tool bundle (MiniLM, the pack's KG, rules, calculator)."""

from __future__ import annotations

from typing import Any

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Pack
from engine.llm.base import register_backend
from engine.retrieval.suite import Retrieval
from engine.tools.bundle import OFFLINE_LABEL, ToolBundle
from engine.tools.offline_classifier import OfflineQuestionClassifier
from engine.tools.offline_reader import OfflineReader


@register_backend("offline")
def offline_tools(pack: Pack, retrieval: Retrieval, options: dict[str, Any]) -> ToolBundle:
    kg = KnowledgeGraph.from_pack(pack)
    classifier = OfflineQuestionClassifier()
    reader_options = {"threshold": float(options["threshold"])} if "threshold" in options else {}
    reader = OfflineReader(retrieval.embedder, classifier=classifier, entities=kg.entities, **reader_options)
    return ToolBundle(backend="offline", model=OFFLINE_LABEL, classifier=classifier, reader=reader, kg=kg)
