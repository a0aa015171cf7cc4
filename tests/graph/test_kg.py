"""The pack KG: entity linking and fact look-ups."""

from __future__ import annotations

from engine.graph.kg import KnowledgeGraph


def test_find_entities_prefers_the_longest_name_and_ignores_case(mini_pack):
    kg = KnowledgeGraph.from_pack(mini_pack)
    found = kg.find_entities("did alan turing study at King's College, Cambridge?")
    assert found == ["Alan Turing", "King's College, Cambridge"]


def test_follow_walks_forward_and_backward(mini_pack):
    kg = KnowledgeGraph.from_pack(mini_pack)
    assert kg.follow("Alan Turing", "born_in") == ["London"]
    assert set(kg.follow("London", "~born_in")) == {"Ada Lovelace", "Charles Babbage", "Alan Turing"}
    assert "~born_in" in kg.relations_of("London")
    assert kg.follow("Nobody", "born_in") == [] and kg.facts_about("Nobody") == []


def test_entity_relations_leave_out_the_ones_that_lead_to_values():
    from engine.graph.kg import KnowledgeGraph
    from engine.knowledge.records import Triple

    kg = KnowledgeGraph([Triple("A", "year_of_birth", "1901"), Triple("A", "doctoral_advisor", "B"),
                         Triple("B", "population", "12,400"), Triple("B", "year_of_birth", "1870")])
    assert kg.relations == ("year_of_birth", "doctoral_advisor", "population")
    assert kg.entity_relations == ("doctoral_advisor",)
