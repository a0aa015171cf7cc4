"""The LLM classifier on replies a real small model gave (SmolLM2-135M-Instruct, demo and geo questions):
it answers the question or copies the prompt instead of naming a label, and the offline rules take over."""

from __future__ import annotations

import pytest

from engine.tools.llm_classifier import LlmQuestionClassifier
from engine.tools.offline_classifier import OfflineQuestionClassifier
from engine.trace import ErrorStep
from fake_chat import fixed

CHOICE = "Who received the Nobel Prize in Physics earlier, Niels Bohr or Werner Heisenberg?"


@pytest.mark.parametrize(("question", "output", "problem"), [
    # the label list's description of 'person' copied: the options of the choice must not be lost to it
    (CHOICE, "A person's name", "echoes an instruction line"),
    ("In which city was Werner Heisenberg's doctoral advisor born?",
     "In which city was Werner Heisenberg's doctoral advisor born?", "echoes the question"),
    ("Where was Marie Curie born?", "Marie Curie was born in Poland.", "had no label"),
    ("In what year did Roche move its head office from Basel to Zurich?", "The answer to this question is 2018.",
     "had no label"),
])
def test_a_reply_that_names_no_label_falls_back_to_the_offline_type_with_an_error_step(
        question: str, output: str, problem: str) -> None:
    answer_type, steps = LlmQuestionClassifier(fixed(output)).classify_with_steps(question)
    assert answer_type == OfflineQuestionClassifier().classify(question)
    error = steps[-1]
    assert isinstance(error, ErrorStep) and error.recoverable
    assert f"classifier output {problem}" in error.message and output[:40] in error.message


def test_a_bare_label_is_still_taken() -> None:
    answer_type, steps = LlmQuestionClassifier(fixed("person")).classify_with_steps("Who discovered radium?")
    assert (answer_type.kind, [s.kind for s in steps]) == ("person", ["llm_call"])
