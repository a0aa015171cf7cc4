"""Runs people wait for come first: a background run (the warm-up) pauses between its steps while any
foreground run (a question asked in the app, the demo tour, the CLI) is going.

On a 2-core machine a warm-up of every method shares the CPU with the first question a user asks; the
first stop of the demo tour then took 13 s instead of 3 (issue 22). Pausing at step boundaries needs no
help from the methods: the runner already hands out their steps one at a time.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

_POLL_S = 0.25  # how often a paused run looks at its cancel event


class Priority:
    def __init__(self) -> None:
        self._foreground = 0
        self._changed = threading.Condition()

    @contextmanager
    def foreground(self) -> Iterator[None]:
        """The block is a run someone is waiting for: background runs pause until it ends."""
        with self._changed:
            self._foreground += 1
        try:
            yield
        finally:
            with self._changed:
                self._foreground -= 1
                self._changed.notify_all()

    @property
    def busy(self) -> bool:
        return self._foreground > 0

    def wait_turn(self, cancel: threading.Event) -> None:
        """Block a background run while any foreground run is going (or until `cancel` is set)."""
        with self._changed:
            while self._foreground and not cancel.is_set():
                self._changed.wait(_POLL_S)
