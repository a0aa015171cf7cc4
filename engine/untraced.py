"""LangChain calls made by ragscope send no LangSmith traces, whatever LANGSMITH_TRACING / LANGCHAIN_TRACING_V2 say
in the environment: nothing of a run leaves the machine unless the user points a backend at a server."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def untraced() -> Iterator[None]:
    """Around every `invoke`/`stream` of a LangChain object (a retriever, a chat model, a user's chain)."""
    from langsmith.run_helpers import tracing_context  # langsmith comes with langchain-core

    with tracing_context(enabled=False):
        yield
