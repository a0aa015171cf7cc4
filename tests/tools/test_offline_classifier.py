"""Rule-based answer typing: wh-words, head nouns, auxiliary-first questions and 'A or B' choices."""

from __future__ import annotations

import pytest

from engine.tools.base import AnswerType
from engine.tools.offline_classifier import OfflineQuestionClassifier, choice_options

classify = OfflineQuestionClassifier().classify


@pytest.mark.parametrize(
    ("question", "kind"),
    [
        ("Who wrote Hamlet?", "person"),
        ("Whom did she marry?", "person"),
        ("Whose portrait hangs in the hall?", "person"),
        ("The film was directed by whom?", "person"),
        ("Which American writer wrote Moby-Dick?", "person"),
        ("What is the name of the founder of the company?", "person"),
        ("When was the bridge built?", "date"),
        ("What year did the war end?", "date"),
        ("In which year was the treaty signed?", "date"),
        ("In what decade did the band form?", "date"),
        ("The saint was born on what date?", "date"),
        ("Where was Marie Curie born?", "place"),
        ("In which city did Albert Einstein die?", "place"),
        ("Which country is the island part of?", "place"),
        ("The resort is located in which US city?", "place"),
        ("How many moons does Mars have?", "number"),
        ("How much did the painting cost?", "number"),
        ("How old was she when she died?", "number"),
        ("How long is the river?", "number"),
        ("What number is the highway?", "number"),
        ("What was the 2010 population of the village?", "number"),
        ("The village had a 2011 population of what?", "number"),
        ("Is Paris the capital of France?", "yes_no"),
        ("Was the bridge finished before 1900?", "yes_no"),
        ("Did Marie Curie win two Nobel Prizes?", "yes_no"),
        ("Does the river flow north?", "yes_no"),
        ("Has the album gone platinum?", "yes_no"),
        ("Can penguins fly?", "yes_no"),
        ("Are Ferocactus and Silene both types of plant?", "yes_no"),
        ("Which element did Marguerite Perey discover?", "entity"),
        ("What type of product is drisheen?", "entity"),
        ("Of all the teams he played for, which team was known as the Blues?", "entity"),
        ("What is Drisheen?", "other"),
        ("How did he die?", "other"),
        ("Tell me about the moon.", "other"),
        ("", "other"),
    ],
)
def test_classifier_types_questions_by_their_wording(question: str, kind: str) -> None:
    assert classify(question).kind == kind


def test_classifier_reads_a_comma_choice_with_its_options_and_order() -> None:
    answer_type = classify("Who was born first, Marie Curie or Pierre Curie?")
    assert answer_type == AnswerType("choice", options=("Marie Curie", "Pierre Curie"), order="min")


@pytest.mark.parametrize(
    ("question", "options", "order"),
    [
        ("Which is older, the Nile or the Amazon?", ("the Nile", "the Amazon"), "min"),
        ("Who is younger Kirk Humphreys or Tom Coburn?", ("Kirk Humphreys", "Tom Coburn"), "max"),
        ("Is Paris or Berlin larger?", ("Paris", "Berlin"), "max"),
        ("Which river is longer, the Nile or the Amazon?", ("the Nile", "the Amazon"), "max"),
        ("Which has fewer species, Ferocactus or Silene?", ("Ferocactus", "Silene"), "min"),
        ("Which came first: the Beatles, the Stones, or the Who?", ("the Beatles", "the Stones", "the Who"), "min"),
        ("Which of Tom or Jerry is older?", ("Tom", "Jerry"), "min"),
        ("Who is taller between Ann Smith and Bob Jones?", ("Ann Smith", "Bob Jones"), "max"),
        ("Which city is the capital, Zurich or Copenhagen?", ("Zurich", "Copenhagen"), ""),
        ("Who died later, Pierre Curie or Marie Curie?", ("Pierre Curie", "Marie Curie"), "max"),
        # issue 27: an either-or question is a choice even when it opens with an auxiliary, never yes/no
        ("Is it a city or a town?", ("city", "town"), ""),
    ],
)
def test_classifier_finds_the_options_of_choice_questions(question: str, options: tuple[str, ...], order: str) -> None:
    answer_type = classify(question)
    assert (answer_type.kind, answer_type.options, answer_type.order) == ("choice", options, order)


@pytest.mark.parametrize(
    "question",
    [
        "What word or phrase is found in both?",  # lower-case 'A or B' without a comma is not a choice
        "Who is older between the brothers?",
        "What is the top speed of the faster coaster, between The Riddler and Green Lantern?",
    ],
)
def test_classifier_does_not_invent_options(question: str) -> None:
    assert classify(question).kind != "choice"
    assert choice_options(question) == ()


def test_choice_options_returns_nothing_for_a_plain_question() -> None:
    assert choice_options("Where was Marie Curie born?") == ()


def test_classifier_never_raises_on_odd_input() -> None:
    for question in ("?", "   ", "or or or", "A or", ", or ,", "x" * 5000, None):
        assert isinstance(classify(question), AnswerType)  # type: ignore[arg-type]
