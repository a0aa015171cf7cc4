"""Issue 27's false premises, on a chess KG no pack uses: the check must not call a premise false because a
fact is stored the other way round, under a sibling relation, or under a relation the subject's kind never has.
"""

from __future__ import annotations

import pytest

from engine.graph.kg import KnowledgeGraph
from engine.graph.linking import EntityLinker
from engine.knowledge.records import Triple
from engine.methods.hybrid.premise import PremiseChecker

PLAYERS = {
    "Mira Kovac": [("born_in", "Split"), ("coached_by", "Ivan Horvat"), ("trained_at", "Riga Chess Club"),
                   ("rival", "Ola Lind"), ("played_in", "Tallinn Open"), ("champion_of", "Tallinn Open")],
    "Jonas Berg": [("born_in", "Bergen"), ("trained_at", "Riga Chess Club"), ("played_in", "Bled Cup"),
                   ("champion_of", "Bled Cup"), ("coached_by", "Ivan Horvat")],
    "Ivan Horvat": [("born_in", "Zagreb"), ("trained_at", "Zagreb Chess Society"), ("rival", "Jonas Berg"),
                    ("played_in", "Bled Cup"), ("champion_of", "Tallinn Open")],
    "Petra Novak": [("born_in", "Brno"), ("coached_by", "Ivan Horvat"), ("trained_at", "Zagreb Chess Society"),
                    ("rival", "Mira Kovac"), ("champion_of", "Bled Cup")],
}
CLUBS = {
    "Riga Chess Club": [("founded_year", "1890"), ("located_in", "Riga"), ("hosted", "Tallinn Open")],
    "Zagreb Chess Society": [("founded_year", "1912"), ("founded_by", "Ivan Horvat"), ("located_in", "Zagreb"),
                             ("hosted", "Bled Cup")],
}
TOURNAMENTS = {"Tallinn Open": [("held_in", "Tallinn"), ("first_held", "1931")],
               "Bled Cup": [("held_in", "Bled"), ("first_held", "1950")]}


@pytest.fixture(scope="module")
def checker(demo_workbench):
    facts = {**PLAYERS, **CLUBS, **TOURNAMENTS}
    kg = KnowledgeGraph([Triple(head, *fact) for head, rows in facts.items() for fact in rows])
    embedder = demo_workbench.retrieval.embedder
    return PremiseChecker(kg, embedder), EntityLinker(kg, embedder)


def verdict(checker, question: str):
    premise, linker = checker
    return premise.check(question, linker.link(question), False)


@pytest.mark.parametrize("question", [
    "Who was the Tallinn Open's champion?",  # stored as 'X champion_of Tallinn Open'
    "Which players did the Riga Chess Club train?",  # stored as 'X trained_at Riga Chess Club'
])
def test_a_fact_stored_the_other_way_round_supports_the_premise(checker, question) -> None:
    assert not verdict(checker, question).contradicted


def test_a_word_naming_several_relations_needs_all_of_them_missing(checker) -> None:
    # 'founded' names founded_by and founded_year; the club has a founding year and no founder on record
    assert not verdict(checker, "In what year was the Riga Chess Club founded?").contradicted


def test_a_relation_no_entity_of_the_subjects_kind_has_proves_nothing_about_it(checker) -> None:
    # only clubs host tournaments: a player's missing 'hosted' fact says nothing about the question
    assert not verdict(checker, "When did Mira Kovac host a simultaneous exhibition?").contradicted


def test_a_relation_the_subjects_kind_has_and_it_lacks_is_still_a_false_premise(checker) -> None:
    got = verdict(checker, "Which tournaments did Petra Novak play?")
    assert got.contradicted and got.check == "missing_relation" and got.subject == "Petra Novak"


def test_names_joined_by_and_are_not_tied_to_each_other(checker) -> None:
    # Mira's rival is Ola Lind and Jonas Berg is someone's rival: the question does not make him hers
    assert not verdict(checker, "How many games have Mira Kovac and Jonas Berg played?").contradicted
