"""Vanilla RAG end to end on the offline backend."""

from __future__ import annotations

from engine.trace import AnswerStep, RetrievalStep


def kinds(trace):
    return [(s.kind, s.iteration) for s in trace.steps]


def test_vanilla_retrieves_once_then_answers(mini_workbench):
    trace = mini_workbench.ask("When was Grace Hopper born?", "vanilla")
    assert kinds(trace) == [("retrieval", 1), ("answer", 1)]
    retrieval, answer = trace.steps
    assert isinstance(retrieval, RetrievalStep) and len(retrieval.hits) == 5
    assert all(h.provenance == "question" for h in retrieval.hits)
    assert isinstance(answer, AnswerStep) and answer.text == "1906" and "m07" in answer.citations
    assert answer.backend == "offline" and "no language model" in answer.model
    assert answer.evidence[0] == "m07"


def test_vanilla_honours_k_and_retriever_params(mini_workbench):
    trace = mini_workbench.ask("Who designed the Analytical Engine?", "vanilla", {"k": 2, "retriever": "bm25"})
    retrieval = trace.steps[0]
    assert len(retrieval.hits) == 2 and retrieval.retriever == "bm25"
    assert trace.params == {"k": 2, "retriever": "bm25"}


def test_vanilla_on_the_demo_pack_answers_a_factoid_with_a_citation(demo_workbench, demo_pack):
    question = next(q for q in demo_pack.questions if q.type == "factoid")
    trace = demo_workbench.ask(question.question, "vanilla", question_id=question.id)
    assert kinds(trace)[0] == ("retrieval", 1) and kinds(trace)[-1] == ("answer", 1)
    assert trace.question_id == question.id
