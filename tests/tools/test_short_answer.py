"""The echo guard and the sentence-to-short-answer cut, on replies a real small model (SmolLM2-135M) gave."""

from __future__ import annotations

import pytest

from engine.tools.prompts import load_prompt
from engine.tools.short_answer import (
    ECHO_RUN_WORDS,
    MAX_RAW_CHARS,
    Vetted,
    echo_of,
    rejected_step,
    restates_question,
    short_span,
    vet_answer,
)

CURIE = ("Marie Curie (born Maria Skłodowska, 1867–1934) was a physicist and chemist who was born in Warsaw, then "
         "part of the Russian Empire, and spent her working life in France.")
EVE = ("In 1954 she married the American diplomat Henry Richardson Labouisse, who later led UNICEF when that "
       "organisation received the Nobel Peace Prize in 1965.")
INSTRUCTIONS = load_prompt("reader")


# ---- echoes -----------------------------------------------------------------------------------------


def test_a_passage_copied_from_the_evidence_is_an_echo_of_that_evidence() -> None:
    # SmolLM2 on 'Where was Marie Curie born?' (rulerag, demo pack): two evidence passages spliced together
    reply = ("Marie Curie — The Royal Society awarded the Davy Medal in 1903. After Pierre Curie, she married the "
             "American diplomat Henry Richardson Labouisse, who later led UNICEF when that organisation received")
    assert echo_of(reply, "Where was Marie Curie born?", [CURIE, EVE]) == "evidence 2"


def test_a_short_answer_found_in_the_evidence_is_no_echo() -> None:
    assert echo_of("Warsaw", "Where was Marie Curie born?", [CURIE]) == ""
    assert echo_of("the American diplomat Henry Richardson Labouisse", "Whom did Ève Curie marry?", [EVE]) == ""


def test_the_copied_run_must_reach_the_echo_length() -> None:
    copied = " ".join(EVE.split()[: ECHO_RUN_WORDS - 1])
    assert echo_of(copied, "Q?", [EVE]) == ""
    assert echo_of(" ".join(EVE.split()[: ECHO_RUN_WORDS + 1]), "Q?", [EVE]) == "evidence 1"


@pytest.mark.parametrize("reply", [
    "Where was Marie Curie born",
    "where was Marie Curie born?",
    # SmolLM2, geo pack: the question handed back as the answer
    "The big companies with headquarters in Munich: the electrical group, the carmaker, and the insurer",
])
def test_the_question_handed_back_is_an_echo_of_the_question(reply: str) -> None:
    questions = {"Munich": "Name the big companies with headquarters in Munich: the electrical group, the carmaker "
                           "and the insurer."}
    question = questions["Munich"] if "Munich" in reply else "Where was Marie Curie born?"
    assert echo_of(reply, question) == "the question"


@pytest.mark.parametrize(("reply", "question"), [
    ("Max Planck", "Who was born first, Max Planck or Albert Einstein?"),
    ("University of Munich", "Did he study at the University of Munich or the University of Berlin?"),
    ("Yes, Marie Curie was born in Warsaw", "Was Marie Curie born in Warsaw?"),
    # SmolLM2 on HotpotQA: only the question's words, but in an order that answers it
    ("George Atzerodt was older than Andrew Johnson.", "Who was older, George Atzerodt or Andrew Johnson?"),
])
def test_an_option_or_a_yes_taken_from_the_question_is_no_echo(reply: str, question: str) -> None:
    assert echo_of(reply, question) == ""


def test_the_options_of_a_choice_handed_back_together_are_an_echo() -> None:
    question = "Who was born first, Max Planck or Albert Einstein?"
    assert echo_of("Max Planck or Albert Einstein", question) == "the question"


def test_the_tail_of_a_long_question_handed_back_is_an_echo() -> None:
    # SmolLM2 (rulerag, geo pack): the things the question describes, copied instead of named
    question = "Name the big companies with headquarters in Munich: the electrical group, the carmaker and the insurer."
    assert echo_of("The electrical group, the carmaker, and the insurer.", question) == "the question"


def test_a_long_option_of_a_choice_is_no_echo() -> None:
    assert echo_of("J. R. R. Tolkien", "Who wrote The Hobbit, J. R. R. Tolkien or C. S. Lewis?") == ""


@pytest.mark.parametrize("reply", [
    "Give a short answer: an entity, a date or a number, not a sentence",
    "an entity, a date or a number",
    "Reply in exactly this format:",
])
def test_an_instruction_line_handed_back_is_an_echo_of_the_instructions(reply: str) -> None:
    assert echo_of(reply, "Where was Marie Curie born?", [CURIE], INSTRUCTIONS) == "an instruction line"


@pytest.mark.parametrize("reply", ["<short answer>", " <numbers of the evidence blocks used> "])
def test_a_placeholder_of_the_format_is_an_echo(reply: str) -> None:
    assert echo_of(reply, "Q?", (), INSTRUCTIONS) == "a placeholder of the reply format"


def test_instruction_words_that_are_a_real_answer_are_no_echo() -> None:
    # the reader's instructions name 'I don't know' and 'invalid question'; a two-word answer stays
    assert echo_of("invalid question", "Q?", (), INSTRUCTIONS) == ""
    assert echo_of("a number", "Q?", (), INSTRUCTIONS) == ""


@pytest.mark.parametrize("junk", ["", "   ", "...", "\x00"])
def test_nothing_to_echo_in_an_empty_reply(junk: str) -> None:
    assert echo_of(junk, "Where was Marie Curie born?", [CURIE], INSTRUCTIONS) == ""


@pytest.mark.parametrize(("question", "kind"), [("Where was Marie Curie born?", "place"),
                                              ("Who supervised Werner Heisenberg's doctoral thesis?", "person")])
def test_a_passage_number_is_no_answer_where_a_name_is_asked_for(question: str, kind: str) -> None:
    # SmolLM2, geo pack: '1\n\nThe answer is: 1', the number of an evidence passage
    assert vet_answer("1", question, [CURIE, EVE]) == Vetted(
        "", f"the answer '1' is the number of an evidence passage, but the question asks for a {kind}")


@pytest.mark.parametrize(("answer", "question"), [
    ("2", "How many moons does Mars have?"),
    ("2", "In which year was Marie Curie born?"),
    ("1989", "Which album did Taylor Swift release in 2014?"),
    ("3", "Which album did the band release first?"),
    ("12", "Where was Marie Curie born?"),  # beyond the passages' numbers: the model's own answer, kept
])
def test_a_bare_number_stays_the_answer_where_it_may_be_one(answer: str, question: str) -> None:
    assert vet_answer(answer, question, [CURIE, EVE]) == Vetted(answer)


# ---- sentences --------------------------------------------------------------------------------------


@pytest.mark.parametrize(("sentence", "question", "span"), [
    # SmolLM2 replies on the demo and geo packs
    ("Marie Curie was born in Warsaw, Poland, which is a country in central Europe.", "Where was Marie Curie born?",
     "Warsaw"),
    ("Erwin Schrödinger was a citizen of Switzerland.", "Of which country was Erwin Schrödinger a citizen by birth?",
     "Switzerland"),
    ("Niels Bohr received the Nobel Prize in Physics in 1939.",
     "In which year did Niels Bohr receive the Nobel Prize in Chemistry?", "1939"),
    ("The Elbe is the longer river.", "Which is longer, the Elbe or the Vistula?", "the Elbe"),
    ("Werner Heisenberg's doctoral advisor was Hermann von Helmholtz.",
     "Who supervised Werner Heisenberg's doctoral thesis?", "Hermann von Helmholtz"),
    ("Yes, Marie Curie was born in Warsaw.", "Was Marie Curie born in Warsaw?", "yes"),
    ("George Atzerodt was older than Andrew Johnson.", "Who was older, George Atzerodt or Andrew Johnson?",
     "George Atzerodt"),
    ("The bridge in Lyon that crosses the Rhine is the Pont d'Alsace.",
     "What is the name of the bridge in Lyon that crosses the Rhine?", "Pont d'Alsace"),
    ("The Danube is longer than the Rhine by 1,617 km.",
     "By how many kilometres does the Danube exceed the Rhine in length?", "1,617"),
    ("Marie Curie was born on 7 November 1867 in Warsaw.", "When was Marie Curie born?", "7 November 1867"),
    # the names the question gives are dropped from the front of a name run, common nouns are not
    ("Erwin Schrödinger of Germany", "Of which country was Erwin Schrödinger a citizen by birth?", "Germany"),
    ("Max Planck studied at the University of Munich", "Which university did Max Planck attend?",
     "University of Munich"),
])
def test_a_sentence_restating_the_question_is_cut_to_the_span_it_asks_for(sentence: str, question: str,
                                                                          span: str) -> None:
    assert restates_question(sentence, question)
    assert short_span(sentence, question) == span
    assert vet_answer(sentence, question) == Vetted(span, f"the answer is a sentence; took its short answer {span!r}")


@pytest.mark.parametrize(("answer", "question"), [
    ("Warsaw", "Where was Marie Curie born?"),
    ("Max Planck", "Who was born first, Max Planck or Albert Einstein?"),
    ("Werner Heisenberg, Wolfgang Pauli and Hans Bethe",
     "Which doctoral students of Arnold Sommerfeld received the Nobel Prize in Physics?"),
    ("University of Munich", "Which university did Max Planck attend?"),
    ("Rhine River", "What is the longest river in Germany?"),
])
def test_a_short_answer_is_taken_as_it_is(answer: str, question: str) -> None:
    assert not restates_question(answer, question)
    assert vet_answer(answer, question, [CURIE], INSTRUCTIONS) == Vetted(answer)


def test_a_sentence_without_a_span_of_the_asked_kind_is_kept_whole() -> None:
    sentence = "Marie Curie was born somewhere in central europe"
    assert restates_question(sentence, "Where was Marie Curie born?")
    assert short_span(sentence, "Where was Marie Curie born?") == ""
    assert vet_answer(sentence, "Where was Marie Curie born?") == Vetted(sentence)


def test_a_sentence_without_a_new_name_gives_what_follows_its_restated_question() -> None:
    # SmolLM2 replies: lower-case answers have no capital to find them by
    assert short_span("The chemical element that Albert Einstein discovered in 1905 is antimony.",
                      "Which chemical element did Albert Einstein discover in 1905?") == "antimony"
    assert short_span("The bridge in Lyon that crosses the Rhine is the main bridge in Lyon that crosses the Rhine",
                      "What is the name of the bridge in Lyon that crosses the Rhine?") == "main bridge in Lyon"
    # SmolLM2 on HotpotQA: the question restated, its clause cut at 'which': no answer in it
    assert short_span("Thirukkalacherry is a small village in which Indian town.",
                      "Thirukkalacherry is a village in which Indian town?") == ""


def test_an_echo_is_no_answer_even_when_it_would_restate_the_question() -> None:
    vetted = vet_answer("Where was Marie Curie born?", "Where was Marie Curie born?")
    assert vetted == Vetted("", "the answer echoes the question")


# ---- the error step -----------------------------------------------------------------------------------


def test_the_error_step_quotes_the_raw_reply_with_its_line_breaks_cut_to_length() -> None:
    step = rejected_step("reader", "the answer echoes evidence 2", "1\n\nThe answer is: " + "x " * 400)
    assert step.recoverable and step.title == "reader fell back"
    assert step.message.startswith(
        "reader output not taken as written: the answer echoes evidence 2. Raw output:\n1\n\n")
    assert len(step.message.split("Raw output:\n", 1)[1]) == MAX_RAW_CHARS and step.message.endswith("…")
