"""Attribute predictor: the example data, the classifier's cross-validated accuracy, ICL votes and parsing."""

from __future__ import annotations

from collections import Counter

from engine.methods.hybrid.attributes import (
    DYNAMISM,
    QUESTION_TYPES,
    attribute_messages,
    attribute_model,
    closest_label,
    cross_validated_accuracy,
    load_examples,
    majority,
    parse_attributes,
)
from engine.methods.hybrid.llm import LlmAttributePredictor
from fake_chat import ScriptedChat, cycling


def test_the_example_file_has_at_least_150_labelled_questions_over_every_label() -> None:
    examples = load_examples()
    assert len(examples) >= 150
    assert set(Counter(e.question_type for e in examples)) == set(QUESTION_TYPES)
    assert set(Counter(e.dynamism for e in examples)) == set(DYNAMISM)
    assert len({e.question for e in examples}) == len(examples)


def test_cross_validated_accuracy_is_above_a_sane_floor(demo_workbench) -> None:
    scores = cross_validated_accuracy(demo_workbench.retrieval.embedder)
    # chance is 1/8 and 1/4; the gate's two classes are what the policy uses
    assert scores["question_type"] >= 0.4 and scores["dynamism"] >= 0.6 and scores["static_or_dynamic"] >= 0.85


def test_the_offline_model_reads_time_words(demo_workbench) -> None:
    model = attribute_model(demo_workbench.retrieval.embedder)
    assert model.predict("What is the share price of Siemens right now?").dynamism in ("real-time", "fast-changing")
    assert model.predict("In which year was the Eiffel Tower completed?").dynamism == "static"


def test_labels_parse_by_substring_then_by_the_closest_label() -> None:
    assert parse_attributes("question_type: multi-hop\ndynamism: slow-changing") == ("multi-hop", "slow-changing")
    assert parse_attributes("Question type = Comparison.\nDynamism: statc") == ("comparison", "static")
    assert parse_attributes("no label here") is None and parse_attributes("") is None
    assert closest_label("simple with condition", QUESTION_TYPES) == "simple"
    assert closest_label("simple_w_condition", QUESTION_TYPES) == "simple_w_condition"


def test_majority_vote_breaks_ties_by_the_first_vote() -> None:
    assert majority(["static", "real-time", "real-time"]) == ("real-time", 0.6667)
    assert majority(["static", "real-time"]) == ("static", 0.5)


def test_demonstrations_are_drawn_reproducibly_from_the_question() -> None:
    examples = load_examples()
    assert attribute_messages("Who is it?", examples)[0] == attribute_messages("Who is it?", examples)[0]
    assert attribute_messages("Who is it?", examples)[0][1:-1] != attribute_messages("What is it?", examples)[0][1:-1]


def test_icl_votes_go_by_majority_and_unparsable_samples_fall_back(demo_workbench) -> None:
    model = attribute_model(demo_workbench.retrieval.embedder)
    chat = cycling("question_type: set\ndynamism: real-time", "question_type: set\ndynamism: static",
                   "question_type: comparison\ndynamism: real-time")
    got = LlmAttributePredictor(chat, model, samples=3).predict("Which teams play tonight?")
    assert (got.question_type, got.dynamism, got.method) == ("set", "real-time", "icl")
    assert len(got.votes) == 3 and len([s for s in got.steps if s.kind == "llm_call"]) == 3
    broken = LlmAttributePredictor(ScriptedChat(lambda _p: "no idea"), model, samples=2).predict("Who won?")
    assert broken.method == "logreg (icl fallback)" and broken.steps[-1].kind == "error"


def test_a_sample_that_does_not_parse_is_an_error_step_quoting_it_and_casts_no_vote(demo_workbench) -> None:
    model = attribute_model(demo_workbench.retrieval.embedder)
    chat = cycling("question_type: simple\ndynamism: static", "no idea, sorry")
    got = LlmAttributePredictor(chat, model, samples=2).predict("Where was Marie Curie born?")
    assert got.votes == ("simple / static",) and got.method == "icl"
    assert [s.kind for s in got.steps] == ["llm_call", "llm_call", "error"]
    assert "no idea, sorry" in got.steps[2].message


def test_the_prompt_has_five_demonstrations_then_the_query() -> None:
    messages, segments = attribute_messages("Who is it?", load_examples())
    assert [m.role for m in messages] == ["system", *["user", "assistant"] * 5, "user"]
    assert all(m.content.startswith("Question: ") for m in messages[1::2])
    assert all(parse_attributes(m.content) for m in messages[2::2])  # each demonstration answers in the format
    assert messages[-1].content == "Question: Who is it?" and "Reply with exactly two lines" in messages[0].content
    assert messages[-1].content[segments[0].start:segments[0].end] == "Who is it?"
