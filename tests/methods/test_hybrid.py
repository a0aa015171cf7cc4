"""Hybrid RAG end to end: offline on the mini and demo packs, and the LLM path with a scripted chat."""

from __future__ import annotations

import pytest

from engine.evaluation.metrics import score_answer
from engine.llm.base import llm_bundle
from engine.methods.base import RunContext, get_method
from engine.methods.hybrid import HybridParams
from engine.params import build_params
from engine.retrieval.suite import open_retrieval
from engine.trace import AnswerStep, AttributesStep, CalculationStep, DecisionStep, LlmCallStep, Trace
from fake_chat import ScriptedChat

GOOD = ("===START===\n## Reasoning:\n- no\n- {answer}\n- yes\n------\n## Answer:\n{answer}\n"
        "## False Premise:\nno\n===END===")


def kinds(trace: Trace) -> list[tuple[str, int]]:
    return [(s.kind, s.iteration) for s in trace.steps]


def decisions(trace: Trace) -> dict[int, str]:
    """The last decision of each stage."""
    return {s.iteration: s.action for s in trace.steps if isinstance(s, DecisionStep)}


# ---- offline ---------------------------------------------------------------------------------------------


def test_sequence_on_the_demo_pack_one_stage_per_iteration(demo_workbench, demo_pack):
    question = demo_pack.questions_by_id["q001"]
    trace = demo_workbench.ask(question.question, "hybrid", question_id=question.id)
    assert kinds(trace) == [
        ("features", 0), ("retrieval", 1), ("features", 1), ("attributes", 2), ("decision", 2),
        ("decision", 3), ("decision", 4), ("graph_delta", 5), ("decision", 5), ("decision", 5),
        ("decision", 6), ("answer", 6),
    ]
    assert trace.answer.text == "Warsaw" and not trace.answer.refused
    assert [s.action for s in trace.steps if isinstance(s, DecisionStep)] == [
        "continue", "skip", "skip", "premise_ok", "kg_answer", "kg_answer"]
    attributes = next(s for s in trace.steps if isinstance(s, AttributesStep))
    assert attributes.method == "logreg" and attributes.labels[1].value == "static"
    assert len(trace.steps[1].hits) == 10 and "page" in trace.steps[0].title


def test_a_question_without_a_direct_kg_answer_is_read_from_the_evidence(demo_workbench):
    trace = demo_workbench.ask("In which town did Albert Einstein die?", "hybrid")
    assert trace.answer.text == "Princeton" and decisions(trace)[6] == "offline_reader"


def test_a_false_premise_the_kg_contradicts_answers_invalid_question(demo_workbench):
    trace = demo_workbench.ask("What was the name of Robert Bunsen's wife?", "hybrid")
    assert trace.answer.text == "invalid question" and not trace.answer.refused
    assert decisions(trace)[5] == "false_premise" and "spouse" in trace.steps[-3].detail


def test_a_time_span_question_gets_an_offline_calculation(demo_workbench):
    trace = demo_workbench.ask("How many years after polonium was francium discovered?", "hybrid")
    calcs = [s for s in trace.steps if isinstance(s, CalculationStep) and s.iteration == 3]
    assert [(c.expression, c.result, c.status) for c in calcs] == [("1939 - 1898", 41.0, "ok")]
    assert trace.answer.text == "41"


def test_a_dynamic_question_is_refused_at_the_gate_and_the_gate_can_be_switched_off(demo_workbench):
    question = "What is the price of Siemens stock right now?"
    trace = demo_workbench.ask(question, "hybrid")
    assert trace.answer.refused and trace.answer.iteration == 2 and decisions(trace) == {2: "refuse"}
    assert max(s.iteration for s in trace.steps) == 2  # nothing after the gate ran
    ungated = demo_workbench.ask(question, "hybrid", {"dynamic_gate": "off"})
    assert ungated.answer.iteration == 6


def test_the_mini_pack_answers_or_refuses_and_never_hallucinates(mini_workbench, mini_pack):
    outcomes = []
    for question in mini_pack.questions:
        trace = mini_workbench.ask(question.question, "hybrid", question_id=question.id)
        assert isinstance(trace.steps[-1], AnswerStep)
        outcomes.append(score_answer(trace.answer.text, question.answers, question.type, trace.answer.refused).outcome)
    assert "hallucinated" not in outcomes and outcomes.count("correct") >= 4


# ---- scripted LLM ----------------------------------------------------------------------------------------


def scripted(dynamism: str = "static", answer: str = "Warsaw", premise_aware: bool = False):  # noqa: ANN201
    def reply(prompt: str) -> str:
        if prompt.startswith("Classify the question"):
            return f"question_type: simple\ndynamism: {dynamism}"
        if prompt.startswith("Extract the named entities"):
            return '{"domain": "encyclopedia", "main_entity": "Marie Curie"}'
        if prompt.startswith("You write one Python arithmetic expression"):
            return "1911 - 1903"
        if prompt.startswith("Answer the question from your own knowledge"):
            return "===START===\n## Reasoning:\n- fine\n------\n## Answer:\nWarsaw\n===END==="
        if premise_aware and "KG premise check" in prompt:
            return "## Answer:\nInvalid question\n## False Premise:\nyes\n===END==="
        return GOOD.format(answer=answer)

    return ScriptedChat(reply)


def llm_run(pack, settings, chat: ScriptedChat, question: str, **params) -> Trace:  # noqa: ANN001
    ctx = RunContext(pack=pack, retrieval=open_retrieval(pack, settings), tools=llm_bundle(chat, pack),
                     params=build_params(HybridParams, params))
    steps = tuple(get_method("hybrid").run(question, ctx))
    return Trace(id="t", question=question, method="hybrid", backend="fake", model="scripted",
                 pack="p").with_steps(steps, 0)


def test_the_llm_path_runs_every_module_once_and_parses_the_answer(demo_pack, settings):
    chat = scripted()
    trace = llm_run(demo_pack, settings, chat, "Where was Marie Curie born?")
    roles = [s.role for s in trace.steps if isinstance(s, LlmCallStep)]
    # entities are extracted before the calculator needs them, but their call is shown with the KG stage
    assert roles == ["attributes 1", "attributes 2", "attributes 3", *(f"calculator {n}" for n in range(1, 6)),
                     "knowledge extractor", "entity extraction", "reasoning 1", "reasoning 2"]
    assert trace.answer.text == "Warsaw" and decisions(trace)[6] == "parsed"
    assert [c.status for c in trace.steps if isinstance(c, CalculationStep)] == ["ok", "dup", "dup", "dup", "dup"]
    reasoning = chat.sent[-1]
    assert "### Calculation 1: {\"Expression\": \"1911 - 1903\", \"Result\": \"8\"}" in reasoning
    assert "# An answer from another agent:\nWarsaw" in reasoning and "### KG Ref 1:" in reasoning
    assert next(s for s in trace.steps if isinstance(s, AttributesStep)).votes == ("simple / static",) * 3


def test_the_llm_gate_stops_a_dynamic_question_after_the_attribute_votes(demo_pack, settings):
    trace = llm_run(demo_pack, settings, scripted(dynamism="real-time"), "Who leads the league right now?")
    assert trace.answer.refused and trace.totals.llm_calls == 3


def test_the_llm_sees_the_kg_premise_check_and_may_call_the_question_invalid(demo_pack, settings):
    trace = llm_run(demo_pack, settings, scripted(premise_aware=True), "What was the name of Robert Bunsen's wife?")
    assert trace.answer.text == "invalid question" and decisions(trace)[6] == "invalid_any_sample"


@pytest.mark.parametrize(("answer", "route"), [("I don't know", "idk_any_sample"), ("x" * 400, "summarizer")])
def test_the_llm_refusal_and_fallback_routes_show_in_the_trace(demo_pack, settings, answer, route):
    trace = llm_run(demo_pack, settings, scripted(answer=answer), "Where was Marie Curie born?", reason_samples=1)
    assert decisions(trace)[6] == route
