"""A run someone asked for comes first: the warm-up's background runs pause between steps while it goes
(issue 22: the demo tour's first stop shared two cores with a warm-up of every method)."""

from __future__ import annotations

import threading
import time

import pytest

from engine.priority import Priority
from engine.trace import Step


def test_a_background_run_waits_while_a_foreground_run_goes_and_resumes_after():
    priority, cancel, resumed = Priority(), threading.Event(), threading.Event()

    def background() -> None:
        priority.wait_turn(cancel)
        resumed.set()

    with priority.foreground():
        worker = threading.Thread(target=background)
        worker.start()
        assert not resumed.wait(0.6)  # paused for as long as the foreground run goes
    assert resumed.wait(2.0)
    worker.join(2.0)


def test_a_paused_background_run_can_be_cancelled(monkeypatch):
    priority, cancel = Priority(), threading.Event()
    with priority.foreground():
        cancel.set()
        monkeypatch.setattr(priority._changed, "wait", lambda timeout: pytest.fail("a cancelled run waited"))
        priority.wait_turn(cancel)  # returns without a single wait


def test_background_steps_of_a_workbench_wait_for_its_foreground_runs(mini_workbench):
    """The runner pauses a background run at its next step while a foreground run is in flight."""
    background = mini_workbench.start("When was Grace Hopper born?", "vanilla", background=True)
    taken: list[Step] = []
    with mini_workbench.priority.foreground():
        worker = threading.Thread(target=lambda: [taken.append(step) for step in background])
        worker.start()
        time.sleep(0.8)
        assert not taken  # not even its first step while the foreground run goes
    worker.join(60)
    assert taken and background.trace.answer is not None
    foreground = mini_workbench.start("When was Grace Hopper born?", "vanilla")
    assert [s for s in foreground] and not mini_workbench.priority.busy  # a plain run counts only while it runs
