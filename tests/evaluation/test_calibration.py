"""Calibration: reliability bins and ECE over answered questions, with values worked out by hand."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.evaluation.calibration import (
    expected_calibration_error,
    mean_confidence,
    reliability,
    reliability_by_method,
)
from engine.evaluation.runner import QuestionResult, aggregate, score_trace, summarise
from engine.knowledge.records import Question
from engine.trace import AnswerStep, ErrorStep, Trace


def result(confidence: float, correct: bool, *, refused: bool = False, method: str = "vanilla") -> QuestionResult:
    outcome = "missing" if refused else "correct" if correct else "hallucinated"
    return QuestionResult(method=method, question_id="q", type="factoid", question="q", gold="g", answer="a",
                          refused=refused, outcome=outcome, em=float(correct), f1=float(correct),
                          acc=float(correct), recall_5=None, recall_10=None, recall_all=None, evidence_len=0,
                          latency_ms=1.0, llm_calls=0, tokens=0, trace_id="t", confidence=confidence)


def test_perfectly_calibrated_answers_have_an_ece_of_zero():
    results = ([result(0.8, True)] * 8 + [result(0.8, False)] * 2
               + [result(0.25, True)] + [result(0.25, False)] * 3)
    diagram = reliability(results)
    assert diagram.ece == 0.0
    assert [b.count for b in diagram.bins] == [0, 0, 4, 0, 0, 0, 0, 0, 10, 0]
    assert (diagram.bins[8].confidence, diagram.bins[8].accuracy) == pytest.approx((0.8, 0.8))


def test_always_fully_confident_and_half_right_has_an_ece_of_one_half():
    diagram = reliability([result(1.0, True), result(1.0, False)] * 2)
    assert diagram.ece == 0.5
    assert diagram.bins[-1].count == 4 and diagram.bins[-1].upper == 1.0  # 1.0 falls in the last bin
    assert (diagram.bins[-1].confidence, diagram.bins[-1].accuracy) == (1.0, 0.5)


def test_ece_weights_each_bins_gap_by_its_share_of_the_answers():
    # bin 9: mean 0.925, accuracy 0.5, gap 0.425, weight 2/4; bin 3: 0.3 vs 1.0, weight 1/4; bin 0: no gap
    results = [result(0.9, True), result(0.95, False), result(0.3, True), result(0.0, False)]
    diagram = reliability(results)
    assert [b.count for b in diagram.bins] == [1, 0, 0, 1, 0, 0, 0, 0, 0, 2]
    assert diagram.ece == pytest.approx(2 / 4 * 0.425 + 1 / 4 * 0.7)
    assert expected_calibration_error(diagram.bins) == diagram.ece


def test_nothing_answered_has_no_ece_and_empty_bins():
    for results in ([], [result(0.9, False, refused=True)]):
        diagram = reliability(results)
        assert diagram.ece is None and diagram.answered == 0
        assert all(b.count == 0 and b.confidence is None and b.accuracy is None for b in diagram.bins)
        assert mean_confidence(results) is None


def test_refused_questions_are_counted_but_left_out_of_the_bins():
    answered = [result(1.0, True), result(1.0, False)]
    diagram = reliability(answered + [result(0.9, False, refused=True)] * 3)
    assert (diagram.answered, diagram.refused) == (2, 3)
    assert diagram.ece == reliability(answered).ece == 0.5
    assert sum(b.count for b in diagram.bins) == 2


def test_a_confidence_on_a_bin_edge_opens_that_bin_and_out_of_range_ones_go_to_the_end_bins():
    edges = reliability([result(0.7, True), result(0.1, True)])
    assert [b.count for b in edges.bins] == [0, 1, 0, 0, 0, 0, 0, 1, 0, 0]
    assert reliability([result(0.57, True)], bins=100).bins[57].count == 1  # 0.57 * 100 is 56.99999999999999
    clamped = reliability([result(-0.2, False), result(1.3, True)])
    assert (clamped.bins[0].count, clamped.bins[-1].count) == (1, 1)


def test_bins_cover_zero_to_one_in_equal_steps():
    bins = reliability([], bins=4).bins
    assert [(b.lower, b.upper) for b in bins] == [(0.0, 0.25), (0.25, 0.5), (0.5, 0.75), (0.75, 1.0)]
    with pytest.raises(ValueError, match="bins must be at least 1"):
        reliability([], bins=0)


def test_aggregate_reports_ece_and_mean_confidence_over_answered_questions():
    metrics = aggregate([result(1.0, True), result(0.5, False), result(0.9, False, refused=True)])
    # bin 9: 1.0 vs 1.0; bin 5: 0.5 vs 0.0 → ECE = 1/2 · 0.5
    assert (metrics["confidence"], metrics["ece"]) == (0.75, 0.25)
    assert aggregate([result(0.9, False, refused=True)])["ece"] is None


def test_summarise_keeps_each_methods_bins_for_drawing():
    report = summarise([result(1.0, True), result(0.2, False, method="tog2")])
    assert list(report) == ["vanilla", "tog2"]
    tog2 = report["tog2"]["reliability"]
    assert (tog2["ece"], tog2["answered"], tog2["refused"]) == (0.2, 1, 0)
    assert len(tog2["bins"]) == 10
    assert tog2["bins"][2] == {"lower": 0.2, "upper": 0.3, "count": 1, "confidence": 0.2, "accuracy": 0.0}
    assert report["tog2"]["overall"]["ece"] == 0.2


def test_reliability_by_method_keeps_the_order_methods_first_appear_in():
    results = [result(0.5, True, method="ras"), result(0.5, True, method="vanilla"), result(0.5, True, method="ras")]
    diagrams = reliability_by_method(results)
    assert list(diagrams) == ["ras", "vanilla"] and diagrams["ras"].answered == 2


def test_score_trace_takes_the_answers_confidence_and_zero_without_an_answer():
    question = Question(id="q1", question="When?", answers=("1906",), type="factoid")
    head = Trace(id="t", question="When?", method="vanilla", backend="offline", model="", pack="p")
    answered = head.with_steps((AnswerStep(title="Answer", text="1906", confidence=0.62),), 1.0)
    unanswered = head.with_steps((ErrorStep(title="Failed", message="boom"),), 1.0)
    assert score_trace(answered, question).confidence == 0.62
    assert score_trace(unanswered, question).confidence == 0.0


def test_a_refusals_held_back_guess_is_scored_for_auroc_and_a_methods_own_refusal_is_not():
    question = Question(id="q1", question="When?", answers=("1906",), type="factoid")
    head = Trace(id="t", question="When?", method="vanilla", backend="offline", model="", pack="p")

    def scored(**answer) -> QuestionResult:
        return score_trace(head.with_steps((AnswerStep(title="Answer", **answer),), 1.0), question)

    held_back = scored(text="I don't know", refused=True, confidence=0.3, guess="1906")
    assert (held_back.outcome, held_back.guess_correct) == ("missing", True)
    assert scored(text="1907", confidence=0.9).guess_correct is False
    assert scored(text="I don't know", refused=True).guess_correct is None


def test_aggregate_reports_auroc_over_every_answer_refused_or_not():
    def ranked(confidence: float, right: bool | None, refused: bool = False) -> QuestionResult:
        return replace(result(confidence, bool(right), refused=refused), guess_correct=right)

    # a right guess refused at 0.4 is outranked by a wrong answer at 0.6: 3 of the 4 pairs ordered well
    results = [ranked(0.9, True), ranked(0.4, True, refused=True), ranked(0.6, False), ranked(0.2, False),
               ranked(0.0, None, refused=True)]  # a method's own refusal names nothing to rank
    metrics = aggregate(results)
    assert metrics["auroc"] == 0.75 and metrics["ece"] is not None
    assert aggregate([ranked(0.9, True)])["auroc"] is None
    assert summarise(results)["vanilla"]["overall"]["auroc"] == 0.75
