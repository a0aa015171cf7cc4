"""Prompt templates load from text files and fill without tripping over braces in the values."""

from __future__ import annotations

import re

import pytest

from engine.errors import UnknownNameError
from engine.tools.prompts import fill, fill_spans, known_prompts, load_prompt


def placeholders(template: str) -> set[str]:
    return set(re.findall(r"\{(\w+)\}", template))


def test_known_prompts_include_the_reader_and_the_classifier() -> None:
    assert {"reader", "classifier"} <= set(known_prompts())


def test_reader_template_has_exactly_the_evidence_facts_and_question_placeholders() -> None:
    assert placeholders(load_prompt("reader")) == {"evidence", "facts", "question"}


def test_classifier_template_has_only_the_question_placeholder() -> None:
    assert placeholders(load_prompt("classifier")) == {"question"}


def test_load_prompt_is_cached() -> None:
    assert load_prompt("reader") is load_prompt("reader")


@pytest.mark.parametrize("name", ["nope", "../base", "READER", "", "reader.txt"])
def test_load_prompt_rejects_unknown_names_and_lists_the_known_ones(name: str) -> None:
    with pytest.raises(UnknownNameError, match=r"unknown prompt .*known: .*reader"):
        load_prompt(name)


def test_fill_substitutes_only_the_given_names() -> None:
    assert fill("{a} and {b}", a="x") == "x and {b}"


def test_fill_leaves_other_braces_alone() -> None:
    template = "json {} {{a}} { a } {0} {a}"
    assert fill(template, a="x") == "json {} {x} { a } {0} x"


def test_fill_does_not_substitute_inside_the_values() -> None:
    assert fill("{a} / {b}", a="{b}", b="<script>{a}</script>") == "{b} / <script>{a}</script>"


def test_fill_turns_values_into_text() -> None:
    assert fill("{n} items", n=3) == "3 items"


def test_fill_spans_point_at_where_each_value_landed() -> None:
    text, spans = fill_spans("Q: {question}\nE: {evidence}\nQ again: {question}", question="Why {x}?", evidence="")
    assert text[slice(*spans["question"])] == "Why {x}?"
    assert spans["question"][0] == 3  # the first occurrence
    assert spans["evidence"][0] == spans["evidence"][1] == text.index("E: ") + 3


def test_fill_spans_without_values_returns_the_template_unchanged() -> None:
    assert fill_spans("plain {text}") == ("plain {text}", {})
