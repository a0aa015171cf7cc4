"""A known name found in a text is a mention only where it is no function word and no part of a longer name."""

from __future__ import annotations

import re

import pytest

from engine.graph.names import is_function_word, is_mention


def mentioned(text: str, name: str) -> list[bool]:
    return [is_mention(text, m.start(), m.end())
            for m in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text, re.IGNORECASE)]


@pytest.mark.parametrize("name", ["Who", "one", "The", "whose", "Name"])
def test_question_words_and_small_words_are_function_words(name):
    assert is_function_word(name)


def test_a_function_word_in_lower_case_or_first_in_a_sentence_is_grammar_not_a_name():
    assert mentioned("Who founded the one company? Who knows.", "who") == [False, False]
    assert mentioned("Which one sold more?", "one") == [False]


def test_a_function_word_capitalised_inside_a_sentence_is_a_title():
    assert mentioned("Which band recorded One in 1991?", "one") == [True]


def test_a_one_word_name_glued_to_a_capitalised_word_is_part_of_another_name():
    assert mentioned("Which club did Paul Okon play for?", "Paul") == [False]
    assert mentioned("Which club did Okon play for?", "Okon") == [True]
    assert mentioned("Did Okon play? By 1990 Okon retired.", "Okon") == [True, True]  # 'Did', '1990' are no names
