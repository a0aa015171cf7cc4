"""The LLM question classifier with scripted fake chat models: label parsing and the offline fallback."""

from __future__ import annotations

import itertools
from collections.abc import Sequence

import pytest

from engine.errors import BackendError
from engine.tools.base import AnswerType
from engine.tools.llm_classifier import LABELS, LlmQuestionClassifier, parse_label
from engine.tools.offline_classifier import OfflineQuestionClassifier
from engine.trace import ErrorStep, LlmCallStep, Step
from fake_chat import FailingChat, ScriptedChat, fixed

CHOICE = "Who was born first, Marie Curie or Pierre Curie?"


def kinds(steps: Sequence[Step]) -> list[str]:
    return [s.kind for s in steps]


def test_classifier_returns_the_label_the_model_names_and_records_the_call() -> None:
    chat = fixed("person")
    answer_type, steps = LlmQuestionClassifier(chat).classify_with_steps("Which scientist discovered radium?")
    assert answer_type == AnswerType("person")
    (call,) = steps
    assert isinstance(call, LlmCallStep) and call.role == "classifier" and call.output == "person"
    assert call.prompt == "[user]\n" + chat.sent[0] and call.backend == "fake: scripted"


def test_classify_gives_the_same_answer_type_as_classify_with_steps() -> None:
    classifier = LlmQuestionClassifier(fixed("Label: date"))
    assert classifier.classify("When did it open?") == classifier.classify_with_steps("When did it open?")[0]


@pytest.mark.parametrize(("output", "label"), [
    ("place", "place"),
    ("Label: **Place**", "place"),
    ("The answer type is: date.", "date"),
    ("NUMBER", "number"),
    ("Yes/No", "yes_no"),
    ("yes or no", "yes_no"),
    ("yes_no", "yes_no"),
    ("yes-no question", "yes_no"),
    ("This asks for an entity, not a person.", "entity"),
    ("another thing", ""),
    ("", ""),
])
def test_label_parser_takes_the_first_known_label_word(output: str, label: str) -> None:
    assert parse_label(output) == label


def test_every_label_is_offered_in_the_prompt_and_parses_back() -> None:
    chat = fixed("")
    LlmQuestionClassifier(chat).classify("Who?")
    for label in LABELS:
        assert label in chat.sent[0] and parse_label(label) == label


def test_choice_options_and_order_come_from_the_offline_classifier() -> None:
    answer_type, steps = LlmQuestionClassifier(fixed("choice")).classify_with_steps(CHOICE)
    assert answer_type == OfflineQuestionClassifier().classify(CHOICE)
    assert answer_type.options == ("Marie Curie", "Pierre Curie") and answer_type.order == "min"
    assert kinds(steps) == ["llm_call"]


def test_a_choice_label_without_options_in_the_question_falls_back_to_the_offline_type() -> None:
    answer_type, steps = LlmQuestionClassifier(fixed("choice")).classify_with_steps("Who discovered radium?")
    assert answer_type == AnswerType("person")
    assert kinds(steps) == ["llm_call", "error"] and "no options" in steps[1].message


def test_the_models_label_wins_over_the_offline_type() -> None:
    # offline rules call 'what is X' other; a model that knows better is believed
    assert LlmQuestionClassifier(fixed("entity")).classify("What is Drisheen?") == AnswerType("entity")


@pytest.mark.parametrize("output", ["I am not sure.", "", "{}<script>"])
def test_an_unparseable_reply_falls_back_to_the_offline_classifier_with_an_error_step(output: str) -> None:
    answer_type, steps = LlmQuestionClassifier(fixed(output)).classify_with_steps("When was Marie Curie born?")
    assert answer_type == AnswerType("date")
    error = steps[1]
    assert kinds(steps) == ["llm_call", "error"] and isinstance(error, ErrorStep) and error.recoverable
    assert "no label of person|place|date" in error.message and "offline classifier's 'date'" in error.message


def test_a_failing_model_falls_back_to_the_offline_classifier_without_raising() -> None:
    chat = FailingChat(BackendError("model 'tiny' is not loaded; load it on the Models page"), backend="hf",
                       model="tiny")
    answer_type, steps = LlmQuestionClassifier(chat).classify_with_steps(CHOICE)
    assert answer_type == OfflineQuestionClassifier().classify(CHOICE)
    call, error = steps
    assert isinstance(call, LlmCallStep) and call.output == "" and call.backend == "hf: tiny"
    assert isinstance(error, ErrorStep) and "not loaded" in error.message


def test_questions_with_braces_reach_the_model_verbatim() -> None:
    chat = fixed("other")
    LlmQuestionClassifier(chat).classify("What does {question} <script>x</script> mean?")
    assert "Question: What does {question} <script>x</script> mean?\n" in chat.sent[0]


def test_one_classifier_labels_successive_questions_with_successive_replies() -> None:
    replies = itertools.cycle(["date", "place"])
    classifier = LlmQuestionClassifier(ScriptedChat(lambda _prompt: next(replies)))
    assert [classifier.classify(q).kind for q in ("When?", "Where?", "When again?")] == ["date", "place", "date"]


def test_an_empty_question_is_typed_other_without_asking_the_model() -> None:
    chat = fixed("person")
    assert LlmQuestionClassifier(chat).classify_with_steps("  ") == (AnswerType("other"), ())
    assert chat.sent == []
