"""Vanilla RAG end to end on the offline backend."""

from __future__ import annotations

from engine.params import AnswerPolicy
from engine.trace import AnswerStep, RetrievalStep


def kinds(trace):
    return [(s.kind, s.iteration) for s in trace.steps]


def test_vanilla_retrieves_once_then_answers(mini_workbench):
    trace = mini_workbench.ask("When was Grace Hopper born?", "vanilla", policy=AnswerPolicy(0.0))
    assert kinds(trace) == [("retrieval", 1), ("answer", 1)]
    retrieval, answer = trace.steps
    assert isinstance(retrieval, RetrievalStep) and len(retrieval.hits) == 5
    assert all(h.provenance == "question" for h in retrieval.hits)
    assert isinstance(answer, AnswerStep) and answer.text == "1906" and "m07" in answer.citations
    assert answer.backend == "offline" and "no language model" in answer.model
    assert answer.evidence[0] == "m07"


def test_vanilla_honours_k_and_retriever_params(mini_workbench):
    trace = mini_workbench.ask("Who designed the Analytical Engine?", "vanilla",
                               {"k": 2, "retriever": "bm25"}, policy=AnswerPolicy(0.0))
    retrieval = trace.steps[0]
    assert len(retrieval.hits) == 2 and retrieval.retriever == "bm25"
    assert (trace.params, trace.policy) == ({"k": 2, "retriever": "bm25"}, AnswerPolicy(0.0))


def test_vanilla_on_the_demo_pack_answers_a_factoid_with_a_citation(demo_workbench, demo_pack):
    question = next(q for q in demo_pack.questions if q.type == "factoid")
    trace = demo_workbench.ask(question.question, "vanilla", question_id=question.id)
    assert kinds(trace)[0] == ("retrieval", 1) and kinds(trace)[-1] == ("answer", 1)
    assert trace.question_id == question.id


def test_a_scripted_llm_run_sends_the_reader_prompt_over_the_hits_and_captures_attention(mini_pack, settings):
    from engine.methods import RunContext, get_method
    from engine.methods.vanilla.method import VanillaParams
    from engine.params import build_params
    from engine.retrieval.suite import open_retrieval
    from engine.tools.bundle import llm_bundle
    from engine.tools.llm_reader import build_reader_prompt
    from fake_chat import AttentiveChat

    chat = AttentiveChat(lambda _prompt: "Answer: 1906\nEvidence: 1")
    ctx = RunContext(pack=mini_pack, retrieval=open_retrieval(mini_pack, settings),
                     tools=llm_bundle(chat, mini_pack), params=build_params(VanillaParams, {"k": 3}))
    question = "When was Grace Hopper born?"
    steps = list(get_method("vanilla").run(question, ctx))

    assert [(s.kind, s.iteration) for s in steps] == [("retrieval", 1), ("llm_call", 1), ("attention", 1),
                                                       ("answer", 1)]
    hits = steps[0].hits
    prompt = build_reader_prompt(question, hits)
    assert chat.sent == [prompt.message]
    assert [s.label for s in chat.segments[0]] == [h.doc_id for h in hits] + ["question"]
    answer = steps[-1]
    assert answer.text == "1906" and answer.citations[0] == hits[0].doc_id and not answer.refused
    assert answer.backend == "fake" and answer.model == "scripted"
