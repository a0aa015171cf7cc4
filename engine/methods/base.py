"""The Method interface, the context a run gets, and the registry methods add themselves to."""

from __future__ import annotations

import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, ClassVar

from engine.errors import MethodError, RagscopeError, RunCancelled, UnknownNameError
from engine.knowledge.records import Pack, Question
from engine.methods.contract import check_method
from engine.retrieval.suite import Retrieval
from engine.tools.bundle import ToolBundle
from engine.trace import Step


class Deadline:
    """A run's wall-clock limit (AnswerPolicy.timeout_s; None: none), counted from `start()`, when the method
    begins, not from when the run was set up (a warm-up run may wait its turn first)."""

    def __init__(self, seconds: float | None = None):
        self.seconds = seconds
        self._at: float | None = None

    def start(self) -> None:
        if self.seconds is not None and self._at is None:
            self._at = time.monotonic() + self.seconds

    def overdue(self, grace: float = 0.0) -> bool:
        """The limit (plus `grace` seconds) has passed."""
        return self._at is not None and time.monotonic() >= self._at + grace

    def elapsed(self) -> float:
        """Seconds since `start()` (0 before it)."""
        return 0.0 if self._at is None else time.monotonic() - (self._at - self.seconds)

    def reason(self) -> str:
        return f"time limit of {self.seconds:g} s reached"


@dataclass(frozen=True)
class RunContext:
    """Everything a method may use. `cancel` is set by the user's Stop, `deadline` by the run's time limit;
    methods call `check()` between steps (the runner calls it after each step too)."""

    pack: Pack
    retrieval: Retrieval
    tools: ToolBundle
    params: Any
    cancel: threading.Event = field(default_factory=threading.Event)
    question: Question | None = None  # the pack question being asked, when it came from the pack
    deadline: Deadline = field(default_factory=Deadline)

    def check(self) -> None:
        if self.cancel.is_set():
            raise RunCancelled("stopped by the user")
        if self.deadline.overdue():
            raise RunCancelled(self.deadline.reason())


class Method(ABC):
    id: ClassVar[str]
    label: ClassVar[str]
    paper: ClassVar[str] = ""  # optional: a user's own method may come from no paper
    description: ClassVar[str]
    Params: ClassVar[type]

    @abstractmethod
    def run(self, question: str, ctx: RunContext) -> Iterator[Step]:
        """Yield steps as the work happens; the last one is an AnswerStep."""


METHODS: dict[str, type[Method]] = {}


def register(cls: type[Method]) -> type[Method]:
    """Add a method to the registry; one that breaks the Method contract is refused here, with the reason."""
    if not (isinstance(cls, type) and issubclass(cls, Method)):
        raise MethodError(f"register expects a subclass of engine.methods.Method; got {cls!r}")
    check_method(cls)
    taken = METHODS.get(cls.id)
    if taken is not None:
        raise MethodError(f"method id {cls.id!r} is already taken by {taken.__module__}.{taken.__qualname__}; "
                         "choose another id")
    METHODS[cls.id] = cls
    return cls


def get_method(method_id: str) -> Method:
    """The method, users' own included; one whose constructor fails is a RagscopeError, not a crash."""
    from engine.methods.plugins import load_plugins  # fills the registry: built-ins, then plugins

    problems = load_plugins().problems
    if method_id not in METHODS:
        hint = (f"; {len(problems)} plugin(s) did not load, `python -m engine methods` says why"
                if problems else "")
        raise UnknownNameError(f"unknown method {method_id!r}; known: {', '.join(METHODS)}{hint}")
    try:
        return METHODS[method_id]()
    except Exception as exc:  # a user's method whose __init__ fails must not take the page down
        raise RagscopeError(f"method {method_id!r} could not be created: {type(exc).__name__}: {exc}") from exc


def method_ids() -> tuple[str, ...]:
    """Built-in ids, then users' own; the first call loads the plugins."""
    from engine.methods.plugins import load_plugins

    load_plugins()
    return tuple(METHODS)
