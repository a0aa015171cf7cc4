"""The demo tour's runs: one pack question per method, each stop a different question, chosen so the stop
shows its method answering, asked one after another in a background thread.

A presenter cannot stand behind a stop that says "I don't know" when the method would have answered
another question of the same kind, nor wait half a minute for six runs before the first is shown
(issue 22). So each method tries the questions of the type that shows it at its best until one is
answered right, and each stop is published the moment its run is chosen, while the next is asked.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from engine.errors import RagscopeError
from engine.evaluation.metrics import grade_trace
from engine.knowledge.records import Pack, Question
from engine.methods.base import METHODS
from engine.runner import Workbench
from engine.trace import Trace

log = logging.getLogger(__name__)

# The question type that shows each method at its best (other types are only a fallback), in tour order.
SHOWCASE_TYPES = {"vanilla": "factoid", "rulerag": "rule", "hybrid": "numeric", "r2ag": "comparison",
                  "tog2": "multi_hop", "ras": "multi_hop"}
# Questions of other types a method tries when none of its showcase type is answered (or none is left).
FALLBACK_TRIES = 3
# Once a method has answered, wrongly, the questions it still tries for a right answer: a slow method's stop
# should not wait minutes for one (refusals alone never end the search among the showcase type).
RIGHT_TRIES = 2
_CORRECT, _ANSWERED, _REFUSED = 2, 1, 0


@dataclass(frozen=True)
class TourStop:
    method: str
    trace: Trace
    tried: int  # questions asked to find this one


def tour_order(methods: Sequence[str]) -> tuple[str, ...]:
    """The built-in methods in SHOWCASE_TYPES' order, then the user's: the baseline first (also the fastest,
    so the first stop shows soonest), then each method that adds to it, the slower graph walkers last."""
    return (*(m for m in SHOWCASE_TYPES if m in methods), *(m for m in methods if m not in SHOWCASE_TYPES))


def candidates(questions: Sequence[Question], method: str, used: set[str]) -> list[Question]:
    """The questions `method` tries, in order: every unused one of its showcase type, then a few others.
    A pack with fewer questions than there are methods has its questions asked again once all are used."""
    wanted = SHOWCASE_TYPES.get(method)
    fresh = [q for q in questions if q.id not in used] or list(questions)
    return [q for q in fresh if q.type == wanted] + [q for q in fresh if q.type != wanted][:FALLBACK_TRIES]


def rank(trace: Trace, pack: Pack) -> int:
    """Right (or answered, where the pack has no gold) > answered wrong > refused or unanswered."""
    if trace.answer is None or trace.answer.refused:
        return _REFUSED
    gold, scores = grade_trace(trace, pack)
    return _CORRECT if not gold or (scores is not None and scores.em >= 1.0) else _ANSWERED


class Tour:
    """Asks the stops in the background; every property may be read from any thread at any time.

    `save` is called with each stop's trace as it is chosen (the run store: tour runs are in History).
    """

    def __init__(self, workbench: Workbench, methods: Sequence[str], save: Callable[[Trace], None]):
        self.workbench = workbench
        self.methods = tour_order(methods)
        self._save = save
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)  # a stop arrived, or the asking ended
        self._stops: list[TourStop] = []
        self._left_out: list[str] = []
        self._asking: str | None = None
        self._error = ""
        self._ended = False
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ragscope-tour", daemon=True)

    def start(self) -> Tour:
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stop asking: the run in flight ends at its next step and is dropped; the stops found are kept."""
        self._cancel.set()

    def wait(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)

    def wait_for_stop(self, seen: int, timeout: float) -> bool:
        """Block until there are more than `seen` stops or the asking ended (True), or `timeout` passed.
        A page waiting here instead of polling leaves the CPU to the asking (a whole-page rerun every
        half second slowed a fresh server's first stop by seconds)."""
        with self._changed:
            return self._changed.wait_for(lambda: len(self._stops) > seen or self._ended, timeout)

    @property
    def stops(self) -> tuple[TourStop, ...]:
        with self._lock:
            return tuple(self._stops)

    @property
    def left_out(self) -> tuple[str, ...]:
        """Why a method has no stop (it could not be created), one sentence each."""
        with self._lock:
            return tuple(self._left_out)

    def progress(self) -> tuple[tuple[TourStop, ...], str | None]:
        """The stops so far and the method being asked for the next one (None between stops and at the end),
        read together: a page that names the method asked never names the one whose stop just arrived."""
        with self._lock:
            return tuple(self._stops), self._asking

    @property
    def error(self) -> str:
        return self._error

    @property
    def stopped(self) -> bool:
        return self._cancel.is_set()

    @property
    def done(self) -> bool:
        return not self._thread.is_alive() and self._thread.ident is not None

    def _run(self) -> None:
        try:
            self.workbench.retrieval.ensure_index()
            used: set[str] = set()
            for method in self.methods:
                if self._cancel.is_set():
                    return
                with self._lock:
                    self._asking = method
                stop = self._find_stop(method, used)
                if stop is None or self._cancel.is_set():
                    continue
                used.add(stop.trace.question_id)
                self._save(stop.trace)
                with self._lock:
                    self._stops.append(stop)
                    self._asking = None
                    self._changed.notify_all()
        except Exception as exc:  # the tour must not take the app down; the page says what went wrong
            log.exception("the demo tour failed")
            self._error = f"{type(exc).__name__}: {exc}"
        finally:
            with self._lock:
                self._asking = None
                self._ended = True
                self._changed.notify_all()

    def _find_stop(self, method: str, used: set[str]) -> TourStop | None:
        """The first question `method` answers right; else its best try (answered beats refused)."""
        best: tuple[int, Trace] | None = None
        tried = 0
        left_for_right = RIGHT_TRIES + 1  # counted down once an answer came
        for question in candidates(self.workbench.pack.questions, method, used):
            try:
                run = self.workbench.start(question.question, method, question_id=question.id, cancel=self._cancel)
            except RagscopeError as exc:  # a user's method that cannot even be created: the tour goes on without it
                with self._lock:
                    self._left_out.append(f"{METHODS[method].label} is left out of the tour: {exc}")
                return None
            for _ in run:
                pass
            if self._cancel.is_set():
                return None
            tried += 1
            score = rank(run.trace, self.workbench.pack)
            if best is None or score > best[0]:
                best = (score, run.trace)
            left_for_right -= best[0] == _ANSWERED
            if score == _CORRECT or not left_for_right:
                break
        return TourStop(method, best[1], tried) if best is not None else None
