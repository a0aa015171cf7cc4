"""The reply of the model call in flight, passed from a run to the page that shows it (issue 18).

Tools are built once per workbench and shared by every run, so a run cannot hand its model calls a
sink through them. Instead `Run.live()` sets a listener for the worker thread that runs the method,
and `call_model` asks `reply_sink` for one at each call. Runs iterated plainly (CLI, evaluation,
`Workbench.ask`) set none: their calls do not stream and pay nothing for the feature.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

from engine.llm.chat import TokenSink


@dataclass(frozen=True)
class Partial:
    """The reply so far of the model call in flight: each replaces the last, and the call's step replaces it."""

    role: str
    text: str


Listener = Callable[[Partial], None]
_LISTENER: ContextVar[Listener | None] = ContextVar("ragscope_live_listener", default=None)


@contextmanager
def listening(listener: Listener) -> Iterator[None]:
    """Model calls made in this thread (and context) during the block report their growing reply to `listener`."""
    token = _LISTENER.set(listener)
    try:
        yield
    finally:
        _LISTENER.reset(token)


def reply_sink(role: str) -> TokenSink | None:
    """A sink for one model call's pieces that reports the reply so far, or None when nobody listens."""
    listener = _LISTENER.get()
    if listener is None:
        return None
    written: list[str] = []

    def sink(piece: str) -> None:
        written.append(piece)
        listener(Partial(role, "".join(written)))

    return sink
