"""Demo tour: one question per method, played stop by stop and round by round with captions."""

from __future__ import annotations

import time
from collections.abc import Iterator

from components.captions import STEP_CAPTIONS
from components.trace_view import rounds_of
from engine.methods.base import METHODS, method_ids
from engine.runs import RunStore
from engine.tour import SHOWCASE_TYPES, Tour
from test_tour import GatedWorkbench


def _played(open_app):
    """The app after a whole tour, played to its end with no click but Start (pace 0.5 s)."""
    at = open_app("views/demo.py", timeout=300)
    at.slider(key="demo.pace").set_value(0.5)
    at.button(key="demo.start").click().run()
    assert not at.exception
    return at


def _stops(at) -> dict:
    return {stop.method: stop.trace for stop in at.session_state["demo.tour"].stops}


def _outside_expanders(node) -> Iterator:
    """Every element drawn on the page itself, not folded away in an expander."""
    if getattr(node, "type", "") == "expander":
        return
    yield node
    for child in getattr(node, "children", {}).values():
        yield from _outside_expanders(child)


def test_the_tour_plays_every_stop_and_round_by_itself_and_ends_on_the_last_answer(open_app):
    at = _played(open_app)
    traces = _stops(at)
    order = list(traces)
    assert order[0] == "vanilla" and sorted(order) == sorted(method_ids())  # the baseline opens the tour
    assert at.session_state["demo.playing"] is False  # it stopped at the end
    last = order[-1]
    assert at.radio(key="demo.stop").value == last
    assert at.session_state[f"demo.view.{last}.round"] == rounds_of(traces[last])[-1]
    assert any(c.value in STEP_CAPTIONS.values() for c in at.caption)
    assert at.button(key="demo.play").label == "Play"


def test_stops_can_be_stepped_by_hand_and_open_on_their_first_round(open_app):
    at = _played(open_app)
    traces = _stops(at)
    order = list(traces)
    at.button(key="demo.back").click().run()  # from the last stop to the one before, paused
    before = order[-2]
    assert at.radio(key="demo.stop").value == before and at.session_state["demo.playing"] is False
    assert at.session_state[f"demo.view.{before}.round"] == rounds_of(traces[before])[0]
    assert any(m.value.startswith(f"Stop {len(order) - 1} of {len(order)}") for m in at.subheader)
    assert any(c.value in STEP_CAPTIONS.values() for c in at.caption)


def test_the_tour_opens_on_an_answer_and_no_stop_refuses_what_its_method_answers(open_app, mini_workbench):
    """Issue 22: the tour opened on "I don't know". A stop may refuse only when its method refuses every
    other question of the stop's kind that no other stop asks."""
    at = _played(open_app)
    traces = _stops(at)
    first = next(iter(traces.values()))
    assert first.answer is not None and not first.answer.refused
    pack = mini_workbench.pack
    asked = {t.question_id for t in traces.values()}
    for method, trace in traces.items():
        if trace.answer.refused:
            others = [q for q in pack.questions if q.type == SHOWCASE_TYPES.get(method) and q.id not in asked]
            assert all(mini_workbench.ask(q.question, method, question_id=q.id).answer.refused for q in others)


def test_every_stop_asks_a_different_question(open_app):
    at = _played(open_app)
    questions = [t.question_id for t in _stops(at).values()]
    assert len(set(questions)) == len(questions) == len(method_ids())


def test_every_tour_run_is_saved_to_history(open_app, settings):
    at = _played(open_app)
    store = RunStore(settings.runs_db)
    assert all(store.has(trace.id) for trace in _stops(at).values())


def test_each_round_is_told_in_plain_words_and_its_internals_are_folded_away(open_app):
    """Method internals (route names, classifier labels and scores: badges) only inside an expander."""
    at = _played(open_app)
    traces = _stops(at)
    checked = 0
    for method, trace in traces.items():
        at.radio(key="demo.stop").set_value(method).run()
        for iteration in rounds_of(trace):
            if len(rounds_of(trace)) > 1:
                at.select_slider(key=f"demo.view.{method}.round").set_value(iteration).run()
            shown = [e for e in _outside_expanders(at.main) if isinstance(getattr(e, "value", None), str)]
            assert not [e.value for e in shown if "-badge[" in e.value], (method, iteration)
            story = [e.value for e in shown if e.value in STEP_CAPTIONS.values()]
            kinds = {s.kind for s in trace.steps if s.iteration == iteration and s.kind != "answer"}
            assert len(story) == len(kinds & STEP_CAPTIONS.keys()), (method, iteration)
            checked += bool(kinds & {"decision", "attributes"})
    assert checked, "no round of the tour had a decision or attributes step to fold away"


def test_while_later_stops_are_asked_the_first_shows_with_the_method_being_asked_and_stop(
        open_app, mini_pack, settings):
    """Issue 22: a bare "Asking…" bar named the wrong method, with nothing to look at and no Stop."""
    bench = GatedWorkbench(mini_pack, settings, "rulerag")  # held: the tour is caught asking for stop 2
    tour = Tour(bench, method_ids(), save=lambda trace: None).start()
    while not tour.stops:
        time.sleep(0.05)
    at = open_app("views/demo.py")
    at.session_state["demo.tour"] = tour
    at.run()
    assert not at.exception
    first, second = (METHODS[m].label for m in tour.methods[:2])
    assert any(s.value == f"Stop 1 of {len(tour.methods)}: {first}" for s in at.subheader)
    asking = [c.value for c in at.caption if "asking" in c.value]
    assert len(asking) == 1 and f"**{second}**" in asking[0] and first not in asking[0]
    at.button(key="demo.cancel").click().run()
    assert tour.stopped
    bench.gate.set()
    tour.wait(120)
    at.run()
    assert any("Stopped asking" in c.value for c in at.caption) and len(tour.stops) == 1
