"""Matching questions to rules: abstracted question, MiniLM similarity, relation-aware bonus, θ and N."""

from __future__ import annotations

import pytest

from engine.graph.kg import KnowledgeGraph
from engine.retrieval.embedder import load_embedder
from engine.rules.matching import MatchConfig, abstract_question, match_rules


@pytest.fixture(scope="module")
def demo_kg(demo_pack):
    return KnowledgeGraph.from_pack(demo_pack)


@pytest.fixture(scope="module")
def embedder():
    return load_embedder()


def test_the_question_is_abstracted_by_replacing_linked_entities_with_x(demo_kg):
    assert abstract_question("Of which country was Edward Teller a citizen by birth?", demo_kg) == (
        "Of which country was X a citizen by birth?")


def test_every_demo_rule_question_matches_its_gold_rule_among_the_top_three(demo_pack, demo_kg, embedder):
    for question in (q for q in demo_pack.questions if q.type == "rule"):
        matching = match_rules(question.question, demo_pack.rules, demo_kg, embedder)
        matched = [s.rule.id for s in matching.matched]
        assert 1 <= len(matched) <= 3 and set(question.extra["rule_ids"]) & set(matched), question.id
        assert all(s.similarity > 0.7 for s in matching.matched)


def test_the_question_wording_decides_which_same_head_rule_leads(demo_pack, demo_kg, embedder):
    by_birth = match_rules("Of which country was Edward Teller a citizen by birth?", demo_pack.rules, demo_kg, embedder)
    at_death = match_rules("Of which country was Enrico Fermi a citizen when he died?", demo_pack.rules, demo_kg,
                           embedder)
    assert by_birth.matched[0].rule.id == "r01" and at_death.matched[0].rule.id == "r02"
    assert by_birth.relations == ("citizen_of",) and by_birth.matched[0].head_matched


def test_rule_matching_skips_rules_below_threshold(demo_pack, demo_kg, embedder):
    matching = match_rules("Where was Marie Curie born?", demo_pack.rules, demo_kg, embedder)
    assert matching.matched == () and matching.scored and matching.scored[0].similarity <= 0.7


def test_theta_and_top_n_come_from_the_config(demo_pack, demo_kg, embedder):
    question = "Of which country was Edward Teller a citizen by birth?"
    loose = match_rules(question, demo_pack.rules, demo_kg, embedder, MatchConfig(theta=0.0, top_n=5))
    assert len(loose.matched) == 5
    strict = match_rules(question, demo_pack.rules, demo_kg, embedder, MatchConfig(theta=0.99))
    assert strict.matched == ()
    without_bonus = match_rules(question, demo_pack.rules, demo_kg, embedder, MatchConfig(relation_bonus=0.0))
    assert without_bonus.matched == ()  # raw MiniLM cosine alone stays below 0.7 (module docstring)


def test_a_pack_without_rules_matches_nothing(demo_kg, embedder):
    matching = match_rules("Of which country was Edward Teller a citizen?", (), demo_kg, embedder)
    assert (matching.scored, matching.matched) == ((), ())


def test_a_rule_match_carries_the_bracketed_text_and_the_statistics(demo_pack, demo_kg, embedder):
    matching = match_rules("Of which country was Edward Teller a citizen by birth?", demo_pack.rules, demo_kg, embedder)
    match = matching.matched[0].to_match()
    assert match.text == "[X, born in, Z] and [Z, located in, Y] leads to [X, citizen of, Y]"
    assert (match.head, match.body, match.confidence, match.support) == ("citizen_of", ("born_in", "located_in"),
                                                                        0.469, 15)


def test_paper_mode_is_the_plain_cosine_of_question_and_bracketed_rule(demo_pack, demo_kg, embedder):
    question = "Of which country was Edward Teller a citizen by birth?"
    paper = match_rules(question, demo_pack.rules, demo_kg, embedder, MatchConfig(theta=0.0, mode="paper"))
    rules = {r.id: r for r in demo_pack.rules}
    from engine.rules.text import rule_text

    vector = embedder.encode_queries([question])[0]
    for scored in paper.scored:
        rule = rules[scored.rule.id]
        cosine = float(embedder.encode_queries([rule_text(rule.head, rule.body)])[0] @ vector)
        assert scored.similarity == pytest.approx(cosine, abs=1e-6) and scored.cosine == scored.similarity
        assert not scored.head_matched
    assert paper.abstract_question == question and paper.relations == ()
    assert [s.similarity for s in paper.scored] == sorted((s.similarity for s in paper.scored), reverse=True)
    default = match_rules(question, demo_pack.rules, demo_kg, embedder)
    assert default.matched and match_rules(question, demo_pack.rules, demo_kg, embedder,
                                           MatchConfig(mode="paper")).matched == ()


def test_an_unknown_matching_mode_is_refused():
    with pytest.raises(ValueError, match="unknown rule matching mode"):
        MatchConfig(mode="fuzzy")
