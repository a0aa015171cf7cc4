"""Hybrid RAG end to end: offline on the mini and demo packs, and the LLM path with a scripted chat."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.evaluation.metrics import score_answer
from engine.knowledge.records import Pack
from engine.methods.base import RunContext, get_method
from engine.methods.hybrid.method import HybridParams
from engine.params import build_params
from engine.retrieval.suite import open_retrieval
from engine.tools.base import IDK
from engine.tools.bundle import llm_bundle
from engine.trace import (
    AnswerStep,
    AttentionStep,
    AttributesStep,
    CalculationStep,
    DecisionStep,
    ErrorStep,
    LlmCallStep,
    Trace,
)
from fake_chat import AttentiveChat, ScriptedChat

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
    trace = demo_workbench.ask(question.question, "hybrid", {"min_confidence": 0.0}, question_id=question.id)
    assert kinds(trace) == [  # no page lists q001 and the demo pack has no shared pages: no tables step
        ("features", 0), ("retrieval", 1), ("attributes", 2), ("decision", 2),
        ("decision", 3), ("decision", 4), ("graph_delta", 5), ("decision", 5), ("decision", 5),
        ("decision", 6), ("answer", 6),
    ]
    assert trace.answer.text == "Warsaw" and not trace.answer.refused
    assert [s.action for s in trace.steps if isinstance(s, DecisionStep)] == [
        "continue", "skip", "skip", "premise_ok", "kg_answer", "kg_answer"]
    attributes = next(s for s in trace.steps if isinstance(s, AttributesStep))
    assert attributes.method == "logreg" and attributes.labels[1].value == "static"
    assert len(trace.steps[1].hits) == 10 and trace.steps[0].title.startswith("0 pages, 5 documents")
    assert trace.steps[0].note == "Pages: 0 pages for this question (question_ids q001) + 0 shared."


def test_a_question_without_a_direct_kg_answer_is_read_from_the_evidence(demo_workbench):
    trace = demo_workbench.ask("In which town did Albert Einstein die?", "hybrid", {"min_confidence": 0.0})
    assert trace.answer.text == "Princeton" and decisions(trace)[6] == "offline_reader"


def test_a_false_premise_the_kg_contradicts_answers_invalid_question(demo_workbench):
    trace = demo_workbench.ask("What was the name of Robert Bunsen's wife?", "hybrid")
    assert trace.answer.text == "invalid question" and not trace.answer.refused
    assert decisions(trace)[5] == "false_premise" and "spouse" in trace.steps[-3].detail


def test_a_time_span_question_gets_an_offline_calculation(demo_workbench):
    # the calculation and the answer it gives, whatever confidence the calibration puts on it
    trace = demo_workbench.ask("How many years after polonium was francium discovered?", "hybrid",
                               {"min_confidence": 0.0})
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


@pytest.mark.parametrize(("min_confidence", "most_wrong", "least_right"), [(0.0, 1, 4), (0.5, 0, 3)])
def test_the_mini_pack_is_answered_by_the_run_policy(mini_workbench, mini_pack, min_confidence, most_wrong,
                                                    least_right):
    # issue 27: no floor of the method's own; at min_confidence 0 it guesses as vanilla does, and the default
    # calibrated policy holds back the weak guess
    outcomes = []
    for question in mini_pack.questions:
        trace = mini_workbench.ask(question.question, "hybrid", {"min_confidence": min_confidence},
                                   question_id=question.id)
        assert isinstance(trace.steps[-1], AnswerStep)
        outcomes.append(score_answer(trace.answer.text, question.answers, question.type, trace.answer.refused).outcome)
    assert outcomes.count("hallucinated") <= most_wrong and outcomes.count("correct") >= least_right


# ---- scripted LLM ----------------------------------------------------------------------------------------

DIRECT = "===START===\n## Reasoning:\n- fine\n------\n## Answer:\nWarsaw\n===END==="
NUMERIC = "How many years after her first Nobel Prize did Marie Curie receive her second?"


def scripted(dynamism: str = "static", answer: str = "Warsaw", premise_aware: bool = False,
             reasoning: str | None = None, summary: str = "Warsaw", attentive: bool = False):
    """Replies by which module's last user turn it is sent (the knowledge extractor's is the bare question)."""
    def reply(prompt: str) -> str:
        if prompt.startswith("Question: "):  # the attribute query; its demonstrations are earlier turns
            return f"question_type: simple\ndynamism: {dynamism}"
        if prompt.startswith("Query time: "):
            return '{"domain": "encyclopedia", "main_entity": "Marie Curie"}'
        if prompt.rstrip().endswith("Write the Python expression:"):
            return "1911 - 1903"
        if "\n" not in prompt.strip():
            return DIRECT
        if prompt.startswith("Below is a question and someone's reasoning"):
            return summary
        if premise_aware and "KG premise check" in prompt:
            return "## Answer:\nInvalid question\n## False Premise:\nyes\n===END==="
        return reasoning if reasoning is not None else GOOD.format(answer=answer)

    return (AttentiveChat if attentive else ScriptedChat)(reply)


def all_pages_shared(pack: Pack) -> Pack:
    """The prompt tests ask about Marie Curie, whom no demo page lists: sharing the pages gives her tables."""
    return replace(pack, pages=tuple(replace(p, question_ids=()) for p in pack.pages))


def llm_run(pack, settings, chat: ScriptedChat, question: str, **params) -> Trace:
    pack = all_pages_shared(pack)
    ctx = RunContext(pack=pack, retrieval=open_retrieval(pack, settings), tools=llm_bundle(chat, pack),
                     params=build_params(HybridParams, params))
    steps = tuple(get_method("hybrid").run(question, ctx))
    return Trace(id="t", question=question, method="hybrid", backend="fake", model="scripted",
                 pack="p").with_steps(steps, 0)


def prompt_of(trace: Trace, role: str) -> str:
    """The whole prompt of a call as sent (every turn), from its llm_call step."""
    return next(s for s in trace.steps if isinstance(s, LlmCallStep) and s.role == role).prompt


def test_the_llm_path_runs_every_module_and_parses_the_answer(demo_pack, settings):
    chat = scripted(answer="8")
    trace = llm_run(demo_pack, settings, chat, NUMERIC)
    roles = [s.role for s in trace.steps if isinstance(s, LlmCallStep)]
    # entities are extracted before the calculator needs them, but their call is shown with the KG stage;
    # every module's sampling stops at the first repeated reply (the scripted model always repeats itself)
    assert roles == ["attributes 1", "attributes 2", "calculator 1", "calculator 2", "knowledge extractor",
                     "entity extraction", "reasoning 1"]
    assert trace.answer.text == "8" and decisions(trace)[6] == "parsed"
    assert [c.status for c in trace.steps if isinstance(c, CalculationStep)] == ["ok", "dup"]
    reasoning = chat.sent[-1]
    assert "### Calculation 1: {\"Expression\": \"1911 - 1903\", \"Result\": \"8\"}" in reasoning
    assert "# An answer from another agent:\nWarsaw" in reasoning and "### KG Ref 1:" in reasoning
    assert next(s for s in trace.steps if isinstance(s, AttributesStep)).votes == ("simple / static",) * 2
    calculator = chat.sent[3]
    assert calculator.startswith("# References\n") and "\n# Tables\n### Table 1:\nPage name: " in calculator
    assert "Rules:\n1. Output exactly one valid Python expression" in calculator
    order = [reasoning.index(s) for s in ("------\n## Table references\n### Table 1:",
                                          "------\n## Possible useful calculation results\n### Calculation 1:",
                                          "------\n# An answer from another agent:\nWarsaw")]
    assert order == sorted(order)


def test_a_question_that_wants_no_number_skips_the_calculator(demo_pack, settings):
    trace = llm_run(demo_pack, settings, scripted(), "Where was Marie Curie born?")
    assert not [s for s in trace.steps if isinstance(s, LlmCallStep) and s.role.startswith("calculator")]
    skip = next(s for s in trace.steps if isinstance(s, DecisionStep) and s.iteration == 3)
    assert skip.action == "skip" and "asks for no number or comparison" in skip.detail


def test_the_llm_sequence_and_the_prompts_as_sent(demo_pack, settings):
    chat = scripted()
    trace = llm_run(demo_pack, settings, chat, "Where was Marie Curie born?")
    assert kinds(trace) == [
        ("features", 0), ("retrieval", 1), ("features", 1),
        *[("llm_call", 2)] * 2, ("attributes", 2), ("decision", 2),
        ("decision", 3),
        ("llm_call", 4), ("decision", 4),
        ("llm_call", 5), ("graph_delta", 5), ("decision", 5), ("decision", 5),
        ("llm_call", 6), ("decision", 6), ("answer", 6),
    ]
    attributes, entities = prompt_of(trace, "attributes 1"), prompt_of(trace, "entity extraction")
    direct, reasoning = chat.sent[3], chat.sent[4]
    assert attributes.count("[user]\nQuestion: ") == 1 + 5  # 5 demonstrations (the paper's count), then the query
    assert attributes.count("[assistant]\nquestion_type: ") == 5
    assert attributes.rstrip().endswith("[user]\nQuestion: Where was Marie Curie born?")
    assert entities.rstrip().endswith("[user]\nQuery time: unknown\nQuestion: Where was Marie Curie born?")
    assert '"market_identifier"' in entities and '"movie_aspect"' in entities
    assert entities.count("[assistant]\n{") >= 2  # demonstrations as answered turns
    assert direct == "Where was Marie Curie born?"  # closed book: the user turn is only the raw query
    system = prompt_of(trace, "knowledge extractor")
    assert "spouse of someone who has never been married" in system and "===START===" in system
    assert reasoning.startswith("# References\n- ")
    order = [reasoning.index(s) for s in ("------\n## Knowledge Graph references\n### KG answer: Warsaw",
                                          "### KG Ref 1:",
                                          "------\n## Table references\n### Table 1:",
                                          "------\n# An answer from another agent:\nWarsaw",
                                          "------\nRules:\n1. If the references do not contain",
                                          "been married), the answer is exactly \"Invalid question\".\n------\n",
                                          "Current Time: unknown\nQuestion: Where was Marie Curie born?")]
    assert order == sorted(order)
    assert "asks for the spouse of someone who has never been married" in prompt_of(
        trace, "reasoning 1").split("[user]")[0]


def test_every_model_call_shows_in_the_trace_on_every_module_and_the_summarizer(demo_pack, settings):
    chat = scripted(reasoning="It must be Warsaw, where she grew up.")  # no markers: the summarizer steps in
    trace = llm_run(demo_pack, settings, chat, NUMERIC)
    calls = [s for s in trace.steps if isinstance(s, LlmCallStep)]
    assert {c.role.rstrip(" 0123456789") for c in calls} == {
        "attributes", "entity extraction", "calculator", "knowledge extractor", "reasoning", "summarizer"}
    assert len(chat.sent) == len(calls) == trace.totals.llm_calls
    # one step per call (the entity call is made before the calculator's but shown with the KG stage)
    assert sorted(c.output for c in calls) == sorted(chat.reply(p) for p in chat.sent)
    assert trace.answer.text == "Warsaw" and decisions(trace)[6] == "summarizer"


def test_a_reasoning_sample_that_does_not_parse_is_an_error_step_before_the_summarizer(demo_pack, settings):
    raw = "It must be Warsaw, where she grew up."
    trace = llm_run(demo_pack, settings, scripted(reasoning=raw), "Where was Marie Curie born?")
    tail = [(s.kind, getattr(s, "role", "")) for s in trace.steps if s.iteration == 6]
    assert tail == [("llm_call", "reasoning 1"), ("error", ""), ("llm_call", "summarizer"), ("decision", ""),
                    ("answer", "")]
    error = next(s for s in trace.steps if isinstance(s, ErrorStep) and s.iteration == 6)
    assert raw in error.message and "no '## Answer:' marker" in error.message


def test_a_summary_that_is_no_short_answer_is_refused_not_taken(demo_pack, settings):
    trace = llm_run(demo_pack, settings, scripted(reasoning="no markers", summary="Warsaw " * 60), NUMERIC)
    assert trace.answer.refused and trace.answer.text == IDK and decisions(trace)[6] == "summarizer"
    assert [s.kind for s in trace.steps if s.iteration == 6].count("error") == 2


def test_when_the_model_gives_no_usable_answer_a_direct_kg_answer_stands(demo_pack, settings):
    trace = llm_run(demo_pack, settings, scripted(reasoning="no markers", summary="Her birthplace is unknown."),
                    "Where was Marie Curie born?")
    assert trace.answer.text == "Warsaw" and not trace.answer.refused and decisions(trace)[6] == "kg_answer"
    errors = [s for s in trace.steps if isinstance(s, ErrorStep) and s.iteration == 6]
    assert len(errors) == 2 and "Her birthplace is unknown." in errors[1].message
    own = llm_run(demo_pack, settings, scripted(reasoning="no markers", summary="I don't know."),
                  "Where was Marie Curie born?")
    assert own.answer.refused and decisions(own)[6] == "summarizer"  # the model's own "I don't know" wins


def test_every_llm_call_passes_segments_and_is_followed_by_its_attention(demo_pack, settings):
    chat = scripted(reasoning="no markers", attentive=True)
    trace = llm_run(demo_pack, settings, chat, NUMERIC)
    steps = list(trace.steps)
    calls = [n for n, s in enumerate(steps) if isinstance(s, LlmCallStep)]
    assert len(calls) == len(chat.segments) == len(chat.sent) == 8
    assert all(isinstance(steps[n + 1], AttentionStep) for n in calls)
    for prompt, segments in zip(chat.sent, chat.segments):
        assert ("question", "question") in {(s.label, s.kind) for s in segments}
        assert all(0 <= s.start < s.end <= len(prompt) for s in segments)
        question = next(s for s in segments if s.label == "question")
        assert prompt[question.start:question.end] == NUMERIC
    # sent in order: attributes ×2, entity extraction, calculator ×2, knowledge, reasoning, summarizer
    reasoning = chat.segments[6]
    labels = {s.label for s in reasoning}
    assert {f"reference {n}" for n in range(1, 11)} <= labels and "table 1" in labels and "kg fact 1" in labels
    assert {"calculation 1", "another agent"} <= labels
    table = next(s for s in reasoning if s.label == "table 1")
    assert chat.sent[6][table.start:table.end].startswith("Page name: ")
    assert {"reference 1", "table 1"} <= {s.label for s in chat.segments[3]}  # the calculator sees both too
    assert "reasoning 1" in {s.label for s in chat.segments[7]}  # the summarizer


def test_the_llm_gate_stops_a_dynamic_question_after_the_attribute_votes(demo_pack, settings):
    trace = llm_run(demo_pack, settings, scripted(dynamism="real-time"), "Who leads the league right now?")
    assert trace.answer.refused and trace.totals.llm_calls == 2  # the second vote repeats the first: no third
    labels = next(s for s in trace.steps if isinstance(s, AttributesStep)).labels
    assert labels[2].name == "dynamism (embedding classifier)" and labels[2].value in ("fast-changing", "real-time")


def test_the_llm_gate_answers_what_only_the_model_calls_dynamic(demo_pack, settings):
    trace = llm_run(demo_pack, settings, scripted(dynamism="real-time"), "Where was Marie Curie born?")
    assert trace.answer.text == "Warsaw" and decisions(trace)[2] == "continue"
    gate = next(s for s in trace.steps if isinstance(s, DecisionStep) and s.iteration == 2)
    assert "refused unread only when both call it dynamic" in gate.detail


def test_the_llm_sees_the_kg_premise_check_and_may_call_the_question_invalid(demo_pack, settings):
    chat = scripted(premise_aware=True)
    trace = llm_run(demo_pack, settings, chat, "What was the name of Robert Bunsen's wife?")
    assert trace.answer.text == "invalid question" and decisions(trace)[6] == "invalid_any_sample"
    assert len(chat.sent) == trace.totals.llm_calls  # the premise check's choice test spends no hidden call


@pytest.mark.parametrize(("answer", "route"), [("I don't know", "idk_any_sample"), ("x" * 400, "summarizer")])
def test_the_llm_refusal_and_fallback_routes_show_in_the_trace(demo_pack, settings, answer, route):
    trace = llm_run(demo_pack, settings, scripted(answer=answer), "Where was Marie Curie born?")
    assert decisions(trace)[6] == route
