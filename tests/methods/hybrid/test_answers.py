"""The answer checks small models need: refusals in other words, recitals, replies that say nothing, bent markers."""

from __future__ import annotations

from engine.methods.hybrid.answers import first_answer, marked, says_nothing, says_unknown, without_copies
from engine.methods.hybrid.reasoner import without_repeats

QUESTION = "Where was Marie Curie born?"


def test_refusals_in_other_words_are_told_from_answers() -> None:
    assert all(says_unknown(t) for t in ("unknown", "Unknown.", "Her spouse is unknown", "not mentioned",
                                         "There is no information about it", "It cannot be determined"))
    assert not any(says_unknown(t) for t in ("Warsaw", "Unknown Pleasures", "The Unknown Soldier", "1867"))


def test_markers_and_first_answers() -> None:
    assert marked("x\n## Answer: y", "answer") == (2, 12)
    assert marked("The answer: y", "answer") is None  # only at a line's start
    assert first_answer("\n\nWarsaw\nmore") == "Warsaw" and first_answer("1. A\n2. B\nlater") == "A, B"
    assert without_repeats("1. a\n2. b\n3. a\n- b") == "1. a\n2. b"


def test_a_reply_says_nothing_only_when_it_is_the_question_and_the_instructions_handed_back() -> None:
    rules = ["## Answer:\n<short answer>\n## False Premise:\n<yes or no>\nInvalid question"]
    assert says_nothing(f"## Answer:\n## Invalid question: {QUESTION}", QUESTION, rules)
    assert says_nothing("## Answer:\n## Answer:", QUESTION, rules)
    choice = "Which is longer, the Elbe or the Vistula?"
    assert not says_nothing("The Vistula is longer.", choice, rules)  # an option of the question, picked
    assert not says_nothing("## Answer:\nWarsaw", QUESTION, rules)


def test_only_lines_reciting_eight_words_of_the_instructions_are_dropped() -> None:
    rules = ['1. If the references do not contain the information needed, the answer is "I don\'t know".']
    text = ("If the references do not contain the information needed, say I don't know.\nI don't know\n"
            "Warsaw is the answer")
    assert without_copies(text, rules) == "I don't know\nWarsaw is the answer"
