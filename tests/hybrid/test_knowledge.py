"""The knowledge extractor's parser: answer, I don't know, invalid question, parse failure."""

from __future__ import annotations

import pytest

from engine.hybrid.knowledge import KnowledgeExtractor, parse_direct
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


def test_the_extractor_sends_only_the_question() -> None:
    chat = fixed("## Answer: Ulm")
    got = KnowledgeExtractor(chat).answer("Where was Albert Einstein born?")
    assert (got.parsed, got.kind) == ("Ulm", "answer")
    assert "References" not in chat.sent[0] and chat.sent[0].rstrip().endswith("Where was Albert Einstein born?")
