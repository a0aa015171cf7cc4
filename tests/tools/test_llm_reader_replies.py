"""The LLM reader on replies a real small model gave (SmolLM2-135M-Instruct on the demo and geo packs),
replayed through a scripted chat: the short answer inside is found, an echoed prompt is never the answer,
and whatever was not taken as written leaves an `error` step quoting the raw reply."""

from __future__ import annotations

import random

import pytest

from engine.tools.base import IDK, Reading
from engine.tools.llm_reader import FALLBACK_CONFIDENCE, LlmReader, ParsedAnswer, parse_reader_output
from engine.tools.prompts import load_prompt
from engine.tools.short_answer import echo_of
from engine.trace import ErrorStep, Hit
from fake_chat import fixed


def hit(doc_id: str, title: str, text: str) -> Hit:
    return Hit(doc_id=doc_id, chunk_id=f"{doc_id}#0", title=title, text=text, score=1.0, rank=1)


CURIE = hit("curie", "Marie Curie", "Marie Curie (1867–1934) was a physicist and chemist who was born in Warsaw, "
                                    "then part of the Russian Empire. In 1895 she married Pierre Curie.")
EVE = hit("eve", "Ève Curie", "Ève Curie was a writer, the younger daughter of Marie Curie. In 1954 she married the "
                              "American diplomat Henry Richardson Labouisse, who later led UNICEF when that "
                              "organisation received the Nobel Peace Prize in 1965.")
EVIDENCE = (CURIE, EVE)
BORN = "Where was Marie Curie born?"


def read(output: str, question: str = BORN) -> Reading:
    return LlmReader(fixed(output)).read(question, EVIDENCE)


def errors(reading: Reading) -> list[ErrorStep]:
    return [s for s in reading.steps if isinstance(s, ErrorStep)]


# ---- the parser ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(("output", "expected"), [
    # a citation number on a line of its own before the answer (vanilla, 'Where was Marie Curie born?')
    ("1\n\nThe answer is: Warsaw", ParsedAnswer("Warsaw", (), "", True)),
    ("1\n\nMax Planck\n\nAlbert Einstein", ParsedAnswer("Max Planck", (), "", False)),
    ("[2]\nWarsaw", ParsedAnswer("Warsaw", (), "", False)),
    ("The answer is Warsaw.", ParsedAnswer("Warsaw", (), "", True)),
    ("The answer to this question is: 2013", ParsedAnswer("2013", (), "", True)),
    # the label left empty, the answer on a later line, the label repeated
    ("1\n\nThe answer is:\n\nPorsche\n\nPorsche is a sports car maker.", ParsedAnswer("Porsche", (), "", True)),
    ("The answer is:\n\nThe answer is: Roche\n\nThe answer is:", ParsedAnswer("Roche", (), "", True)),
    ("[2] Warsaw", ParsedAnswer("Warsaw", (2,), "", False)),
    ("Answer: 2020\n\nThe answer is: Niels Bohr", ParsedAnswer("2020", (), "", True)),
    ("Question: Where was Marie Curie born?", ParsedAnswer("", (), "", False)),
    ("7", ParsedAnswer("7", (), "", False)),  # a lone number with nothing after it is the answer
    # a list is the answer to a question asking for several things, under a label or a lead-in or bare
    ("1. Peter Debye\n2. Linus Pauling\n3. Pierre Curie", ParsedAnswer("Peter Debye, Linus Pauling, Pierre Curie")),
    ("Answer:\n- Heisenberg\n- Pauli\nEvidence: 1, 2", ParsedAnswer("Heisenberg, Pauli", (1, 2), "", True)),
    ("The answer is:\n1. Heisenberg\n2. Pauli", ParsedAnswer("Heisenberg, Pauli", (), "", True)),
    ("The big companies with headquarters in Munich are:\n\n1. Siemens\n2. BMW\n\nThey are large.",
     ParsedAnswer("Siemens, BMW")),
])
def test_parser_finds_the_answer_small_models_write_around_the_format(output: str, expected: ParsedAnswer) -> None:
    assert parse_reader_output(output) == expected


# ---- sentences -----------------------------------------------------------------------------------------


def test_a_sentence_answer_is_cut_to_its_short_answer_with_an_error_step_quoting_the_reply() -> None:
    output = "1\n\nThe answer is: Marie Curie was born in Warsaw, Poland, which is a country in central Europe."
    reading = read(output)
    assert (reading.answer, reading.refused, reading.confidence) == ("Warsaw", False, FALLBACK_CONFIDENCE)
    sentence = errors(reading)[0]
    assert sentence.recoverable and "took its short answer 'Warsaw'" in sentence.message
    assert sentence.message.endswith("Raw output:\n" + output)


def test_a_clean_short_answer_has_no_error_step() -> None:
    reading = read("Answer: Warsaw\nEvidence: 1")
    assert (reading.answer, errors(reading)) == ("Warsaw", [])


# ---- echoes --------------------------------------------------------------------------------------------


@pytest.mark.parametrize(("output", "echoed"), [
    # rulerag degraded to Standard RAG, 'Where was Marie Curie born?': evidence passages handed back
    ("Marie Curie — The Royal Society awarded the Davy Medal in 1903. After Pierre Curie, she married the American "
     "diplomat Henry Richardson Labouisse, who later led UNICEF when that organisation received", "evidence 2"),
    ("1\n\n[1] Marie Curie — Marie Curie (1867–1934) was a physicist and chemist who was born in Warsaw",
     "evidence 1"),
    ("Answer: Where was Marie Curie born?\nEvidence: 1", "the question"),
    ("Answer: Give a short answer: an entity, a date or a number, not a sentence.", "an instruction line"),
    ("Answer: <short answer>\nEvidence: <numbers of the evidence blocks used, for example 1, 3>",
     "a placeholder of the reply format"),
])
def test_an_echoed_prompt_is_a_refusal_with_an_error_step_quoting_the_reply(output: str, echoed: str) -> None:
    reading = read(output)
    assert (reading.answer, reading.refused, reading.confidence, reading.citations) == (IDK, True, 0.0, ())
    (error,) = errors(reading)[-1:]
    assert error.recoverable and f"the answer echoes {echoed}" in error.message
    assert error.message.endswith("Raw output:\n" + output.strip())


def test_a_passage_number_given_as_the_answer_to_a_where_question_is_a_refusal() -> None:
    reading = read("1\n\nThe answer is: 1")  # vanilla on the geo pack, a 'which country' question
    assert (reading.answer, reading.refused) == (IDK, True)
    assert "the answer '1' is the number of an evidence passage" in errors(reading)[-1].message


def test_an_echo_of_the_invalid_question_instruction_is_still_the_gold_form() -> None:
    assert read("Answer: invalid question\nEvidence: 1").answer == "invalid question"


def test_whatever_a_model_replies_the_answer_is_never_the_prompt_echoed() -> None:
    """Replies cut from the prompt itself at random: the reader refuses or answers something else."""
    rng = random.Random(23)
    chat = fixed("")
    LlmReader(chat).read(BORN, EVIDENCE)
    prompt = chat.sent[0]
    for _ in range(200):
        start = rng.randrange(len(prompt))
        output = prompt[start: start + rng.randrange(1, 400)]
        reading = read(output)
        if not reading.refused:
            assert not echo_of(reading.answer, BORN, [h.text for h in EVIDENCE], load_prompt("reader")), output
        assert all(e.recoverable for e in errors(reading))
