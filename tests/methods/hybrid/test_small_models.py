"""Hybrid RAG with a weak real model (issue 23): replies as SmolLM2-135M wrote them, parsed or refused, and no
call spent for nothing."""

from __future__ import annotations

import pytest

from engine.methods.hybrid.answers import says_nothing
from engine.methods.hybrid.attributes import attribute_model, parse_attributes
from engine.methods.hybrid.calculations import calculation_wanted, clean_expression
from engine.methods.hybrid.kg_module import ENTITY_SETTINGS, entity_messages, parse_entities
from engine.methods.hybrid.llm import LlmAttributePredictor, LlmCalculator, LlmReasoner
from engine.methods.hybrid.reasoner import References, decide, parse_reasoning, summary_answer
from engine.tools.base import IDK
from engine.tools.short_answer import vet_answer
from engine.trace import Hit
from fake_chat import ScriptedChat, cycling, fixed

QUESTION = "Where was Marie Curie born?"
HIT = Hit("d1", "d1#0", "Marie Curie", "Marie Curie was born in Warsaw in 1867.", 0.9, 1)
# SmolLM2-135M's reasoning on the demo pack: a numbered loop, no marker (before issue 23's fixes)
LOOP = "1. Marie Curie’s birth date is unknown.\n" + "".join(
    f"{n}. Marie Curie’s daughter’s daughter’s spouse is unknown.\n" for n in range(2, 12))


def refs(**kw) -> References:
    return References(chunks=(HIT,), **kw)


# ---- sampling ----------------------------------------------------------------------------------------------


def test_five_identical_calculator_samples_cost_two_calls() -> None:
    chat = fixed("1911 - 1903")
    calcs = LlmCalculator(chat, samples=5).propose("How many years?", "refs", "")
    assert len(chat.sent) == 2 and [c.status for c in calcs.items] == ["ok", "dup"]


def test_one_reasoning_sample_by_default() -> None:
    chat = fixed("## Answer: Warsaw")
    decision = LlmReasoner(chat).reason(QUESTION, refs())
    assert decision.answer == "Warsaw" and len(chat.sent) == 1


# ---- calculator --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("question", "wanted"), [
    ("Where was Marie Curie born?", False),
    ("What did Heike Kamerlingh Onnes discover in 1911?", False),
    ("At which university did Tsung-Dao Lee most likely earn his doctorate?", False),
    ("How many years after polonium was francium discovered?", True),
    ("Which element was discovered first, francium or technetium?", True),
    ("Which is longer, the Elbe or the Vistula?", True),
    ("What do the Main and the Neckar measure together, in kilometres?", True),
    ("is the rhone shorter than the oder, or the other way round?", True),
])
def test_the_calculator_is_asked_only_when_the_question_wants_a_number_or_a_comparison(question, wanted) -> None:
    assert bool(calculation_wanted(question)) is wanted


def test_a_predicted_numeric_type_opens_the_calculator_too() -> None:
    assert "aggregation" in calculation_wanted("Name the rivers of Spain.", "aggregation")
    assert not calculation_wanted("Name the rivers of Spain.", "set")


@pytest.mark.parametrize(("raw", "expression"), [
    ("So the difference is 1911 - 1903 = 8 years.", "1911 - 1903"),
    ("The Danube is 2850 km and the Rhine 1233 km: (2850 - 1233)", "(2850 - 1233)"),
    ("abs(1867 - 1934)", "abs(1867 - 1934)"),
    ("round(2 / 3, 2)", "round(2 / 3, 2)"),
    ("The nationality of Marie Curie is Moscow, Russia.", "The nationality of Marie Curie is Moscow, Russia."),
])
def test_an_expression_written_inside_a_sentence_is_taken_out_of_it(raw, expression) -> None:
    assert clean_expression(raw) == expression


# ---- attributes and entities -------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "expected"), [
    ("question_type: comparison\ndynamism: static\n\nQuestion: Which is the best-selling", ("comparison", "static")),
    ("static", ("", "static")),
    ("It is a simple question whose answer never changes: static.", ("simple", "static")),
    ("Question: How much older was Sean Connery than Roger Moore?", None),  # a demonstration echoed
    ("static or real-time", None),  # two labels: no vote
])
def test_attribute_replies_vote_with_the_labels_they_name(text, expected) -> None:
    assert parse_attributes(text) == expected


def test_a_dynamism_only_vote_takes_the_offline_type_and_repeats_stop_the_votes(demo_workbench) -> None:
    model = attribute_model(demo_workbench.retrieval.embedder)
    chat = fixed("static")
    got = LlmAttributePredictor(chat, model, samples=3).predict(QUESTION)
    assert got.dynamism == "static" and got.method == "icl" and len(chat.sent) == 2
    assert got.question_type == model.predict(QUESTION).question_type and got.votes == ("? / static",) * 2


def test_entity_demonstrations_are_answered_turns_and_the_reply_stops_at_the_objects_end() -> None:
    messages, segments = entity_messages(QUESTION, "")
    assert messages[0].role == "system" and messages[-1].content == f"Query time: unknown\nQuestion: {QUESTION}"
    demos = messages[1:-1]
    assert len(demos) >= 4 and [m.role for m in demos] == ["user", "assistant"] * (len(demos) // 2)
    assert all(parse_entities(m.content) for m in demos[1::2])
    assert messages[-1].content[segments[0].start:segments[0].end] == QUESTION
    assert ENTITY_SETTINGS.stop == ("}",) and ENTITY_SETTINGS.max_new_tokens <= 64


@pytest.mark.parametrize(("text", "names"), [
    ('{"domain": "encyclopedia", "main_entity": "Marie Curie"', ("Marie Curie",)),  # cut at its '}'
    ('main_entity: "Marie Curie", domain: encyclopedia', ("Marie Curie",)),
    ('- encyclopedia or other: "main_entity"\n- movie: "movie_name", "movie_aspect" (one of budget)', ()),  # echo
])
def test_entity_replies_cut_at_the_stop_or_without_braces_still_parse(text, names) -> None:
    assert parse_entities(text) == names


# ---- reasoning ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("text", "answer"), [
    ("Answer: Warsaw\nFalse Premise: no", "Warsaw"),
    ("**Answer:** Warsaw\nShe was born there in 1867.\n**False Premise:** no", "Warsaw"),
    ("### answer\nWarsaw\nMore text that goes on.", "Warsaw"),
    ("## Answer:\n- Polonium\n- Radium\n## False Premise:\nno", "Polonium, Radium"),
])
def test_answer_markers_are_found_as_small_models_bend_them(text, answer) -> None:
    parsed = parse_reasoning(text)
    assert (parsed.answer, parsed.ok) == (answer, True)
    assert parse_reasoning("Answer: x\nFalse Premise: Yes.").false_premise


@pytest.mark.parametrize(("text", "answer"), [
    ('The answer is "Basel".', "Basel"),  # SmolLM2 without the step-by-step trigger
    ("So the final answer is: Warsaw\nShe was born there.", "Warsaw"),
    ('The answer is "I don\'t know".', None),  # "I don't know" in any sample wins first
])
def test_a_stated_answer_without_markers_parses(text, answer) -> None:
    decision, parsed = decide([text])
    if answer is None:
        assert decision.route == "idk_any_sample"
    else:
        assert (decision.answer, decision.route) == (answer, "parsed")


def test_a_made_up_invalid_question_heading_is_no_verdict() -> None:
    text = f"## Answer:\n## Invalid question: {QUESTION}"  # SmolLM2 on "Where was Marie Curie born?"
    decision, parsed = decide([text], lambda a: vet_answer(a, QUESTION))
    assert decision is None and "empty answer" in parsed.why  # the summarizer steps in
    assert decide(["## Answer:\nInvalid question\n## False Premise:\nyes"])[0].answer == "invalid question"
    assert decide(["The question is an invalid question."])[0].route == "invalid_any_sample"


def test_an_answer_that_says_it_is_unknown_is_i_dont_know() -> None:
    decision, _ = decide(["## Answer:\nHer spouse is unknown.\n## False Premise:\nno"])
    assert (decision.answer, decision.route, decision.refused) == (IDK, "idk_any_sample", True)


def test_an_answer_that_echoes_the_prompt_goes_to_the_summarizer() -> None:
    chat = cycling("## Answer:\n<short answer>\nShe was born in Warsaw.\n## False Premise:\nno", "Warsaw")
    decision = LlmReasoner(chat).reason(QUESTION, refs())
    assert (decision.answer, decision.route) == ("Warsaw", "summarizer")
    error = next(s for s in decision.steps if s.kind == "error")
    assert "placeholder" in error.message and "<short answer>" in error.message
    echoed = parse_reasoning(f"## Answer:\n{QUESTION}", lambda a: vet_answer(a, QUESTION))
    assert not echoed.ok and "echoes the question" in echoed.why


def test_a_sentence_answer_is_cut_to_its_short_answer_with_an_error_step_quoting_it() -> None:
    choice = "Which is longer, the Elbe or the Vistula?"
    decision = LlmReasoner(cycling("The Elbe is longer than the Vistula.", "The Elbe is longer.")).reason(
        choice, refs())  # SmolLM2's reasoning and summary on the geo pack
    assert (decision.answer, decision.route) == ("the Elbe", "summarizer")  # the option as the question has it
    assert "The Elbe is longer." in [s for s in decision.steps if s.kind == "error"][-1].message
    parsed = LlmReasoner(fixed("## Answer:\nMarie Curie was born in Warsaw.")).reason(QUESTION, refs())
    assert (parsed.answer, parsed.route) == ("Warsaw", "parsed")


def test_the_summarizer_gets_a_looping_reasoning_once_and_its_unknown_is_refused() -> None:
    chat = cycling(LOOP, "Marie Curie's daughter's daughter's spouse is unknown.")
    decision = LlmReasoner(chat).reason(QUESTION, refs())
    assert decision.answer == IDK and decision.refused and decision.route == "summarizer"
    assert chat.sent[1].count("spouse is unknown") == 1  # the loop's repeats dropped
    assert "says the answer is not known" in [s for s in decision.steps if s.kind == "error"][-1].message


def test_a_summary_that_copies_the_reasoning_is_no_answer_and_the_kg_answer_stands() -> None:
    reasoning = ("The 20th century saw the discovery of numerous groundbreaking scientific discoveries, including "
                 "the Nobel Prize in Chemistry in 1912.")  # SmolLM2: its reasoning, and its summary of it
    summary = reasoning
    chat = cycling(reasoning, summary)
    question = "What did Heike Kamerlingh Onnes discover in 1911?"
    decision = LlmReasoner(chat).reason(question, refs(kg_answer="Superconductivity", kg_reason="a KG fact"))
    assert (decision.answer, decision.route, decision.refused) == ("Superconductivity", "kg_answer", False)
    assert "echoes evidence" in [s for s in decision.steps if s.kind == "error"][-1].message
    plain = LlmReasoner(cycling(reasoning, summary)).reason(question, refs())
    assert plain.answer == IDK and plain.refused


def test_the_final_answer_is_never_the_question_an_instruction_or_a_whole_chunk() -> None:
    chunk = Hit("d2", "d2#0", "Marie Curie", "Marie Curie (born Maria Skłodowska, 1867–1934) was a physicist and "
                "chemist who was born in Warsaw, then part of the Russian Empire.", 0.8, 2)
    for summary in (QUESTION, "Give the final answer in as few words as possible", chunk.text):
        decision = LlmReasoner(cycling("no markers", summary)).reason(QUESTION, References(chunks=(HIT, chunk)))
        assert decision.answer == IDK and decision.refused, summary


def test_a_recited_rule_is_no_refusal_of_the_models_own() -> None:
    recital = ("1. If the references do not contain the information needed and your own knowledge is not enough, "
               'the answer is "I don\'t know".\n## Answer:\nWarsaw\n## False Premise:\nno')
    decision = LlmReasoner(fixed(recital)).reason(QUESTION, refs())
    assert (decision.answer, decision.route) == ("Warsaw", "parsed")
    blended = ("The answer is Basel.\n\nThe rules are:\n1. If the references do not contain the information needed "
               'and your own knowledge is insufficient, the answer is "I don\'t know".')  # SmolLM2, in its own words
    assert LlmReasoner(fixed(blended)).reason(QUESTION, refs()).answer == "Basel"
    assert LlmReasoner(fixed("So I don't know.\n## Answer: Warsaw")).reason(QUESTION, refs()).answer == IDK
    assert LlmReasoner(fixed("I don't know")).reason(QUESTION, refs()).route == "idk_any_sample"


def test_a_reply_that_only_hands_the_prompt_back_is_not_summarized() -> None:
    echo = f"## Answer:\n## Invalid question: {QUESTION}\n\n"  # SmolLM2 on the demo pack
    chat = fixed(echo)
    decision = LlmReasoner(chat).reason(QUESTION, refs(kg_answer="Warsaw", kg_reason="a KG fact"))
    assert len(chat.sent) == 1 and (decision.answer, decision.route) == ("Warsaw", "kg_answer")
    assert "nothing to summarize" in [s for s in decision.steps if s.kind == "error"][0].message
    alone = LlmReasoner(fixed(echo)).reason(QUESTION, refs())
    assert alone.answer == IDK and alone.refused
    assert says_nothing("## Answer:\n<short answer>", QUESTION, ["## Answer:\n<short answer>"])
    assert not says_nothing("## Answer:\nWarsaw", QUESTION, ["## Answer:\n<short answer>"])


def test_reasoning_stops_at_the_end_a_next_question_or_an_empty_answer_within_a_short_budget() -> None:
    settings = LlmReasoner(fixed("")).settings
    assert settings.stop == ("===END===", "\nQuestion:", "Answer:\n#") and settings.max_new_tokens <= 256
    looped = "## Answer:\n## Answer:\n## Answer:"
    cut = looped[:looped.find(settings.stop[2])]  # as the hf backend cuts at a stop string
    decision = LlmReasoner(fixed(cut)).reason(QUESTION, refs(kg_answer="Warsaw", kg_reason="a KG fact"))
    assert cut == "## " and decision.route == "kg_answer"  # said nothing: not an "I don't know" of its own


def test_a_reply_the_scripted_model_would_give_for_every_prompt_still_ends_the_run() -> None:
    chat = ScriptedChat(lambda _p: "")
    decision = LlmReasoner(chat).reason(QUESTION, refs(kg_answer="Warsaw"))
    assert decision.answer == IDK and decision.route == "idk_any_sample"  # an empty sample is "I don't know"
    assert summary_answer("")[0] == IDK
