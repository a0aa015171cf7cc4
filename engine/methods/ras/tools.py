"""RAS's tools, each with an LLM and an offline twin: planner, text-to-triples, answerer.

`base` (tokens, records, interfaces), `llm` (the prompted twins and their parsers), `extractor` (offline
text-to-triples), `offline` (offline planner and answerer).
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.retrieval.embedder import Embedder
from engine.tools.bundle import ToolBundle
from engine.methods.ras.base import RasTools, Round
from engine.methods.ras.extractor import OfflineExtractor
from engine.methods.ras.llm import LlmAnswerer, LlmExtractor, LlmPlanner
from engine.methods.ras.offline import MemoReader, OfflineAnswerer, OfflinePlanner

__all__ = ["RasTools", "Round", "ras_tools"]


def ras_tools(bundle: ToolBundle, embedder: Embedder, relations: Sequence[str], sufficiency: float) -> RasTools:
    """The RAS tools in the bundle's form (LLM or offline); the method never looks at the backend."""
    return bundle.twin(
        lambda chat: RasTools(LlmPlanner(chat), LlmExtractor(chat), LlmAnswerer(chat)),
        lambda: _offline(bundle, embedder, relations, sufficiency),
    )


def _offline(bundle: ToolBundle, embedder: Embedder, relations: Sequence[str], sufficiency: float) -> RasTools:
    reader = MemoReader(bundle.reader)  # planner and answerer share one run's readings
    return RasTools(OfflinePlanner(reader, bundle.kg, embedder, sufficiency, bundle.classifier),
                    OfflineExtractor(bundle.kg, embedder, tuple(sorted(relations))),
                    OfflineAnswerer(reader, bundle.kg, sufficiency))
