"""Demo tour: one question per method, played stop by stop and round by round with captions."""

from __future__ import annotations

from components.captions import STEP_CAPTIONS
from components.trace_view import rounds_of
from engine.methods.base import method_ids


def test_the_tour_plays_every_stop_and_round_by_itself_and_ends_on_the_last_answer(open_app):
    at = open_app("views/demo.py", timeout=300)
    at.slider(key="demo.pace").set_value(0.5)
    at.button(key="demo.start").click().run()  # no other click: the tour plays to its end
    assert not at.exception
    traces = at.session_state["demo.traces"]
    order = list(traces)
    assert order[0] == "vanilla" and sorted(order) == sorted(method_ids())  # the baseline opens the tour
    assert at.session_state["demo.playing"] is False  # it stopped at the end
    last = order[-1]
    assert at.radio(key="demo.stop").value == last
    assert at.session_state[f"demo.view.{last}.round"] == rounds_of(traces[last])[-1]
    assert any(c.value in STEP_CAPTIONS.values() for c in at.caption)
    assert at.button(key="demo.play").label == "Play"


def test_stops_can_be_stepped_by_hand_and_open_on_their_first_round(open_app):
    at = open_app("views/demo.py", timeout=300)
    at.slider(key="demo.pace").set_value(0.5)
    at.button(key="demo.start").click().run()
    traces = at.session_state["demo.traces"]
    order = list(traces)
    at.button(key="demo.back").click().run()  # from the last stop to the one before, paused
    before = order[-2]
    assert at.radio(key="demo.stop").value == before and at.session_state["demo.playing"] is False
    assert at.session_state[f"demo.view.{before}.round"] == rounds_of(traces[before])[0]
    assert any(m.value.startswith(f"Stop {len(order) - 1} of {len(order)}") for m in at.subheader)
    assert any(c.value in STEP_CAPTIONS.values() for c in at.caption)
