"""RAS's LLM tools against what a weak real model writes (issue 23): labels and lists instead of one plan,
the demonstration's triples and answers copied, sentences; every role's stop strings and budget."""

from __future__ import annotations

import pytest

from engine.knowledge.records import Triple
from engine.methods.ras.llm import LlmAnswerer, LlmExtractor, LlmPlanner, parse_triples, supported
from engine.methods.ras.query_graph import GraphTriple, QueryGraph
from engine.methods.ras.tools import Round
from engine.tools.base import IDK
from engine.trace import DecisionStep, ErrorStep, Hit, LlmCallStep, RetrievalStep
from fake_chat import ScriptedChat, fixed
from methods.ras.test_method import MENTOR, llm_run, two_hop_pack

QUESTION = "Where was Bruno Kessler born?"
PASSAGE = Hit("h2", "h2#0", "Bruno Kessler", "Bruno Kessler is a physicist. He was born in Carlow.", 1.0, 1)
BORN = GraphTriple("Bruno Kessler", "born in", "Carlow", 1, QUESTION, "h2#0", "h2")


def test_a_plan_listing_the_tokens_is_a_fallback_to_sufficient_never_a_retrieval_for_a_label():
    raw = "Output [SUBQ]\nOutput [SUFFICIENT]"
    plan = LlmPlanner(fixed(raw)).plan(MENTOR, [Round(MENTOR, ())], QueryGraph(), ())
    assert (plan.action, plan.subquery, plan.fallback) == ("sufficient", "", True)
    error = next(s for s in plan.steps if isinstance(s, ErrorStep))
    assert error.recoverable and repr(raw) in error.message


def test_a_triple_missing_its_object_marker_is_read_by_position():
    good, bad = parse_triples("(S> Bruno Kessler| P> Birth date| January 26, 1898), "
                              "(S> Bruno Kessler| born in| O> Carlow)")
    assert good == (Triple("Bruno Kessler", "Birth date", "January 26, 1898"),
                    Triple("Bruno Kessler", "born in", "Carlow")) and bad == 0


def test_a_triple_is_supported_only_when_the_passage_holds_its_subject_and_object():
    passage = f"{PASSAGE.title}. {PASSAGE.text}"
    assert supported(Triple("Bruno Kessler", "born in", "Carlow"), passage)
    assert supported(Triple("Kessler", "occupation", "a physicist"), passage)
    assert not supported(Triple("Bruno Kessler", "Birth date", "November 27, 1953"), passage)
    assert not supported(Triple("William Gerald Standridge", "Occupation", "physicist"), passage)
    assert not supported(Triple("Bruno Kessler", "is", "Bruno Kessler"), passage)


def test_the_demonstrations_triples_filled_with_the_passages_subject_are_dropped_and_reported():
    # what SmolLM2-135M wrote for every biography: the t2t example's predicates and objects
    raw = ("(S> Bruno Kessler| P> Birth date| O> November 27, 1953), (S> Bruno Kessler| P> Competitor in| "
           "O> NASCAR Winston Cup Series), (S> Bruno Kessler| P> born in| O> Carlow), "
           "(S> Bruno Kessler| P> Birth date| O> Bruno Kessler)")
    extraction = LlmExtractor(fixed(raw)).extract(PASSAGE)
    assert extraction.triples == (Triple("Bruno Kessler", "born in", "Carlow"),)
    error = next(s for s in extraction.steps if isinstance(s, ErrorStep))
    assert "3 not supported by the passage" in error.message and "1 kept" in error.message
    assert "NASCAR Winston Cup Series" in error.message  # the raw output stays inspectable


def test_the_demonstrations_answer_copied_is_a_refusal_with_the_raw_output():
    reading = LlmAnswerer(fixed("Caspian Sea")).answer(QUESTION, [Round(QUESTION, (BORN,))], QueryGraph(), ())
    assert reading.refused and reading.answer == IDK
    messages = [s.message for s in reading.steps if isinstance(s, ErrorStep)]
    assert any("demonstration" in m and "Caspian Sea" in m for m in messages)


def test_an_answer_the_graph_holds_is_kept_even_when_a_demonstration_holds_it_too():
    volga = GraphTriple("Kazan", "located on", "Volga", 1, "Which river?", "k#0", "k")
    reading = LlmAnswerer(fixed("Volga")).answer("Which river flows through Kazan?", [Round("Which river?", (volga,))],
                                                 QueryGraph(), ())
    assert not reading.refused and reading.answer == "Volga"
    assert not any(isinstance(s, ErrorStep) for s in reading.steps)


def test_a_sentence_is_cut_to_its_short_answer_and_the_question_echoed_is_no_answer():
    rounds = [Round(QUESTION, (BORN,))]
    sentence = LlmAnswerer(fixed("Bruno Kessler was born in Carlow.")).answer(QUESTION, rounds, QueryGraph(), ())
    assert sentence.answer == "Carlow" and not sentence.refused
    assert any(isinstance(s, ErrorStep) and "Bruno Kessler was born in Carlow." in s.message for s in sentence.steps)
    echo = LlmAnswerer(fixed("Output: where was Bruno Kessler born")).answer(QUESTION, rounds, QueryGraph(), ())
    assert echo.refused and any(isinstance(s, ErrorStep) and "the question" in s.message for s in echo.steps)


def test_every_role_stops_at_the_prompts_next_block_within_a_budget_sized_to_its_reply():
    chat = ScriptedChat(lambda _prompt: "x")
    LlmPlanner(chat).plan(QUESTION, [], QueryGraph(), ())
    LlmExtractor(chat).extract(PASSAGE)
    LlmAnswerer(chat).answer(QUESTION, [], QueryGraph(), ())
    plan, t2t, answer = chat.settings_sent
    assert all("\nOutput" in s.stop and "\nInput" in s.stop for s in chat.settings_sent)
    assert plan.max_new_tokens <= 48 and answer.max_new_tokens <= 32 and t2t.max_new_tokens <= 160


def test_no_retrieval_is_shown_as_the_planners_decision_to_answer_closed_book(settings):
    trace, chat = llm_run(two_hop_pack(), settings,
                          lambda p: "[NO_RETRIEVAL]" if p.startswith("You are a planner") else "Carlow")
    assert [(s.kind, s.iteration) for s in trace.steps] == [
        ("llm_call", 0), ("decision", 0), ("llm_call", 0), ("answer", 0)]
    decision = trace.steps[1]
    assert isinstance(decision, DecisionStep) and decision.action == "no_retrieval"
    assert decision.title == "Planner: [NO_RETRIEVAL]: no retrieval, answered closed-book"
    assert "question alone" in decision.detail
    assert not any(isinstance(s, (ErrorStep, RetrievalStep)) for s in trace.steps)
    assert [s.role for s in trace.steps if isinstance(s, LlmCallStep)] == ["planner", "answerer"]
    assert chat.sent[-1].endswith(f"Input:\n[NO_RETRIEVAL]\nQuestion: {MENTOR}\nOutput:\n")
    assert trace.answer.text == "Carlow" and not trace.answer.refused


def test_a_repeated_triple_is_kept_once_and_not_counted_as_malformed():
    good, bad = parse_triples("(S> Bruno Kessler| P> born in| O> Carlow), (S> Bruno Kessler| P> born in| O> Carlow), "
                              "(S> Bruno Kessler| P> born in")
    assert good == (Triple("Bruno Kessler", "born in", "Carlow"),) and bad == 1


def test_an_answer_the_question_names_is_a_hop_not_taken_unless_offered_as_a_choice():
    asked = "Who supervised Bruno Kessler's doctoral thesis?"
    named = LlmAnswerer(fixed("Output: Bruno Kessler")).answer(asked, [Round(asked, (BORN,))], QueryGraph(), ())
    assert named.refused and any(isinstance(s, ErrorStep) and "named by the question" in s.message
                                 for s in named.steps)
    choice = "Was Bruno Kessler born in Dorvik or Carlow?"
    picked = LlmAnswerer(fixed("Carlow")).answer(choice, [Round(choice, (BORN,))], QueryGraph(), ())
    assert picked.answer == "Carlow" and not picked.refused


@pytest.mark.parametrize("text, expected", [
    ("Question: Which river flows through Turin?", ""),  # SmolLM2-135M opening a new example
    ("[SUBQ] Who discovered the neutron?", ""),
    ("Which river?\nCarlow", "Carlow"),
    ("Input: Carlow", ""),
])
def test_a_question_or_a_line_opening_a_prompt_block_is_never_the_answer(text, expected):
    from engine.methods.ras.llm import parse_answer

    assert parse_answer(text) == expected


def test_a_subquery_copied_from_a_demonstration_falls_back_like_a_repeated_one():
    # SmolLM2-135M asked the planner prompt's first example sub-query for a question about physicists
    copied = "[SUBQ] Where was Tomas Alfredson born?"
    later = LlmPlanner(fixed(copied)).plan(MENTOR, [Round(MENTOR, (BORN,))], QueryGraph(), ())
    assert (later.action, later.fallback) == ("sufficient", True)
    assert any(isinstance(s, ErrorStep) and "demonstration" in s.message and copied in s.message for s in later.steps)
    first = LlmPlanner(fixed(copied)).plan(MENTOR, [], QueryGraph(), ())
    assert (first.action, first.subquery, first.fallback) == ("subq", MENTOR, True)
    own = LlmPlanner(fixed("[SUBQ] Where was Bruno Kessler born?")).plan(MENTOR, [Round(MENTOR, (BORN,))],
                                                                        QueryGraph(), ())
    assert (own.action, own.subquery, own.fallback) == ("subq", "Where was Bruno Kessler born?", False)


def test_a_copy_of_a_demonstration_is_told_from_a_phrase_shared_by_chance():
    from engine.methods.ras.llm import PROMPTS
    from engine.tools.short_answer import copied_example

    answer, plan = PROMPTS.load("answer"), PROMPTS.load("plan")
    assert copied_example("Caspian Sea", answer, "Into which sea does the river that runs through Turin flow?")
    assert not copied_example("Caspian Sea", answer, "(S> Volga| P> flows into| O> Caspian Sea)")
    assert copied_example("Where was Tomas Alfredson born?", plan, "Where was Max Born's student born?")
    assert not copied_example("How tall is Mount Kilimanjaro?", plan, "What is the height of Mount Kilimanjaro?")
    assert not copied_example("Warsaw", answer, "Where was Marie Curie born?")
