"""What R2AG's two ways of answering share, once the R2-Former has scored the retrieved list.

R2AG answers either by generation with the R2-Former's vectors injected into the prompt (`llm.py`: a local HF
model whose embedding table it can write into) or, where nothing can be injected (no model, a text-only
backend, no projection trained for the model), by the bundle's reader over the re-ranked chunks
(`offline.py`). `method.py` picks by what the bundle holds (`ToolBundle.twin`), never by the backend's name.
"""

from __future__ import annotations

from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import Any, Protocol

ITERATION = 1  # one pass: every step of a run is iteration 1 (spec §3 note)


class InjectableChat(Protocol):
    """A chat model R2AG can inject into: it exposes its torch model, tokenizer and config (engine/llm/hf.py)."""

    backend: str
    model: str
    model_obj: Any
    tokenizer: Any
    config: Any

    def exclusive(self) -> AbstractContextManager[Any]: ...


@dataclass(frozen=True)
class InjectionModel:
    """The HF model pieces injection needs (the twin's LLM side); None where the backend has none."""

    chat: InjectableChat
    llm_id: str
    hidden_size: int


@dataclass(frozen=True)
class Scored:
    probs: tuple[float, ...]     # QDM probability per document, list order
    rerank: tuple[int, ...]      # list indices sorted by probability
    attention: Any               # (heads, n, n) numpy
    hidden: Any                  # (1, n, d) torch
