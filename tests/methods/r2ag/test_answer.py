"""R2AG's answer parser and its echo guard, as a pair: the first line, labels removed, never the prompt handed back.

The echoes are SmolLM2-135M-Instruct's own outputs on the demo pack (issue 23)."""

from __future__ import annotations

import pytest

from engine.methods.r2ag.answer import first_line, instructions_of, parse_output
from engine.methods.r2ag.prompt import PROMPTS
from engine.tools.short_answer import echo_of

CURIE = ("Marie Curie (born Maria Skłodowska, 1867–1934) was a physicist and chemist who was born in Warsaw, "
         "then part of the Russian Empire, and spent her working life in France. She studied at the University of "
         "Paris, where Gabriel Lippmann supervised her doctoral research on the rays given off by uranium. The Royal "
         "Society awarded the Curies the Davy Medal in 1903.")
EVE = ("Ève Curie (1904–2007) was a French and American writer, journalist and pianist, the younger daughter of Marie "
       "Curie and Pierre Curie. In 1954 she married the American diplomat Henry Richardson Labouisse, who later led "
       "UNICEF when that organisation received the Nobel Peace Prize in 1965.")
PLANCK = ("Max Planck — In 1900 he derived the law of black-body radiation by assuming that energy is exchanged in "
          "discrete quanta, an idea that founded quantum theory; the constant he introduced is called the Planck "
          "constant.")
DOCS = [CURIE, EVE, PLANCK]
INSTRUCTIONS = PROMPTS.load("prompt")
QUESTION = "Where was Marie Curie born?"


@pytest.mark.parametrize(("raw", "answer"), [
    ("Warsaw", "Warsaw"),
    ("Answer: Warsaw\nQuestion: next", "Warsaw"),
    ("The answer is: Switzerland", "Switzerland"),
    ("the answer is 1906.", "1906."),
    ("(1) Technetium was discovered first, Francium.", "Technetium was discovered first, Francium."),
    ("[2] Answer: Paris", "Paris"),
    ("Answer:\n\nWarsaw\n", "Warsaw"),
    ("(1)\nWarsaw", "Warsaw"),
    ("(1998)", "(1998)"),
    ("The answerer was Bob", "The answerer was Bob"),
    ("", ""),
])
def test_the_first_line_is_the_answer_without_the_labels_a_model_puts_before_it(raw, answer):
    assert first_line(raw) == answer


@pytest.mark.parametrize(("answer", "echoed"), [
    (QUESTION, "the question"),
    ("In which year did Niels Bohr receive the Nobel Prize in Chemistry?", "the question"),
    ("Only give the answer and do not output any other words.", "an instruction line"),
    ("The similarity information is provided in front of each search result", "an instruction line"),
    ("Marie Curie — The Royal Society awarded the Davy Medal in 1903. After Pierre Curie, she married the American "
     "diplomat Henry Richardson Labouisse, who later led UNICEF when that organisation received", "evidence 2"),
    ("(Title: Max Planck) In 1900 he derived the law of black-body radiation by assuming that energy is exchanged in "
     "discrete quanta", "evidence 3"),
    ("She studied at the University of Paris, where Gabriel Lippmann supervised her doctoral research on the rays "
     "given off by uranium", "evidence 1"),
    ("Marie Curie was a physicist and chemist, spent her working life in France and studied at the University of "
     "Paris", "a passage of evidence 1"),
])
def test_an_answer_that_only_repeats_the_prompt_is_an_echo(answer, echoed):
    question = "In which year did Niels Bohr receive the Nobel Prize in Chemistry?" if "Bohr" in answer else QUESTION
    assert echo_of(answer, question, DOCS, INSTRUCTIONS) == echoed


@pytest.mark.parametrize("answer", [
    "Warsaw",
    "Marie Curie",  # a name the question holds: the answer to "who, A or B?"
    "the University of Paris",
    "Marie Curie was born in Warsaw, Poland, and her father was a Polish-born physicist.",
    "She was born in Warsaw, then part of the Russian Empire",  # a copied clause, still an answer
    "I don't know",
])
def test_extractive_answers_and_sentences_are_not_echoes(answer):
    assert echo_of(answer, QUESTION, DOCS, INSTRUCTIONS) == ""


def test_an_echo_or_an_empty_output_parses_to_no_answer_and_says_why():
    assert parse_output("Warsaw\nmore text", QUESTION, INSTRUCTIONS, DOCS).answer == "Warsaw"
    echoed = parse_output(QUESTION + "<|im_end|>", QUESTION, INSTRUCTIONS, DOCS)
    assert echoed.answer == "" and echoed.problem == "the model echoed the question instead of answering"
    assert parse_output("  \n", QUESTION, INSTRUCTIONS, DOCS).problem == "the model wrote no answer"


def test_the_instructions_of_a_prompt_are_what_is_left_without_question_and_documents():
    prompt = f"Read these.\n[1] {CURIE}\n[2] {EVE}\nQuestion: {QUESTION}\nAnswer:"
    left = instructions_of(prompt, QUESTION, [CURIE, EVE])
    assert "Read these." in left and "Warsaw" not in left and "Question:" in left and QUESTION not in left
