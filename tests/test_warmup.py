"""The background warm-up: prepares index, tools and every method; reports failure; cancels cleanly."""

from __future__ import annotations

import threading

from engine.runner import Workbench
from engine.warmup import Warmup


def test_a_warmup_prepares_the_index_and_runs_every_method_once(mini_pack, settings, monkeypatch):
    bench = Workbench(mini_pack, settings)
    asked: list[str] = []
    original = bench.start
    monkeypatch.setattr(bench, "start", lambda q, m, **kw: asked.append(m) or original(q, m, **kw))
    status = Warmup(bench).start().wait(300)
    assert status.done and status.stage == "ready" and status.error == ""
    from engine.methods import method_ids
    from engine.tour import tour_order

    assert asked == list(tour_order(method_ids())) and asked[0] == "vanilla"  # the quickest first, as the tour
    assert bench.retrieval.ensure_index() is None  # already synced: the user's first question pays nothing


def test_a_method_that_cannot_be_created_is_skipped_and_the_rest_warm_up(mini_pack, settings, monkeypatch):
    from engine.errors import RagscopeError

    bench = Workbench(mini_pack, settings)
    asked: list[str] = []
    original = bench.start

    def start(q, m, **kw):
        if m == "tog2":
            raise RagscopeError("method 'tog2' could not be created: KeyError: 'x'")
        asked.append(m)
        return original(q, m, **kw)

    monkeypatch.setattr(bench, "start", start)
    status = Warmup(bench).start().wait(300)
    assert status.done and status.stage == "ready" and status.error == ""
    assert "tog2" not in asked and "vanilla" in asked and "ras" in asked


def test_a_failing_warmup_reports_why_and_never_raises(mini_pack, settings, monkeypatch):
    bench = Workbench(mini_pack, settings)

    def broken(*_args, **_kwargs):
        raise OSError("disk full")

    monkeypatch.setattr(bench.retrieval, "ensure_index", broken)
    status = Warmup(bench).start().wait(60)
    assert status.done and status.stage == "failed" and status.error == "OSError: disk full"


def test_cancel_stops_it_between_steps(mini_pack, settings, monkeypatch):
    bench = Workbench(mini_pack, settings)
    gate = threading.Event()
    original = bench.retrieval.ensure_index

    def slow(progress=None):
        gate.wait(10)
        return original(progress)

    monkeypatch.setattr(bench.retrieval, "ensure_index", slow)
    warmup = Warmup(bench).start()
    threading.Timer(0.2, gate.set).start()
    warmup.cancel()  # what the interpreter does at exit
    status = warmup.status
    assert status.done and status.stage == "cancelled"


def test_the_sidebar_shows_the_warmup_status(open_app):
    at = open_app()
    assert not at.exception
    assert any("Preparing in the background" in c.value or "Ready: index, tools and methods" in c.value
               for c in at.sidebar.caption)
