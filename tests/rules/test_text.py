"""Rules written as the paper's bracketed text and as sentences."""

from __future__ import annotations

from engine.knowledge.records import Rule
from engine.rules.text import number_word, relation_label, rule_sentence, rule_text


def test_rule_text_is_the_papers_bracketed_form():
    assert rule_text("citizen_of", ("born_in", "located_in")) == (
        "[X, born in, Z] and [Z, located in, Y] leads to [X, citizen of, Y]")


def test_a_backwards_step_swaps_its_arguments():
    assert rule_text("relative", ("~relative",)) == "[Y, relative, X] leads to [X, relative, Y]"
    assert rule_text("field", ("~child", "field")) == "[Z, child, X] and [Z, field, Y] leads to [X, field, Y]"


def test_longer_bodies_number_their_middle_variables():
    assert rule_text("h", ("a", "b", "c")).startswith("[X, a, Z1] and [Z1, b, Z2] and [Z2, c, Y]")


def test_rule_sentence_prefers_the_packs_text_and_generates_one_otherwise():
    assert rule_sentence(Rule("r", "h", ("a",), 1.0, 1, text="Own words.")) == "Own words."
    assert rule_sentence(Rule("r", "citizen_of", ("~child", "born_in"), 1.0, 1)) == (
        "If Z child X and Z born in Y, then X citizen of Y.")


def test_relation_labels_and_number_words():
    assert relation_label("~doctoral_advisor") == "doctoral advisor"
    assert [number_word(n) for n in (1, 3, 11)] == ["One", "Three", "11"]
