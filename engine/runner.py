"""Runs a method on a question and records its trace; a run never crashes and can be stopped.

`Workbench` holds what one pack + backend needs (retrieval, tools) and is shared by all
sessions; each question gets a `Run`, which yields steps live and keeps them for the trace, and
for a page that shows replies as they are written, `Run.live()` also yields the text so far.
"""

from __future__ import annotations

import logging
import queue
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import nullcontext
from dataclasses import replace
from datetime import UTC, datetime
from functools import cached_property
from typing import Any

from engine.codec import SURROGATE, to_jsonable
from engine.errors import BackendError, QuestionError, RagscopeError, RunCancelled, ServerUnreachable
from engine.knowledge.records import Pack
from engine.live import Partial, listening
from engine.methods.base import Deadline, Method, RunContext, get_method
from engine.params import AnswerPolicy, build_params, split_policy
from engine.priority import Priority
from engine.retrieval.suite import Retrieval, open_retrieval
from engine.settings import Settings
from engine.tools.base import IDK
from engine.tools.bundle import ToolBundle, build_tools
from engine.trace import AnswerStep, DecisionStep, ErrorStep, Step, Trace

log = logging.getLogger(__name__)


def validate_question(text: str, max_chars: int) -> str:
    """The question as a run will use it; refused here, before any work, if it cannot be asked."""
    question = " ".join((text or "").split())
    if not question:
        raise QuestionError("the question is empty; type a question, e.g. one of the pack's examples")
    if len(question) > max_chars:
        raise QuestionError(f"the question has {len(question)} characters; at most {max_chars} are "
                            "allowed — shorten it to the question itself")
    bad = SURROGATE.search(question)
    if bad:  # it would pass every step and then fail to save, print or index (issue 15)
        raise QuestionError(f"the question contains a lone UTF-16 surrogate ({ascii(bad.group())}) at character "
                            f"{bad.start() + 1}, which is not text; retype the question there")
    return question


class Workbench:
    """One pack with one backend: retrieval and tools built once, shared by every run."""

    def __init__(self, pack: Pack, settings: Settings | None = None, backend: str = "offline",
                 backend_options: dict[str, Any] | None = None, *, calibrated: bool = True):
        self.pack = pack
        self.calibrated = calibrated  # False only to collect raw confidences for fitting (scripts/fit_calibration.py)
        self.settings = settings or Settings()
        self.backend = backend
        self.backend_options = dict(backend_options or {})
        self._tools_lock = threading.Lock()
        self.priority = Priority()  # the warm-up's runs wait while a run someone asked for is going

    @cached_property
    def retrieval(self) -> Retrieval:
        return open_retrieval(self.pack, self.settings)

    @property
    def tools(self) -> ToolBundle:
        with self._tools_lock:  # two sessions asking at once build the bundle once
            return self._tools

    @cached_property
    def _tools(self) -> ToolBundle:
        return build_tools(self.backend, self.pack, self.retrieval, self.backend_options)

    def start(self, question: str, method: str, params: dict[str, Any] | None = None,
              question_id: str = "", cancel: threading.Event | None = None, *, background: bool = False,
              policy: AnswerPolicy | None = None) -> Run:
        """Validate everything up front (bad input raises here), then hand back a runnable Run.
        A `background` run (the warm-up) pauses between steps while any other run is going. The answer
        `policy` is the run's (default AnswerPolicy()); `params` naming `min_confidence` (the CLI's `-p`, a
        trace saved before issue 24) still sets it."""
        text = validate_question(question, self.settings.max_question_chars)
        chosen = get_method(method)
        method_params, named = split_policy(params)
        if policy is not None and named is not None and named != policy:
            raise RagscopeError(f"the answer policy is given twice: {policy} and, in the params, {named}; "
                                "give it once")
        built = build_params(chosen.Params, method_params)
        pack_question = self.pack.questions_by_id.get(question_id) if question_id else None
        policy = policy or named or AnswerPolicy()
        ctx = RunContext(pack=self.pack, retrieval=self.retrieval, tools=self.tools, params=built,
                         cancel=cancel or threading.Event(), question=pack_question,
                         deadline=Deadline(policy.timeout_s))
        head = Trace(
            id=uuid.uuid4().hex[:12], question=text, method=chosen.id, backend=self.tools.backend,
            model=self.tools.model, pack=self.pack.info.name, params=to_jsonable(built),
            started=datetime.now(UTC).isoformat(timespec="seconds"), question_id=question_id, policy=policy,
        )
        return Run(head, chosen, ctx, calibrated=self.calibrated, priority=self.priority, background=background)

    def ask(self, question: str, method: str, params: dict[str, Any] | None = None,
            question_id: str = "", *, policy: AnswerPolicy | None = None) -> Trace:
        run = self.start(question, method, params, question_id, policy=policy)
        for _ in run:
            pass
        return run.trace


_DONE = object()  # the worker's last event: the run has ended
_IDLE = object()  # no event for a while
DEADLINE_GRACE_S = 2.0  # past its time limit, a run gets this long to notice; then its watcher stops waiting
_STUCK = ("the method did not stop (it neither yields a step nor calls ctx.check() while it works), so it was left "
          "running in the background")


class Run:
    """Iterate to execute; `trace` holds the steps so far (complete once iteration ends).

    Iterating again continues where the last iteration left off, never restarts the method: a UI
    whose script was interrupted (Streamlit's Stop reruns the page) resumes the same run, which
    notices the stop at its next step and ends with a "Stopped" step, its latency the true one.

    A run with a time limit (AnswerPolicy.timeout_s) stops at the first check past it. A method stuck between
    checks (a loop that never yields) cannot be stopped in a thread, so such a run always runs in a worker
    thread, and its watcher ends the run DEADLINE_GRACE_S after the limit, leaving the stuck thread behind.
    """

    def __init__(self, head: Trace, method: Method, ctx: RunContext, *, calibrated: bool = True,
                 priority: Priority | None = None, background: bool = False):
        self.head = head
        self.method = method
        self.ctx = ctx
        self.calibrated = calibrated
        self.priority = priority or Priority()
        self.background = background
        self.steps: list[Step] = []
        self._latency_ms = 0.0
        self._stream: Iterator[Step] | None = None
        self._events: queue.Queue[Any] | None = None  # fed by the worker thread once start() started it
        self._ended = False
        self._finished = threading.Event()  # set by the worker once the trace is complete (and on_end ran)
        self._on_end: Callable[[Trace], None] | None = None
        self._start_lock = threading.Lock()
        self._steps_lock = threading.Lock()  # the worker appends steps; a watcher giving up on it ends them
        self._streams = True  # model calls report their reply so far (live(), the app), not for plain iteration

    def stop(self) -> None:
        self.ctx.cancel.set()

    @property
    def trace(self) -> Trace:
        return self.head.with_steps(tuple(self.steps), self._latency_ms)

    def __iter__(self) -> Iterator[Step]:
        if self._events is None and self.ctx.deadline.seconds is not None:
            self.start(streams=False)  # watched from here, so a stuck method cannot hold the caller past the limit
        if self._events is not None:  # the method runs in a worker thread: its steps come from there
            return (event for event in self.live() if not isinstance(event, Partial))
        if self._stream is None:
            self._stream = self._stamped()
        return self._stream

    def start(self, on_end: Callable[[Trace], None] | None = None, *, streams: bool = True) -> None:
        """Run the method in a worker thread, independent of whoever watches it: a page that is reloaded or
        closed mid-run stops watching, not the run. `on_end` gets the complete trace in that thread before
        any watcher hears the end (the app saves it there, so a reloaded page finds it). Idempotent."""
        with self._start_lock:
            if self._events is not None:
                return
            self._on_end, self._streams = on_end, streams
            self._events = queue.Queue()
            threading.Thread(target=self._work, args=(self._events,), name=f"run-{self.head.id}", daemon=True).start()

    @property
    def finished(self) -> bool:
        return self._finished.is_set()

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the started run has ended (True) or `timeout` seconds passed (False)."""
        return self._finished.wait(timeout)

    def live(self) -> Iterator[Step | Partial]:
        """The steps, and between them the reply so far of the model call in flight, for a page that
        shows replies as they are written (backends that stream). The method runs in a worker thread
        (started here unless `start` did), so the steps are the ones plain iteration gives; a reply that
        grew several times while the caller was busy comes once, as its latest text. A watcher that went
        away mid-run may have taken one event; a later watcher still ends when the run does."""
        self.start()
        assert self._events is not None
        while not self._ended:
            ended = self._abandon() if self.ctx.deadline.overdue(DEADLINE_GRACE_S) else ()
            if ended:
                yield from ended
                self._ended = True
                break
            event = self._next_event(self._events)
            if event is _DONE:
                self._ended = True
            elif event is not _IDLE:
                yield event
            elif self._finished.is_set() and self._events.empty():
                self._ended = True  # an earlier watcher took the end

    def _work(self, events: queue.Queue[Any]) -> None:
        try:
            with listening(events.put) if self._streams else nullcontext():
                for step in self._stream or self._stamped():
                    events.put(step)
        finally:
            self._end()
            events.put(_DONE)

    def _end(self) -> None:
        """Hand the complete trace to on_end and mark the run finished, once: by the worker, or by a watcher that
        gave up on it (then a worker coming back later must not save the run again)."""
        with self._steps_lock:
            if self._finished.is_set():
                return
            try:
                if self._on_end is not None:
                    self._on_end(self.trace)
            except Exception:  # saving is the caller's business; the run itself has ended either way
                log.exception("on_end of run %s failed", self.head.id)
            finally:
                self._finished.set()

    def _abandon(self) -> tuple[Step, ...]:
        """End a run whose method is stuck past its time limit with a time-limit error and a refusal (returned;
        none when the run ended meanwhile). The method's thread cannot be stopped: it is a daemon, cancelled, and
        whatever it yields later is dropped."""
        with self._steps_lock:
            if self._finished.is_set():
                return ()
            self.ctx.cancel.set()
            iteration = self.steps[-1].iteration if self.steps else 0
            ended = tuple(replace(step, elapsed_ms=round(self.ctx.deadline.elapsed() * 1000, 2))
                          for step in self._time_limit_steps(iteration, _STUCK))
            self.steps += ended
            self._latency_ms = ended[-1].elapsed_ms
        log.warning("run %s: method %s did not stop at its time limit; its thread was left running", self.head.id,
                    self.method.id)
        self._end()
        return ended

    @staticmethod
    def _next_event(events: queue.Queue[Any]) -> Any:
        """The next event, skipping a reply's text that newer text or a step has replaced already;
        _IDLE when none came for a while (so a watcher can notice the run ended without it)."""
        try:
            event = events.get(timeout=0.5)
        except queue.Empty:
            return _IDLE
        while isinstance(event, Partial):
            try:
                event = events.get_nowait()
            except queue.Empty:
                break
        return event

    def _stamped(self) -> Iterator[Step]:
        with nullcontext() if self.background else self.priority.foreground():
            if self.background:
                self.priority.wait_turn(self.ctx.cancel)
            self.ctx.deadline.start()
            started = time.perf_counter()
            for step in self._guarded():
                stamped = replace(step, elapsed_ms=round((time.perf_counter() - started) * 1000, 2))
                with self._steps_lock:
                    # finished while the method still yields: a watcher gave up on it (`_abandon`), so this is late
                    if self._finished.is_set():
                        return
                    self.steps.append(stamped)
                    self._latency_ms = stamped.elapsed_ms
                yield stamped
                if self.background:
                    self.priority.wait_turn(self.ctx.cancel)

    def _time_limit_steps(self, iteration: int, how: str = "") -> tuple[Step, ...]:
        """A run stopped by its time limit: the error saying so (the CLI exits non-zero) and a refusal."""
        detail = f"; {how}" if how else ""
        return (ErrorStep(iteration=iteration, title="Time limit reached: run stopped",
                          message=f"stopped: {self.ctx.deadline.reason()}{detail}; the steps so far are kept",
                          recoverable=False),
                AnswerStep(iteration=iteration, title="Refused: the run reached its time limit", text=IDK,
                           refused=True, backend=self.ctx.tools.backend, model=self.ctx.tools.model))

    def _settled(self, answer: AnswerStep) -> AnswerStep:
        """Offline answers get their calibrated confidence, and become refusals below the policy's threshold."""
        from engine.calibration import settle

        return settle(answer, self.head.question, self.head.policy, self.steps)

    def _guarded(self) -> Iterator[Step]:
        """Stops and failures become steps: the user keeps everything computed so far."""
        iteration = 0
        try:
            for step in self.method.run(self.head.question, self.ctx):
                iteration = step.iteration
                yield self._settled(step) if isinstance(step, AnswerStep) and self.calibrated else step
                self.ctx.check()
        except RunCancelled:
            if self.ctx.deadline.overdue() and not self.ctx.cancel.is_set():
                yield from self._time_limit_steps(iteration)
            else:
                yield DecisionStep(iteration=iteration, title="Stopped", action="stopped",
                                   detail="stopped by the user; the steps so far are kept")
        except Exception as exc:  # a method bug must not take the app down
            if not isinstance(exc, RagscopeError):
                log.exception("method %s failed", self.method.id)
            if isinstance(exc, ServerUnreachable):  # said once, not once per call left (issue 22)
                title, message = "Model server unreachable: run stopped", f"{exc}; nothing more was asked"
            else:
                title, message = "Run failed", f"{type(exc).__name__}: {exc}"
            yield ErrorStep(iteration=iteration, title=title, message=message, recoverable=False,
                            backend_failure=isinstance(exc, BackendError))
            yield AnswerStep(iteration=iteration, title="Refused: the run failed", text=IDK, refused=True,
                             backend=self.ctx.tools.backend, model=self.ctx.tools.model)
