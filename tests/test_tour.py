"""engine.tour: which question each stop asks, the tour's order, and its progress read from another thread."""

from __future__ import annotations

import threading
import time

from engine.methods.base import method_ids
from engine.runner import Workbench
from engine.tour import FALLBACK_TRIES, SHOWCASE_TYPES, Tour, candidates, tour_order


class GatedWorkbench(Workbench):
    """Holds every run of `method` until `gate` is set: a tour caught half way, deterministically."""

    def __init__(self, pack, settings, method: str):
        super().__init__(pack, settings)
        self.held = method
        self.gate = threading.Event()

    def start(self, question, method, *args, **kwargs):
        if method == self.held:
            self.gate.wait(120)
        return super().start(question, method, *args, **kwargs)


def test_a_method_tries_every_unused_question_of_its_kind_first_then_a_few_others(mini_pack):
    questions = mini_pack.questions
    factoids = [q.id for q in questions if q.type == "factoid"]
    tried = [q.id for q in candidates(questions, "vanilla", used={factoids[0]})]
    assert tried[:len(factoids) - 1] == factoids[1:]
    assert factoids[0] not in tried and len(tried) == len(factoids) - 1 + FALLBACK_TRIES


def test_a_pack_with_fewer_questions_than_methods_asks_its_questions_again(mini_pack):
    every = {q.id for q in mini_pack.questions}
    assert candidates(mini_pack.questions, "ras", used=every)  # rather than no stop at all


def test_the_baseline_opens_the_tour_and_the_users_methods_close_it():
    order = tour_order(("zeta", *sorted(SHOWCASE_TYPES)))
    assert order[0] == "vanilla" and order[-1] == "zeta" and set(order) == {"zeta", *SHOWCASE_TYPES}


def test_the_method_named_as_asked_is_always_the_one_whose_stop_comes_next(mini_pack, settings):
    tour = Tour(Workbench(mini_pack, settings), method_ids(), save=lambda trace: None).start()
    seen = []
    while not tour.done:
        stops, asking = tour.progress()
        if asking is not None:
            seen.append((len(stops), asking))
        time.sleep(0.005)
    assert seen and all(tour.methods[ready] == asking for ready, asking in seen)
    assert [s.method for s in tour.stops] == list(tour.methods)


def test_stop_keeps_the_stops_asked_so_far_and_asks_no_more(mini_pack, settings):
    bench = GatedWorkbench(mini_pack, settings, "rulerag")  # the second stop
    saved = []
    tour = Tour(bench, method_ids(), save=saved.append).start()
    while len(tour.stops) < 1:
        time.sleep(0.05)
    tour.stop()
    bench.gate.set()
    tour.wait(120)
    assert tour.done and tour.progress() == (tour.stops, None)
    assert [s.method for s in tour.stops] == ["vanilla"] and [t.id for t in saved] == [tour.stops[0].trace.id]


class WakeLog(threading.Condition):
    """The tour's condition, recording how each wait on it ended: True when notified, False at its timeout."""

    def __init__(self, lock) -> None:
        super().__init__(lock)
        self.woken: list[bool] = []

    def wait(self, timeout: float | None = None) -> bool:
        woken = super().wait(timeout)
        self.woken.append(woken)
        return woken


def test_a_page_waiting_for_a_stop_wakes_when_it_arrives_not_at_its_timeout(mini_pack, settings):
    bench = GatedWorkbench(mini_pack, settings, "vanilla")  # the first stop waits for the gate
    tour = Tour(bench, method_ids(), save=lambda trace: None)
    tour._changed = changed = WakeLog(tour._lock)
    tour.start()
    assert not tour.wait_for_stop(0, 0.3) and changed.woken == [False]  # nothing yet: the timeout
    threading.Timer(0.3, bench.gate.set).start()
    changed.woken.clear()
    assert tour.wait_for_stop(0, 60.0) and len(tour.stops) >= 1
    assert all(changed.woken)  # woken by the stop's notification, never by the timeout
    tour.stop()
    tour.wait(120)
    assert tour.wait_for_stop(len(tour.stops), 60.0)  # the asking has ended: no wait at all
