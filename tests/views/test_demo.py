"""Demo tour: one question per method, played with captions."""

from __future__ import annotations

from components.captions import STEP_CAPTIONS
from engine.methods.base import method_ids


def test_the_tour_asks_one_question_per_method_and_explains_the_steps(open_app):
    at = open_app("views/demo.py")
    at.session_state["demo.view.vanilla.round.playing"] = False  # no auto-advance sleeps in a test
    at.button(key="demo.start").click().run()
    assert not at.exception
    stops = at.radio(key="demo.stop")
    assert sorted(stops.options) == sorted(stops.format_func(m) for m in method_ids())
    assert stops.value == "vanilla"  # the baseline opens the tour
    assert any("searched the knowledge pack" in c.value for c in at.caption)
    stops.set_value("hybrid").run()
    assert not at.exception and any(c.value in STEP_CAPTIONS.values() for c in at.caption)
