"""Metric definitions of DESIGN §10."""

from __future__ import annotations

import pytest

from engine.evaluation.metrics import exact_match, normalize, recall_at, score_answer, token_f1


def test_normalize_drops_case_punctuation_and_articles():
    assert normalize("The  Nobel Prize, in Physics!") == "nobel prize in physics"


def test_exact_match_and_f1_take_the_best_alias():
    assert exact_match("the Warsaw", ["Warszawa", "Warsaw"]) == 1.0
    assert token_f1("Marie Curie", "Marie Skłodowska Curie") == pytest.approx(0.8)


def test_set_questions_score_by_the_share_of_gold_items_named():
    scores = score_answer("Bohr and Curie", ["Curie", "Bohr", "Planck", "Rutherford"], "set")
    assert scores.acc == 0.5 and scores.em == 0.0
    assert scores.f1 == pytest.approx(2 / 3)  # precision 1, recall 0.5


def test_an_over_inclusive_set_answer_is_not_a_full_answer():
    golds = ["Oslo", "Bergen"]
    listed_more = score_answer("Oslo, Bergen, Trondheim and Stavanger", golds, "set")
    assert listed_more.acc == 1.0  # every gold item is named …
    assert listed_more.f1 == pytest.approx(2 * 0.5 * 1 / 1.5) and listed_more.em == 0.0  # … and as many wrong ones
    assert listed_more.outcome == "hallucinated"
    exact = score_answer("Bergen and Oslo", golds, "set")
    assert (exact.em, exact.f1, exact.outcome) == (1.0, 1.0, "correct")


def test_set_items_that_are_parts_of_a_gold_item_are_not_counted_wrong():
    scores = score_answer("Marks and Spencer; Tesco", ["Marks and Spencer", "Tesco"], "set")
    assert scores.em == 1.0 and scores.outcome == "correct"


def test_normalisation_keeps_squads_known_quirk():
    """Documented in normalize: answers that differ only in punctuation are one answer."""
    assert normalize("C") == normalize("C++") == normalize("C#") == "c"
    assert exact_match("C++", ["C#"]) == 1.0


def test_refusals_are_missing_and_wrong_answers_hallucinated():
    assert score_answer("I don't know", ["1906"], "factoid", refused=True).outcome == "missing"
    assert score_answer("1907", ["1906"], "factoid").outcome == "hallucinated"
    assert score_answer("born in 1906", ["1906"], "factoid").outcome == "correct"


def test_contains_does_not_match_inside_longer_numbers():
    assert score_answer("19061", ["1906"], "factoid").acc == 0.0


def test_recall_needs_every_supporting_doc_within_k_distinct_docs():
    evidence = ["a", "a", "b", "c", "d"]
    assert recall_at(evidence, ["a", "c"], 3) == 1.0
    assert recall_at(evidence, ["a", "d"], 3) == 0.0
    assert recall_at(evidence, ["a", "d"], None) == 1.0
    assert recall_at(evidence, [], 5) is None


def test_false_premise_is_correct_only_when_called_invalid_and_missing_when_refused():
    gold = ["invalid question"]
    assert score_answer("invalid question", gold, "false_premise").outcome == "correct"
    assert score_answer("I don't know", gold, "false_premise", refused=True).outcome == "missing"
    assert score_answer("1922", gold, "false_premise").outcome == "hallucinated"
