"""Symbolic rule application: body walks from the question's entity, confidence-weighted votes."""

from __future__ import annotations

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Rule, Triple
from engine.rules.application import apply_rules, follow_body
from engine.rules.matching import ScoredRule

KG = KnowledgeGraph([
    Triple("Teller", "born_in", "Budapest"), Triple("Budapest", "located_in", "Hungary"),
    Triple("Teller", "died_in", "Stanford"), Triple("Stanford", "located_in", "United States"),
    Triple("Teller", "child", "Paul"),
])
BIRTH = Rule("r01", "citizen_of", ("born_in", "located_in"), 0.469, 15)
DEATH = Rule("r02", "citizen_of", ("died_in", "located_in"), 0.653, 32)


def scored(rule: Rule, similarity: float) -> ScoredRule:
    return ScoredRule(rule, similarity, similarity, True)


def test_follow_body_walks_forward_and_backward_steps():
    assert follow_body(KG, "Teller", ("born_in", "located_in")) == [("Teller", "Budapest", "Hungary")]
    assert follow_body(KG, "Paul", ("~child", "born_in")) == [("Paul", "Teller", "Budapest")]
    assert follow_body(KG, "Paul", ("born_in",)) == []


def test_the_better_matched_rule_outvotes_a_more_confident_one():
    candidates = apply_rules(KG, "Teller", [scored(BIRTH, 0.88), scored(DEATH, 0.80)])
    assert [c.answer for c in candidates] == ["Hungary", "United States"]
    assert candidates[0].rule_id == "r01" and candidates[0].paths[0].entities == ("Teller", "Budapest", "Hungary")


def test_with_equal_similarity_confidence_decides():
    candidates = apply_rules(KG, "Teller", [scored(BIRTH, 0.8), scored(DEATH, 0.8)])
    assert candidates[0].answer == "United States"


def test_no_rules_or_no_paths_give_no_candidates():
    assert apply_rules(KG, "Teller", []) == ()
    assert apply_rules(KG, "Hungary", [scored(BIRTH, 0.9)]) == ()
