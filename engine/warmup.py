"""Prepare a workbench in the background when the app starts: the index, the sentence encoder, the tools
and every method once, so the first question a user asks does not sit behind a bare progress bar. Its
runs are background runs: they pause between steps while a run someone asked for is going.

Only the offline backend's methods are run (a model backend would spend generation on a question no
one asked); its index and tools are still prepared. At interpreter exit the warm-up is cancelled and
joined: a thread killed inside torch aborts the whole process.
"""

from __future__ import annotations

import atexit
import logging
import sys
import threading
import time
from dataclasses import dataclass

from engine.errors import RagscopeError
from engine.methods import method_ids
from engine.retrieval.index import IndexProgress, with_eta
from engine.runner import Workbench
from engine.tour import tour_order

log = logging.getLogger(__name__)
EXIT_WAIT_S = 60.0


class _Cancelled(Exception):
    pass


@dataclass(frozen=True)
class WarmupStatus:
    stage: str  # what it is doing now, or "ready"
    done: bool
    error: str
    elapsed_s: float


class Warmup:
    def __init__(self, workbench: Workbench):
        self.workbench = workbench
        self._stage = "waiting to start"
        self._done = False
        self._error = ""
        self._started = time.perf_counter()
        self._finished = 0.0
        self._cancel = threading.Event()
        self._thread = threading.Thread(target=self._run, name="ragscope-warmup", daemon=True)

    def start(self) -> Warmup:
        """Start in the background; a process already exiting gets no warm-up (nothing left to serve)."""
        try:
            atexit.register(self.cancel)  # registered first: the exit must be able to join the thread
        except RuntimeError:
            self._stage, self._done = "cancelled", True
            return self
        self._started = time.perf_counter()
        self._thread.start()
        return self

    def cancel(self) -> None:
        """Stop at the next step of whatever it is doing, and wait for that."""
        self._cancel.set()
        if self._thread.is_alive():
            self._thread.join(EXIT_WAIT_S)

    def wait(self, timeout: float | None = None) -> WarmupStatus:
        self._thread.join(timeout)
        return self.status

    @property
    def status(self) -> WarmupStatus:
        end = self._finished if self._done else time.perf_counter()
        return WarmupStatus(self._stage, self._done, self._error, round(end - self._started, 1))

    def _run(self) -> None:
        bench = self.workbench
        try:
            self._stage = "indexing the pack"
            bench.retrieval.ensure_index(with_eta(self._indexing))
            self._stage = "loading the sentence encoder"
            question = bench.pack.questions[0].question if bench.pack.questions else "What is this pack about?"
            bench.retrieval.embedder.encode_queries([question])  # every method's first step needs it
            self._stage = "loading the tools"
            _ = bench.tools
            if bench.backend == "offline":
                for method in tour_order(method_ids()):  # the quickest first, as the tour asks them
                    self._check()
                    self._stage = f"first run of {method}"
                    try:
                        run = bench.start(question, method, cancel=self._cancel, background=True)
                    except RagscopeError as exc:  # a user's method that cannot be created warms nothing up
                        log.warning("warm-up skipped %s: %s", method, exc)
                        continue
                    for _ in run:
                        pass
            self._check()
            self._stage = "ready"
        except _Cancelled:
            self._stage = "cancelled"
        except Exception as exc:  # a warm-up failure must not take the app down; the first question retries
            if sys.is_finalizing() or "interpreter shutdown" in str(exc):  # exiting mid-load: not a failure
                self._stage = "cancelled"
                return
            log.exception("warm-up failed")
            self._stage, self._error = "failed", f"{type(exc).__name__}: {exc}"
        finally:
            self._finished = time.perf_counter()
            self._done = True

    def _indexing(self, progress: IndexProgress) -> None:
        self._check()
        self._stage = f"indexing the pack ({progress.describe()})"

    def _check(self) -> None:
        if self._cancel.is_set():
            raise _Cancelled
