"""The Method interface, the context a run gets, and the registry methods add themselves to."""

from __future__ import annotations

import threading
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from engine.errors import RunCancelled, UnknownNameError
from engine.knowledge.records import Pack, Question
from engine.retrieval.suite import Retrieval
from engine.tools.bundle import ToolBundle
from engine.trace import Step


@dataclass(frozen=True)
class RunContext:
    """Everything a method may use. `cancel` is set by the user's Stop; methods call `check()`."""

    pack: Pack
    retrieval: Retrieval
    tools: ToolBundle
    params: Any
    cancel: threading.Event = field(default_factory=threading.Event)
    question: Question | None = None  # the pack question being asked, when it came from the pack

    def check(self) -> None:
        if self.cancel.is_set():
            raise RunCancelled("stopped by the user")


class Method(ABC):
    id: ClassVar[str]
    label: ClassVar[str]
    paper: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type]

    @abstractmethod
    def run(self, question: str, ctx: RunContext) -> Iterator[Step]:
        """Yield steps as the work happens; the last one is an AnswerStep."""


METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    if cls.id in METHODS:
        raise ValueError(f"method id {cls.id!r} registered twice ({METHODS[cls.id].__name__}, {cls.__name__})")
    METHODS[cls.id] = cls
    return cls


def get_method(method_id: str) -> Method:
    import engine.methods  # noqa: F401  (fills the registry)

    if method_id not in METHODS:
        raise UnknownNameError(f"unknown method {method_id!r}; known: {', '.join(METHODS)}")
    return METHODS[method_id]()


def method_ids() -> tuple[str, ...]:
    import engine.methods  # noqa: F401

    return tuple(METHODS)
