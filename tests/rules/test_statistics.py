"""Rule support and confidence recomputed from triples."""

from __future__ import annotations

from engine.graph.kg import KnowledgeGraph
from engine.rules.statistics import rule_statistics


def test_mini_pack_rule_statistics_match_the_stored_values(mini_pack):
    kg = KnowledgeGraph.from_pack(mini_pack)
    for rule in mini_pack.rules:
        stats = rule_statistics(kg, rule.head, rule.body)
        assert (stats.support, stats.confidence) == (rule.support, rule.confidence)


def test_backward_relations_walk_edges_in_reverse(mini_pack):
    kg = KnowledgeGraph.from_pack(mini_pack)
    # people born in the same city as someone else: born_in then ~born_in
    stats = rule_statistics(kg, "collaborator", ["born_in", "~born_in"])
    assert stats.body_pairs == 6  # Ada, Babbage, Turing pairwise (ordered), all London
    assert stats.support == 1  # only Ada → Babbage is a stated collaboration
