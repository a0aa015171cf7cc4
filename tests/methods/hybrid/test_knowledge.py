"""The knowledge extractor's parser: answer, I don't know, invalid question, parse failure."""

from __future__ import annotations

import pytest

from engine.methods.hybrid.knowledge import parse_direct
from engine.methods.hybrid.llm import LlmKnowledgeExtractor
from fake_chat import fixed


@pytest.mark.parametrize(("text", "expected"), [
    ("===START===\n## Reasoning:\n- fine\n------\n## Answer:\nWarsaw\n===END===", ("Warsaw", "answer")),
    ("## answer: Warsaw", ("Warsaw", "answer")),
    ("I don't know.", ("I don't know", "idk")),
    ("", ("I don't know", "idk")),
    ("## Answer:\nInvalid question\n===END===", ("invalid question", "invalid")),
    ("Warsaw, I think", ("I don't know", "parse_fail")),
    ("## Answer:\n===END===", ("I don't know", "parse_fail")),
])
def test_direct_answers_parse_as_the_spec_says(text, expected) -> None:
    assert parse_direct(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("Marie Curie was born in Poland, Poland.", ("I don't know", "parse_fail")),  # SmolLM2: no marker at all
    ('The answer is "1990".\nThe last year after his birth was 1990.', ("1990", "answer")),  # SmolLM2
    ("**Answer:** Warsaw\nBecause she grew up there.", ("Warsaw", "answer")),
    ("### answer\n- Polonium\n- Radium\n\nBoth in 1898.", ("Polonium, Radium", "answer")),
    ("## Answer: her birthplace is unknown", ("I don't know", "idk")),
    ("===START===\n## Reasoning:\n- she was a physicist", ("I don't know", "parse_fail")),  # the format, no answer
    ("Where was Marie Curie born?", ("I don't know", "parse_fail")),  # the question echoed
    ("Warsaw " * 50, ("I don't know", "parse_fail")),
])
def test_a_small_models_bent_formats_parse_to_its_answer_or_fail(text, expected) -> None:
    assert parse_direct(text, "Where was Marie Curie born?") == expected


def test_the_extractor_sends_only_the_question() -> None:
    chat = fixed("## Answer: Ulm")
    got = LlmKnowledgeExtractor(chat).answer("Where was Albert Einstein born?")
    assert (got.parsed, got.kind) == ("Ulm", "answer")
    assert chat.sent[0] == "Where was Albert Einstein born?"


def test_a_closed_book_answer_that_does_not_parse_is_an_error_step_and_passed_on_as_i_dont_know() -> None:
    got = LlmKnowledgeExtractor(fixed("Warsaw, I think")).answer("Where was Marie Curie born?")
    assert (got.parsed, got.kind) == ("I don't know", "parse_fail")
    assert [s.kind for s in got.steps] == ["llm_call", "error"] and "Warsaw, I think" in got.steps[1].message


def test_generation_stops_at_the_end_marker_within_a_short_budget() -> None:
    settings = LlmKnowledgeExtractor(fixed("")).settings
    assert settings.stop == ("===END===", "\nQuestion:") and settings.max_new_tokens <= 256


def test_the_instructions_are_the_system_turn_with_the_spouse_example() -> None:
    got = LlmKnowledgeExtractor(fixed("## Answer: Ulm")).answer("Where was Albert Einstein born?")
    system, user = got.steps[0].prompt.split("[user]\n")
    assert system.startswith("[system]\n") and "spouse of someone who has never been married" in system
    assert "Check the premise of the question first" in system and user == "Where was Albert Einstein born?"
