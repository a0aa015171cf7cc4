"""Which rules can answer a question (issue 27): the walk starts, the answer shape fits, the head is named.

A football KG built here: no shipped pack is about sport, and the matching was never tuned on it.
"""

from __future__ import annotations

import pytest

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Rule, Triple
from engine.retrieval.embedder import load_embedder
from engine.rules.applicability import QuestionView, executable, head_agreement, shape_fits
from engine.rules.application import apply_rules
from engine.rules.matching import MatchConfig, abstract_question, match_rules

KG = KnowledgeGraph([
    Triple("Marta Ilves", "plays_for", "Harbour Rovers"), Triple("Harbour Rovers", "based_in", "Keldport"),
    Triple("Keldport", "city_in", "Norvania"), Triple("Marta Ilves", "born_in", "Ostby"),
    Triple("Ostby", "city_in", "Valtria"), Triple("Harbour Rovers", "founded_year", "1898"),
    Triple("Harbour Rovers", "goals_scored", "61"),
])
CLUB = Rule("r1", "club_country", ("based_in", "city_in"), 0.9, 20,
            "If club X is based in city Z and Z is in country Y, then X is a club of country Y.")
BIRTH = Rule("r2", "birth_country", ("born_in", "city_in"), 0.8, 15,
             "If player X was born in city Z and Z is in country Y, then X was born in country Y.")
LEAGUE = Rule("r3", "league_country", ("plays_for", "based_in", "city_in"), 0.7, 12,
              "If player X plays for club Z based in a city of country Y, then X plays league football in Y.")
RULES = (CLUB, BIRTH, LEAGUE)


@pytest.fixture(scope="module")
def embedder():
    return load_embedder()


def view(question: str) -> QuestionView:
    return QuestionView.of(question, abstract_question(question, KG), KG)


def test_a_rule_is_executable_only_where_its_walk_leaves_an_entity_the_question_names():
    assert executable(view("In which country is Harbour Rovers based?"), RULES, KG) == {"r1"}
    assert executable(view("In which country was Marta Ilves born?"), RULES, KG) == {"r2", "r3"}


def test_the_answer_shape_of_the_question_must_fit_the_rule_head():
    assert shape_fits(view("In which country is Harbour Rovers based?"), CLUB, KG)
    assert not shape_fits(view("Is Harbour Rovers a club of Norvania?"), CLUB, KG)  # yes/no
    assert not shape_fits(view("Is Harbour Rovers from Norvania or Valtria?"), CLUB, KG)  # either-or
    assert not shape_fits(view("How many goals did Harbour Rovers score?"), CLUB, KG)  # a count
    founded = Rule("r4", "founded_year", ("~plays_for", "plays_for", "founded_year"), 0.5, 3)  # literal head
    assert shape_fits(view("In what year was Harbour Rovers founded?"), founded, KG)
    assert not shape_fits(view("Which club founded Harbour Rovers?"), founded, KG)


def test_head_agreement_is_the_share_of_the_head_label_words_the_question_uses():
    assert head_agreement(view("Of which country is Harbour Rovers a club?"), CLUB) == 1.0
    assert head_agreement(view("In which country was Marta Ilves born?"), BIRTH) == 0.5  # 'country', not 'birth'
    assert head_agreement(view("Who coaches Harbour Rovers?"), CLUB) == 0.0
    # a name's words never agree: the entity is abstracted away before the words are compared
    assert head_agreement(view("Who founded Harbour Rovers?"), Rule("r5", "harbour", ("based_in",), 1.0, 1)) == 0.0


def test_a_rule_whose_walk_cannot_start_is_never_matched_however_similar(embedder):
    question = "In which country is the club Harbour Rovers based?"
    loose = match_rules(question, RULES, KG, embedder, MatchConfig(theta=0.0, top_n=3))
    assert [s.rule.id for s in loose.matched] == ["r1"]
    assert {s.rule.id: s.applicable for s in loose.scored} == {"r1": True, "r2": False, "r3": False}


def test_yes_no_either_or_and_count_questions_match_no_entity_rule(embedder):
    for question in ("Is Harbour Rovers a club of Norvania?", "Was Marta Ilves born in Valtria or Norvania?",
                     "How many clubs has Marta Ilves played for?"):
        assert match_rules(question, RULES, KG, embedder, MatchConfig(theta=0.0)).matched == (), question


def test_the_head_named_by_its_words_is_matched_and_its_walk_answers(embedder):
    question = "Of which country is the football club Harbour Rovers?"
    matching = match_rules(question, RULES, KG, embedder)
    assert [s.rule.id for s in matching.matched] == ["r1"] and matching.matched[0].head_matched
    applied = apply_rules(KG, "Harbour Rovers", matching.matched)
    assert applied.candidates[0].answer == "Norvania"
