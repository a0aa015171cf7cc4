"""The refusal policy: dynamic questions get "I don't know" at a configurable threshold."""

from __future__ import annotations

import pytest

from engine.methods.hybrid.attributes import Attributes
from engine.methods.hybrid.policy import dynamic_gate, false_premise
from engine.tools.base import IDK


def attrs(dynamism: str) -> Attributes:
    return Attributes("simple", 0.9, dynamism, 0.8, "logreg")


@pytest.mark.parametrize(("dynamism", "threshold", "gated"), [
    ("real-time", "fast-changing", True), ("fast-changing", "fast-changing", True),
    ("slow-changing", "fast-changing", False), ("static", "fast-changing", False),
    ("fast-changing", "real-time", False), ("slow-changing", "slow-changing", True), ("real-time", "off", False),
])
def test_the_gate_refuses_questions_at_least_as_dynamic_as_the_threshold(dynamism, threshold, gated) -> None:
    verdict = dynamic_gate(attrs(dynamism), threshold)
    assert (verdict.answer == IDK) is gated
    assert verdict.route == ("dynamic_gate" if gated else "continue")


@pytest.mark.parametrize(("second", "gated"), [("static", False), ("slow-changing", False), ("real-time", True),
                                               ("", True)])
def test_an_icl_dynamic_label_refuses_only_when_the_embedding_classifier_agrees(second, gated) -> None:
    verdict = dynamic_gate(Attributes("simple", 1.0, "fast-changing", 1.0, "icl", second_dynamism=second),
                           "fast-changing")
    assert (verdict.answer == IDK) is gated
    assert gated or "refused unread only when both call it dynamic" in verdict.reason


def test_a_false_premise_answers_invalid_question() -> None:
    assert false_premise("no such prize").answer == "invalid question"
