"""The answer card and the error step say plainly when an answer rests on a failed backend (issue 26 item 4),
instead of looking like an ordinary refusal."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

MESSAGE = "reader model failed: the server answered HTTP 500: model crashed"


def _cards(message: str) -> None:
    from components.answer import render_answer
    from engine.evaluation.metrics import score_answer
    from engine.trace import AnswerStep, ErrorStep

    failure = ErrorStep(title="reader fell back", message=message, backend_failure=True)
    idk = AnswerStep(text="I don't know", refused=True, backend="openai", model="tiny-chat")
    render_answer(idk, key="failed", gold=("1906",), scores=score_answer(idk.text, ("1906",), "factoid", True),
                  failure=failure)
    render_answer(idk, key="refused")


def test_the_card_of_an_answer_resting_on_a_failed_backend_says_so_instead_of_showing_a_refusal():
    at = AppTest.from_function(_cards, args=(MESSAGE,)).run()
    assert not at.exception
    shown = [e.value.replace("\\", "") for e in at.error]  # md_text escapes what markdown would render
    assert shown == [f"This answer rests on a failed model/server call: {MESSAGE}"]
    assert [w.value for w in at.warning] == ["I don't know"]  # only the ordinary refusal looks like one
    assert any(c.value.replace("\\", "") == "what the run gave instead: I don't know" for c in at.caption)


def _errors(message: str) -> None:
    from components.error import render_error
    from engine.trace import ErrorStep

    render_error(ErrorStep(title="reader fell back", message=message, backend_failure=True), key="backend")
    render_error(ErrorStep(title="reader fell back", message="reader returned no answer"), key="own")


def test_an_error_step_of_a_failed_backend_says_the_answer_rests_on_it():
    at = AppTest.from_function(_errors, args=(MESSAGE,)).run()
    backend, own = (w.value for w in at.warning)
    assert "the answer rests on this failure" in backend and "the answer rests" not in own
