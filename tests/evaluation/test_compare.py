"""Chunk overlap between methods and the flattened metric tables behind the Compare and Evaluate pages."""

from __future__ import annotations

import csv
import io

import pytest

from engine.evaluation.compare import metric_rows, overlap, pick_questions, results_csv, retrieved_docs, trace_overlap
from engine.evaluation.runner import QuestionResult, summarise
from engine.knowledge.records import Question
from engine.trace import AnswerStep, Hit, RetrievalStep, Trace


def _hit(doc: str, rank: int) -> Hit:
    return Hit(doc_id=doc, chunk_id=f"{doc}#{rank}", title=doc, text="", score=1.0 / rank, rank=rank)


def _trace(method: str, *rounds: tuple[str, ...]) -> Trace:
    steps = [RetrievalStep(iteration=i, query="q", retriever="bm25", hits=tuple(_hit(d, r) for r, d in
                                                                                 enumerate(docs, 1)))
             for i, docs in enumerate(rounds, 1)]
    steps.append(AnswerStep(text="x"))
    return Trace(id=method, question="q", method=method, backend="offline", model="", pack="p",
                 steps=tuple(steps))


def test_retrieved_docs_are_distinct_over_rounds_in_first_seen_order():
    trace = _trace("ras", ("d2", "d1", "d2"), ("d3", "d1"))
    assert retrieved_docs(trace) == ("d2", "d1", "d3")


def test_overlap_is_the_share_of_distinct_docs_two_methods_have_in_common():
    result = overlap({"a": ["d1", "d2", "d3"], "b": ["d2", "d3", "d4", "d2"], "c": []})
    assert result.methods == ("a", "b", "c")
    assert result.docs[1] == ("d2", "d3", "d4")
    assert result.common[0][1] == 2 and result.union[0][1] == 4
    assert result.share[0][1] == pytest.approx(0.5) == result.share[1][0]
    assert result.share[0][0] == result.share[1][1] == 1.0


def test_a_method_that_retrieved_nothing_shares_nothing_even_with_itself():
    result = overlap({"a": ["d1"], "c": []})
    assert result.share == ((1.0, 0.0), (0.0, 0.0))


def test_trace_overlap_labels_rows_by_method():
    result = trace_overlap([_trace("vanilla", ("d1", "d2")), _trace("rulerag", ("d2",), ("d3",))])
    assert result.methods == ("vanilla", "rulerag")
    assert result.share[0][1] == pytest.approx(1 / 3)


def _result(method: str, qtype: str, acc: float) -> QuestionResult:
    return QuestionResult(method=method, question_id=f"{method}-{qtype}", type=qtype, question="q, \"quoted\"",
                          gold="g", answer="a", refused=False, outcome="correct" if acc else "hallucinated",
                          em=acc, f1=acc, acc=acc, recall_5=1.0, recall_10=1.0, recall_all=1.0, evidence_len=3,
                          latency_ms=5.0, llm_calls=0, tokens=0, trace_id="t")


def test_metric_rows_give_overall_then_each_type_per_method():
    results = [_result("vanilla", "factoid", 1.0), _result("vanilla", "numeric", 0.0), _result("tog2", "factoid", 1.0)]
    rows = metric_rows(summarise(results))
    assert [(r["method"], r["scope"], r["n"]) for r in rows] == [
        ("vanilla", "overall", 2), ("vanilla", "factoid", 1), ("vanilla", "numeric", 1),
        ("tog2", "overall", 1), ("tog2", "factoid", 1)]
    assert rows[0]["acc"] == 0.5 and "recall@5" in rows[0] and "crag_score" in rows[0]


def test_results_csv_has_one_row_per_result_and_quotes_commas():
    text = results_csv([_result("vanilla", "factoid", 1.0), _result("tog2", "set", 0.0)])
    rows = list(csv.DictReader(io.StringIO(text)))
    assert [r["method"] for r in rows] == ["vanilla", "tog2"]
    assert rows[0]["question"] == 'q, "quoted"'
    assert list(rows[0]) == list(QuestionResult.__dataclass_fields__)


def _question(qid: str, qtype: str) -> Question:
    return Question(id=qid, question=qid, answers=("a",), type=qtype)


def test_pick_questions_takes_each_chosen_type_in_turn_up_to_the_limit():
    pool = [_question("f1", "factoid"), _question("f2", "factoid"), _question("f3", "factoid"),
            _question("n1", "numeric"), _question("s1", "set"), _question("n2", "numeric")]
    assert [q.id for q in pick_questions(pool, ["factoid", "numeric"], 4)] == ["f1", "n1", "f2", "n2"]
    assert [q.id for q in pick_questions(pool, ["factoid", "numeric"], 10)] == ["f1", "n1", "f2", "n2", "f3"]
    assert pick_questions(pool, [], 5) == []


def test_shared_evidence_counts_documents_another_trace_also_answered_from():
    from engine.evaluation.compare import shared_evidence
    from engine.trace import AnswerStep, Trace

    def answered(method: str, *docs: str) -> Trace:
        head = Trace(id=method, question="q", method=method, backend="offline", model="", pack="p")
        return head.with_steps((AnswerStep(iteration=1, text="a", evidence=docs),), 1.0)

    unanswered = Trace(id="x", question="q", method="x", backend="offline", model="", pack="p")
    traces = [answered("a", "d1", "d2"), answered("b", "d2", "d3", "d2"), answered("c", "d4"), unanswered]
    assert shared_evidence(traces) == (1, 1, 0, 0)
