"""Backend registry: a backend turns its options into a chat model (`None` for the offline backend).

Backends know nothing of the tools: `engine.tools.bundle.build_tools` asks `open_chat` for the model
and builds the LLM or offline tool bundle around it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from engine.errors import BackendError, UnknownNameError
from engine.llm.chat import ChatModel

ChatFactory = Callable[[dict[str, Any]], ChatModel | None]
BACKENDS: dict[str, ChatFactory] = {"offline": lambda _options: None}  # no weights: the offline tools


def register_backend(name: str) -> Callable[[ChatFactory], ChatFactory]:
    def add(factory: ChatFactory) -> ChatFactory:
        BACKENDS[name] = factory
        return factory

    return add


def open_chat(backend: str, options: dict[str, Any] | None = None) -> ChatModel | None:
    """The backend's chat model, loaded or connected; `None` means the offline tools."""
    import engine.llm.hf
    import engine.llm.langchain_chat
    import engine.llm.openai  # noqa: F401

    if backend not in BACKENDS:
        raise UnknownNameError(f"unknown backend {backend!r}; known: {', '.join(BACKENDS)}")
    return BACKENDS[backend](dict(options or {}))


def required_option(options: dict[str, Any], name: str, backend: str, example: str) -> str:
    value = str(options.get(name) or "").strip()
    if not value:
        raise BackendError(f"the {backend} backend needs {name!r} (e.g. {example})")
    return value
