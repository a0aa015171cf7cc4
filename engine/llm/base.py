"""Backend registry: a backend turns (pack, retrieval, options) into a ToolBundle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.errors import BackendError, UnknownNameError
from engine.graph.kg import KnowledgeGraph
from engine.llm.chat import ChatModel
from engine.knowledge.records import Pack
from engine.retrieval.suite import Retrieval
from engine.tools.bundle import ToolBundle

BundleFactory = Callable[[Pack, Retrieval, dict[str, Any]], ToolBundle]
BACKENDS: dict[str, BundleFactory] = {}


def register_backend(name: str) -> Callable[[BundleFactory], BundleFactory]:
    def add(factory: BundleFactory) -> BundleFactory:
        BACKENDS[name] = factory
        return factory

    return add


def build_tools(backend: str, pack: Pack, retrieval: Retrieval, options: dict[str, Any] | None = None) -> ToolBundle:
    import engine.llm.offline  # noqa: F401, I001  (each backend registers itself; offline first in lists)
    import engine.llm.hf  # noqa: F401
    import engine.llm.openai  # noqa: F401

    if backend not in BACKENDS:
        raise UnknownNameError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    return BACKENDS[backend](pack, retrieval, dict(options or {}))


def llm_bundle(chat: ChatModel, pack: Pack, capture_attention: bool = False) -> ToolBundle:
    """The tool bundle of any language-model backend: LLM tools over one chat model."""
    from engine.tools.llm_classifier import LlmQuestionClassifier
    from engine.tools.llm_reader import LlmReader

    return ToolBundle(backend=chat.backend, model=chat.model, classifier=LlmQuestionClassifier(chat),
                      reader=LlmReader(chat, capture_attention=capture_attention), kg=KnowledgeGraph.from_pack(pack),
                      chat=chat)


def required_option(options: dict[str, Any], name: str, backend: str, example: str) -> str:
    value = str(options.get(name) or "").strip()
    if not value:
        raise BackendError(f"the {backend} backend needs {name!r} (e.g. {example})")
    return value
