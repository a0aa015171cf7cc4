"""An entity's neighbourhood as table rows and as a graph_delta step."""

from __future__ import annotations

from engine.graph.kg import KnowledgeGraph
from engine.graph.neighbourhood import entity_choices, fact_rows, hub_entity, neighbourhood_step
from engine.knowledge.records import Triple
from engine.trace import Edge, GraphDeltaStep, step_from_dict, step_to_dict

FACTS = [Triple("Ada Lovelace", "born_in", "London", "1815"), Triple("Ada Lovelace", "worked_with", "Charles Babbage"),
         Triple("Byron", "father_of", "Ada Lovelace")]


def test_the_step_holds_the_entity_its_neighbours_and_one_edge_per_fact():
    step = neighbourhood_step("Ada Lovelace", FACTS)
    assert isinstance(step, GraphDeltaStep) and step.focus == ("Ada Lovelace",)
    assert [n.id for n in step.added_nodes] == ["Ada Lovelace", "London", "Charles Babbage", "Byron"]
    assert step.added_edges[0] == Edge("Ada Lovelace", "born_in (1815)", "London")
    assert step.added_edges[2] == Edge("Byron", "father_of", "Ada Lovelace")
    assert step_from_dict(step_to_dict(step)) == step


def test_an_entity_without_facts_is_a_single_focused_node():
    step = neighbourhood_step("Nobody", [])
    assert [n.id for n in step.added_nodes] == ["Nobody"] and step.added_edges == ()


def test_fact_rows_keep_head_relation_tail_and_time():
    assert fact_rows(FACTS[:1]) == [{"head": "Ada Lovelace", "relation": "born_in", "tail": "London", "time": "1815"}]


def test_choices_are_the_entities_that_have_facts_sorted_by_name(mini_pack):
    kg = KnowledgeGraph.from_pack(mini_pack)
    choices = entity_choices(kg)
    assert choices == sorted(choices, key=str.casefold)
    assert set(choices) == set(kg.graph.nodes)
    assert entity_choices(KnowledgeGraph([])) == []


def test_the_starting_entity_has_the_most_kinds_of_relation_not_just_the_most_facts():
    star = [Triple(f"P{i}", "field", "physics") for i in range(5)]
    person = [Triple("Curie", "born_in", "Warsaw"), Triple("Curie", "field", "physics"),
              Triple("Curie", "award", "Nobel")]
    kg = KnowledgeGraph(star + person)
    assert kg.graph.degree("physics") > kg.graph.degree("Curie")
    assert hub_entity(kg) == "Curie"
    assert hub_entity(KnowledgeGraph([])) is None
