"""Two evaluations compared pair by pair: known deltas, a pinned paired interval, unpaired questions left out,
metrics without a value skipped, flipped questions with both trace ids, and the settings' differences."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from engine.evaluation.bootstrap import paired_difference
from engine.evaluation.regression import (
    BROKEN,
    FIXED,
    METRICS,
    NOW_REFUSES,
    Setting,
    card_fingerprint,
    compare_evaluations,
    format_comparison,
    metric_value,
    setting_differences,
    setting_of,
)
from engine.evaluation.runner import QuestionResult

SCORE = {"correct": 1.0, "hallucinated": 0.0, "missing": 0.0}


def _result(qid: str, outcome: str, *, method: str = "vanilla", qtype: str = "factoid", side: str = "b",
            recall: float | None = 1.0, confidence: float = 0.5) -> QuestionResult:
    refused = outcome == "missing"
    score = SCORE[outcome]
    return QuestionResult(method=method, question_id=qid, type=qtype, question=f"question {qid}?", gold="gold",
                          answer="I don't know" if refused else f"answer {qid} {side}", refused=refused,
                          outcome=outcome, em=score, f1=score, acc=score, recall_5=recall, recall_10=recall,
                          recall_all=recall, evidence_len=1, latency_ms=1.0, llm_calls=0, tokens=0,
                          trace_id=f"{side}-{method}-{qid}", ap=recall, confidence=confidence)


BEFORE = [_result("q1", "correct"), _result("q2", "missing", recall=None), _result("q3", "correct"),
          _result("q4", "hallucinated", qtype="multi_hop"), _result("q5", "correct"),
          _result("q7", "hallucinated", qtype="multi_hop")]
AFTER = [_result("q1", "correct", side="a"), _result("q2", "correct", side="a", recall=0.0),
         _result("q3", "hallucinated", side="a", recall=0.0), _result("q4", "correct", qtype="multi_hop", side="a"),
         _result("q6", "correct", side="a"), _result("q7", "missing", qtype="multi_hop", side="a")]


def _row(comparison, metric: str, scope: str = "overall", method: str = "vanilla"):
    return next(r for r in comparison.rows if (r.method, r.scope, r.metric) == (method, scope, metric))


def test_deltas_are_paired_by_method_and_question_with_the_bootstrap_interval_pinned_on_seed_0():
    comparison = compare_evaluations(BEFORE, AFTER)
    em = _row(comparison, "em")  # q1..q4, q7 paired: before 1,0,1,0,0 after 1,1,0,1,0
    assert (em.before, em.after, em.n, em.changed) == (pytest.approx(0.4), pytest.approx(0.6), 5, 3)
    assert em.delta.estimate == pytest.approx(0.2)
    assert (round(em.delta.low, 3), round(em.delta.high, 3)) == (-0.4, 0.8)  # pinned: seed 0, 2000 resamples
    assert em.delta == paired_difference([1, 0, 1, 0, 0], [1, 1, 0, 1, 0], seed=0)
    crag = _row(comparison, "crag")  # before +1, 0, +1, −1, −1 → after +1, +1, −1, +1, 0
    assert (crag.before, crag.after) == (pytest.approx(0.0), pytest.approx(0.4))
    coverage = _row(comparison, "coverage")  # q2 now answers, q7 now refuses
    assert (coverage.before, coverage.after, coverage.changed) == (pytest.approx(0.8), pytest.approx(0.8), 2)
    assert comparison.paired == 5


def test_another_seed_gives_another_interval_around_the_same_delta():
    em, other = _row(compare_evaluations(BEFORE, AFTER), "em"), _row(compare_evaluations(BEFORE, AFTER, seed=7),
                                                                      "em")
    assert other.delta.estimate == em.delta.estimate and other.delta == paired_difference(
        [1, 0, 1, 0, 0], [1, 1, 0, 1, 0], seed=7)


def test_pairs_on_one_side_only_are_counted_per_method_and_left_out_of_every_delta():
    extra = [_result("q8", "correct", method="hybrid"), _result("q9", "correct", method="hybrid")]
    comparison = compare_evaluations([*BEFORE, *extra], AFTER)
    counts = {u.method: (u.only_before, u.only_after) for u in comparison.unpaired}
    assert counts == {"vanilla": (1, 1), "hybrid": (2, 0)}  # q5 before only, q6 after only; hybrid never after
    assert {r.n for r in comparison.rows if r.scope == "overall" and r.metric == "em"} == {5}
    assert not any(r.method == "hybrid" for r in comparison.rows)  # no pairs: no row with n = 0
    assert "left out of every delta" in format_comparison(comparison)


def test_a_metric_without_a_value_on_one_side_uses_only_the_pairs_that_have_both():
    comparison = compare_evaluations(BEFORE, AFTER)
    recall = _row(comparison, "recall_5")  # q2 has no gold documents before
    assert recall.n == 4 and recall.before == pytest.approx(1.0) and recall.after == pytest.approx(0.75)
    assert _row(comparison, "em").n == 5


def test_rr_and_ndcg_are_compared_only_when_the_results_carry_them():
    assert not any(r.metric in ("rr", "ndcg_10") for r in compare_evaluations(BEFORE, AFTER).rows)

    @dataclass(frozen=True)
    class Ranked(QuestionResult):  # the fields another part of issue 28 adds to QuestionResult
        rr: float | None = None
        ndcg_10: float | None = None

    def ranked(results, rr):
        return [Ranked(**{**r.__dict__, "rr": value}) for r, value in zip(results, rr)]

    comparison = compare_evaluations(ranked(BEFORE, [1.0, 0.5, 1.0, None, 1.0, 1.0]),
                                     ranked(AFTER, [1.0, 0.5, 0.5, 1.0, 1.0, 1.0]))
    rr = _row(comparison, "rr")
    assert (rr.n, rr.before, rr.after) == (4, pytest.approx(0.875), pytest.approx(0.75))
    assert not any(r.metric == "ndcg_10" for r in comparison.rows)  # None on every question


def test_rows_come_per_method_overall_first_then_each_question_type_in_the_usual_order():
    comparison = compare_evaluations(BEFORE, AFTER)
    assert list(dict.fromkeys(r.scope for r in comparison.rows)) == ["overall", "factoid", "multi_hop"]
    assert [r.metric for r in comparison.rows if r.scope == "overall"] == [
        m for m in METRICS if m not in ("rr", "ndcg_10")]
    multi_hop = _row(comparison, "em", "multi_hop")  # q4 0 → 1, q7 0 → 0
    assert (multi_hop.n, multi_hop.delta.estimate) == (2, pytest.approx(0.5))


def test_flipped_questions_carry_both_answers_outcomes_and_trace_ids_regressions_first():
    flips = compare_evaluations(BEFORE, AFTER).flips
    assert [(f.kind, f.question_id) for f in flips] == [(BROKEN, "q3"), (FIXED, "q2"), (FIXED, "q4"),
                                                        (NOW_REFUSES, "q7")]
    broken = flips[0]
    assert (broken.outcome_before, broken.outcome_after) == ("correct", "hallucinated")
    assert (broken.answer_before, broken.answer_after) == ("answer q3 b", "answer q3 a")
    assert (broken.trace_before, broken.trace_after) == ("b-vanilla-q3", "a-vanilla-q3")
    assert (broken.confidence_before, broken.confidence_after, broken.type) == (0.5, 0.5, "factoid")


def test_the_first_of_a_repeated_pair_is_the_one_compared():
    again = _result("q1", "hallucinated", side="again")
    comparison = compare_evaluations([*BEFORE, again], AFTER)
    assert _row(comparison, "em").before == pytest.approx(0.4)


def test_metric_values_crag_and_coverage_are_per_question_scores():
    assert [metric_value(_result("q", o), "crag") for o in ("correct", "hallucinated", "missing")] == [1, -1, 0]
    assert [metric_value(_result("q", o), "coverage") for o in ("correct", "missing")] == [1, 0]
    assert metric_value(_result("q", "correct", recall=None), "recall_5") is None
    assert metric_value(_result("q", "correct"), "ndcg_10") is None  # a field these results lack


def test_settings_differences_are_listed_and_another_pack_fingerprint_is_a_warning():
    before = Setting("mini", "aaaa", ("offline",), (("vanilla", "k", "5"), ("vanilla", "min_confidence", "0.5")))
    after = Setting("mini", "bbbb", ("hf /models/qwen",), (("vanilla", "k", "1"), ("vanilla", "min_confidence",
                                                                                    "0.5")))
    differences, warnings = setting_differences(before, after)
    assert differences == ("model: offline → hf /models/qwen", "vanilla k: 5 → 1")
    assert len(warnings) == 1 and "fingerprint aaaa → bbbb" in warnings[0]
    assert setting_differences(before, before) == ((), ())
    unknown = setting_differences(Setting("mini"), Setting("geo"))[0]
    assert unknown[0] == "pack: mini → geo" and "unknown on both sides" in unknown[1]


def test_a_setting_compared_lists_its_differences_in_the_comparison_and_its_text():
    settings = (Setting("mini", "aaaa", ("offline",)), Setting("mini", "bbbb", ("offline",)))
    comparison = compare_evaluations(BEFORE, AFTER, settings=settings)
    text = format_comparison(comparison, "runs/k5", "runs/k1")
    assert comparison.warnings and text.splitlines()[:2] == ["before: runs/k5", "after:  runs/k1"]
    assert "warning: the packs' documents differ" in text
    assert "+0.200 [-0.400, +0.800] n=5" in text
    assert "broken      vanilla q3 (factoid): correct → hallucinated" in text
    assert "multi_hop      unchanged on every question: recall_5, ap" in text  # q4 and q7 kept theirs


def test_backend_options_are_compared_without_the_model_or_an_api_key():
    from engine.trace import Trace

    trace = Trace(id="t", question="q", method="vanilla", backend="hf", model="/models/qwen", pack="mini")
    nf4 = setting_of([trace], options={"model": "/models/qwen", "quantization": "nf4", "api_key": "secret"})
    plain = setting_of([trace], options=(("model", "/models/qwen"), ("quantization", "none")))
    assert nf4.options == (("quantization", "nf4"),) and nf4.models == ("hf /models/qwen",)
    differences = setting_differences(nf4, plain)[0]
    assert "backend options: quantization=nf4 → quantization=none" in differences
    assert not any("secret" in d for d in differences)


def test_a_run_cards_fingerprint_is_read_wherever_it_is_kept():
    assert card_fingerprint(None) == "" and card_fingerprint({}) == ""
    assert card_fingerprint({"pack": "mini", "pack_fingerprint": "def"}) == "def"  # eval's run_card.json


def test_the_comparison_is_plain_data_for_json():
    data = compare_evaluations(BEFORE, AFTER).to_dict()
    assert data["rows"][0]["delta"]["n"] == 5 and data["flips"][0]["trace_before"] == "b-vanilla-q3"
