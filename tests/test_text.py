"""The one text toolkit: words, sentences and name matching mean the same everywhere."""

from __future__ import annotations

import re

from engine.text import YEAR, content_words, is_year, list_items, name_pattern, split_sentences, words


def test_words_keep_inner_apostrophes_and_hyphens_but_not_a_possessive():
    assert words("Jean-Marie O'Neill's dog") == ["jean-marie", "o'neill", "dog"]
    assert words("Curie’s lab") == ["curie", "lab"]


def test_content_words_drop_stopwords_only():
    assert content_words("Where was the author of Dune born?") == ["author", "dune", "born"]


def test_sentences_keep_initials_and_abbreviations_whole():
    text = "J. R. R. Tolkien taught at Oxford. He was born in Bloemfontein. Dr. Smith moved to St. Louis in 1900."
    assert split_sentences(text) == [
        "J. R. R. Tolkien taught at Oxford.",
        "He was born in Bloemfontein.",
        "Dr. Smith moved to St. Louis in 1900.",
    ]


def test_a_run_on_sentence_past_max_chars_is_cut_into_pieces_for_the_encoder():
    run_on = " ".join(f"w{i}" for i in range(130))  # a page without punctuation: one 'sentence'
    assert split_sentences(run_on) == [run_on]
    pieces = split_sentences(f"Short one.\n{run_on}", max_chars=100)
    assert pieces[0] == "Short one." and [len(p.split()) for p in pieces[1:]] == [60, 60, 10]
    assert " ".join(pieces[1:]) == run_on


def test_a_line_break_always_ends_a_sentence_and_blank_lines_vanish():
    assert split_sentences("Title\n\nFirst line. Second line\n  ") == ["Title", "First line.", "Second line"]


def test_sentences_end_before_quotes_and_digits():
    assert split_sentences('He said "never." 1905 was his year.') == ['He said "never."', "1905 was his year."]


def test_name_pattern_matches_whole_names_longest_first_ignoring_case():
    pattern = name_pattern(["Paris", "Paris Hilton", "Io"])
    assert pattern is not None
    assert [m.group(1) for m in pattern.finditer("paris hilton left Paris; Parisian")] == ["paris hilton", "Paris"]
    assert name_pattern(["Io"]) is None  # shorter than min_length
    assert name_pattern([]) is None


def test_name_pattern_escapes_regex_characters():
    pattern = name_pattern(["C++ (language)"])
    assert pattern is not None and pattern.search("I write C++ (language) daily")


def test_alpha_words_keep_case_and_accents_and_drop_numbers():
    from engine.text import alpha_words

    assert alpha_words("Écully and Łódź, 1905 or B2-unit's") == ["Écully", "and", "Łódź", "or", "B2-unit"]


def test_splitting_is_linear_on_hostile_text(monkeypatch):
    import engine.text

    searched: list[int] = []  # characters the word before each break was looked for in
    last_word = engine.text._LAST_WORD

    class Spy:
        def search(self, text: str) -> re.Match[str] | None:
            searched.append(len(text))
            return last_word.search(text)

    monkeypatch.setattr(engine.text, "_LAST_WORD", Spy())
    assert len(split_sentences("Ab. " * 20000)) == 20000
    assert len(split_sentences(("x" * 5000 + ". ") * 20 + "B")) == 2  # a break only before the capital
    assert searched and max(searched) <= 64  # never the whole piece before a break: that was quadratic (3 s)


def test_a_year_is_1000_to_2099_standing_alone_from_other_digits():
    assert [m.group(1) for m in YEAR.finditer("born 1905, died 2099; not 12345 nor 999 nor 2100")] == ["1905", "2099"]
    assert is_year("1879") and not is_year("1879s") and not is_year("879")


def test_a_listed_answer_splits_into_items_but_a_thousands_separator_does_not():
    assert list_items("Oslo, Bergen and Tromsø") == ["Oslo", "Bergen", "Tromsø"]
    assert list_items("Oslo; Bergen") == ["Oslo", "Bergen"]
    assert list_items("1,047 km") == ["1,047 km"]
    assert list_items("1867, 1934") == ["1867", "1934"]
    assert list_items("Procter & Gamble") == ["Procter & Gamble"]
