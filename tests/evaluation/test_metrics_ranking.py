"""MRR and nDCG@k (DESIGN §10) against values worked out by hand on the distinct evidence ranking."""

from __future__ import annotations

import pytest

from engine.evaluation.metrics import ndcg_at, reciprocal_rank
from engine.evaluation.runner import QuestionResult, aggregate, score_trace
from engine.evaluation.saved import parse_results
from engine.knowledge.records import Question
from engine.trace import AnswerStep, Trace

LOG2_3 = 1.5849625007  # log2(3): the discount of rank 2 is 1/log2(3) = 0.6309297536
LOG2_7 = 2.8073549221  # log2(7): rank 6


def test_reciprocal_rank_is_one_over_the_rank_of_the_first_supporting_doc():
    assert reciprocal_rank(["x", "a", "b"], ["b", "a"]) == 0.5
    assert reciprocal_rank(["a", "x"], ["a"]) == 1.0
    assert reciprocal_rank(["x", "y", "z", "b"], ["b"]) == 0.25


def test_reciprocal_rank_is_zero_when_no_supporting_doc_is_retrieved_and_none_without_gold():
    assert reciprocal_rank(["x", "y"], ["a"]) == 0.0
    assert reciprocal_rank([], ["a"]) == 0.0
    assert reciprocal_rank(["a"], []) is None


def test_reciprocal_rank_counts_a_document_once_however_many_of_its_chunks_came_back():
    # chunks of x fill ranks 1-3 of the raw list; x is one document, so a is the 2nd distinct doc
    assert reciprocal_rank(["x", "x", "x", "a"], ["a"]) == 0.5


def test_ndcg_discounts_each_supporting_doc_by_its_rank_and_divides_by_the_ideal_ranking():
    # distinct ranking x, a, b, c; gold {a, b}: DCG = 1/log2(3) + 1/log2(4); IDCG = 1 + 1/log2(3)
    dcg, ideal = 1 / LOG2_3 + 1 / 2, 1 + 1 / LOG2_3
    assert ndcg_at(["x", "a", "x", "b", "c"], ["a", "b"], 5) == pytest.approx(dcg / ideal)
    assert ndcg_at(["x", "a", "x", "b", "c"], ["a", "b"], 5) == pytest.approx(0.693426, abs=1e-6)


def test_ndcg_is_one_for_an_ideal_ranking_and_zero_when_no_gold_doc_is_retrieved():
    assert ndcg_at(["a", "b", "x"], ["b", "a"], 5) == pytest.approx(1.0)
    assert ndcg_at(["a", "a", "b"], ["a", "b"], 5) == pytest.approx(1.0)  # duplicates do not push b down
    assert ndcg_at(["x", "y", "z"], ["a"], 10) == 0.0
    assert ndcg_at([], ["a"], 5) == 0.0
    assert ndcg_at(["a"], [], 5) is None


def test_ndcg_only_counts_the_first_k_distinct_docs():
    ranking = ["x1", "x2", "x3", "x4", "x5", "a"]
    assert ndcg_at(ranking, ["a"], 5) == 0.0
    assert ndcg_at(ranking, ["a"], 10) == pytest.approx(1 / LOG2_7)  # 0.356207
    assert ndcg_at(ranking, ["a"], 10) == pytest.approx(0.356207, abs=1e-6)


def test_ndcg_ideal_is_capped_at_k_and_at_the_number_of_gold_docs():
    # a list shorter than k: one of two gold docs at rank 1; IDCG@10 has only |gold| = 2 terms
    assert ndcg_at(["a"], ["a", "b"], 10) == pytest.approx(1 / (1 + 1 / LOG2_3))  # 0.613147
    # more gold docs than k: five gold docs in the first five ranks is already ideal at k = 5
    gold = ["g1", "g2", "g3", "g4", "g5", "g6"]
    assert ndcg_at(gold[:5] + ["x"], gold, 5) == pytest.approx(1.0)


def _scored(evidence: tuple[str, ...], supporting: tuple[str, ...]) -> QuestionResult:
    question = Question(id="q1", question="q?", answers=("g",), type="factoid", supporting_docs=supporting)
    head = Trace(id="t", question="q?", method="vanilla", backend="offline", model="", pack="p", question_id="q1")
    return score_trace(head.with_steps((AnswerStep(text="g", evidence=evidence, backend="offline"),), 1.0), question)


def test_each_result_carries_its_reciprocal_rank_and_ndcg_and_the_report_their_means_over_questions_with_gold():
    second = _scored(("x", "a", "b"), ("a",))  # rr 1/2, nDCG 1/log2(3)
    first = _scored(("a", "x"), ("a",))  # rr 1, nDCG 1
    no_gold = _scored(("a",), ())
    assert (second.rr, second.ndcg_5, second.ndcg_10) == (0.5, pytest.approx(1 / LOG2_3), pytest.approx(1 / LOG2_3))
    assert (no_gold.rr, no_gold.ndcg_5, no_gold.ndcg_10) == (None, None, None)
    overall = aggregate([second, first, no_gold])
    assert overall["mrr"] == 0.75  # (1/2 + 1) / 2: the question without gold is left out, as MAP leaves it
    assert overall["ndcg@5"] == overall["ndcg@10"] == round((1 / LOG2_3 + 1) / 2, 4)


def test_a_results_csv_written_before_mrr_and_ndcg_reads_back_with_them_empty():
    header = ("method,question_id,type,question,gold,answer,refused,outcome,em,f1,acc,recall_5,recall_10,"
              "recall_all,evidence_len,latency_ms,llm_calls,tokens,trace_id,ap")
    row = "vanilla,q1,factoid,q?,g,g,False,correct,1.0,1.0,1.0,1.0,1.0,1.0,2,1.0,0,0,t,1.0"
    (result,) = parse_results(f"{header}\n{row}\n")
    assert (result.ap, result.rr, result.ndcg_5, result.ndcg_10) == (1.0, None, None, None)
