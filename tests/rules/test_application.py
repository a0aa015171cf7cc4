"""Symbolic rule application: body walks from the question's entity, confidence-weighted votes, bounds."""

from __future__ import annotations

import itertools

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Rule, Triple
from engine.rules.application import MAX_PATHS, apply_rules, follow_body
from engine.rules.matching import ScoredRule

KG = KnowledgeGraph([
    Triple("Teller", "born_in", "Budapest"), Triple("Budapest", "located_in", "Hungary"),
    Triple("Teller", "died_in", "Stanford"), Triple("Stanford", "located_in", "United States"),
    Triple("Teller", "child", "Paul"),
])
BIRTH = Rule("r01", "citizen_of", ("born_in", "located_in"), 0.469, 15)
DEATH = Rule("r02", "citizen_of", ("died_in", "located_in"), 0.653, 32)
# four entities all linked by `r`: a body of n steps has 4**n paths, 4**(n-1) into each end
CLIQUE = KnowledgeGraph([Triple(a, "r", b) for a, b in itertools.product("ABCD", repeat=2)])


def scored(rule: Rule, similarity: float) -> ScoredRule:
    return ScoredRule(rule, similarity, similarity, True)


def test_follow_body_walks_forward_and_backward_steps():
    assert follow_body(KG, "Teller", ("born_in", "located_in")) == [("Teller", "Budapest", "Hungary")]
    assert follow_body(KG, "Paul", ("~child", "born_in")) == [("Paul", "Teller", "Budapest")]
    assert follow_body(KG, "Paul", ("born_in",)) == []


def test_the_better_matched_rule_outvotes_a_more_confident_one():
    application = apply_rules(KG, "Teller", [scored(BIRTH, 0.88), scored(DEATH, 0.80)])
    candidates = application.candidates
    assert [c.answer for c in candidates] == ["Hungary", "United States"]
    assert candidates[0].rule_id == "r01" and candidates[0].paths[0].entities == ("Teller", "Budapest", "Hungary")
    assert application.notes == ()


def test_with_equal_similarity_confidence_decides():
    candidates = apply_rules(KG, "Teller", [scored(BIRTH, 0.8), scored(DEATH, 0.8)]).candidates
    assert candidates[0].answer == "United States"


def test_no_rules_or_no_paths_give_no_candidates():
    assert apply_rules(KG, "Teller", []).candidates == ()
    assert apply_rules(KG, "Hungary", [scored(BIRTH, 0.9)]).candidates == ()


def test_a_score_counts_every_path_and_keeps_one_path_per_rule():
    rule = Rule("r", "near", ("r", "r"), 0.5, 1)
    candidates = apply_rules(CLIQUE, "A", [scored(rule, 0.9)]).candidates
    assert [(c.answer, c.score) for c in candidates] == [("B", 2.0), ("C", 2.0), ("D", 2.0)]  # 4 paths × 0.5
    assert [p.entities for p in candidates[0].paths] == [("A", "A", "B")]


def test_more_paths_than_the_cap_count_as_the_cap_and_the_result_says_so():
    rule = Rule("r", "near", ("r",) * 12, 1.0, 1)  # 4**11 ≈ 4.2 million paths into each end
    application = apply_rules(CLIQUE, "A", [scored(rule, 0.9)])
    assert [c.score for c in application.candidates] == [float(MAX_PATHS)] * 3
    assert application.notes == ("rule r: more than 10,000 paths reach 3 of its 3 answers (first 'B'); "
                                 "10,000 counted for each",)


def test_an_application_past_its_time_limit_adds_nothing_and_names_each_rule_it_cut():
    application = apply_rules(KG, "Teller", [scored(BIRTH, 0.9), scored(DEATH, 0.9)], seconds=-1.0)
    assert application.candidates == ()
    assert application.notes == ("rule r01: stopped after the -1 s time limit at step 1 of 2; it adds no candidate",
                                 "rule r02: stopped after the -1 s time limit at step 1 of 2; it adds no candidate")


def test_a_60_relation_body_is_applied_in_one_lookup_per_entity_and_step_with_finite_scores(monkeypatch):
    rule = Rule("r", "near", ("r",) * 60, 1.0, 1)
    looked_up: list[str] = []
    monkeypatch.setattr(CLIQUE, "follow", lambda e, r, follow=CLIQUE.follow: looked_up.append(e) or follow(e, r))
    application = apply_rules(CLIQUE, "A", [scored(rule, 0.9)], seconds=60.0)
    assert len(looked_up) == 1 + 59 * 4  # 4**60 paths were never enumerated
    assert [c.answer for c in application.candidates] == ["B", "C", "D"]
    assert all(c.score == MAX_PATHS for c in application.candidates)


def test_tied_candidates_keep_the_order_the_walk_found_them_not_the_alphabet():
    from engine.graph.kg import KnowledgeGraph
    from engine.knowledge.records import Triple

    kg = KnowledgeGraph([Triple("A", "r", "Zed"), Triple("A", "r", "Abe")])  # Zed first in the KG
    candidates = apply_rules(kg, "A", [scored(Rule("x", "near", ("r",), 0.5, 1), 0.9)]).candidates
    assert [(c.answer, c.score) for c in candidates] == [("Zed", 0.5), ("Abe", 0.5)]
