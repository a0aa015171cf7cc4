"""Demo tour: one question per method, played with captions."""

from __future__ import annotations



from engine.methods.base import method_ids


def test_the_tour_asks_one_question_per_method_and_explains_the_steps(open_app):
    at = open_app("views/demo.py")
    at.session_state["demo.view.vanilla.round.playing"] = False  # no auto-advance sleeps in a test
    at.button(key="demo.start").click().run()
    assert not at.exception
    assert at.radio(key="demo.stop").options == [at.radio(key="demo.stop").format_func(m) for m in method_ids()]
    assert any("searched the knowledge pack" in c.value for c in at.caption)
