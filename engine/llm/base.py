"""Backend registry: a backend turns (pack, retrieval, options) into a ToolBundle."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.errors import UnknownNameError
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
    import engine.llm.offline  # noqa: F401  (registers "offline")

    if backend not in BACKENDS:
        raise UnknownNameError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    return BACKENDS[backend](pack, retrieval, dict(options or {}))
