"""The KG module: entities from the question (LLM JSON or the lexicon) → capped, ranked look-ups."""

from __future__ import annotations

from engine.graph.kg import KnowledgeGraph
from engine.graph.linking import EntityLinker
from engine.knowledge.records import Triple
from engine.methods.hybrid.kg_module import lookup, parse_entities
from engine.methods.hybrid.llm import LlmEntityFinder
from engine.methods.hybrid.offline import OfflineEntityFinder
from fake_chat import fixed

KG = KnowledgeGraph([Triple("Ana Sousa", "born_in", "Porto"), Triple("Ana Sousa", "award_received", "Gold Medal"),
                     Triple("Ana Sousa", "employer", "Lisbon Observatory"), Triple("Rui Sousa", "spouse", "Ana Sousa")])


def test_entity_json_parses_flat_objects_lists_and_json_inside_prose() -> None:
    assert parse_entities('{"domain": "other", "main_entity": "Ana Sousa"}') == ("Ana Sousa",)
    assert parse_entities('Sure! {"main_entity": "A", "other_entities": ["B", "A"]} done') == ("A", "B")
    assert parse_entities('["A", 3, "B"]') == ("A", "B")
    assert parse_entities("no json here") == () and parse_entities('{"domain": "movie"}') == ()
    # spec §2.6 keys: names are looked up, aspects, metrics and times are not
    assert parse_entities('{"domain": "movie", "movie_name": "Up", "movie_aspect": "budget", "person": "Pete", '
                          '"person_aspect": "birthday", "year": "2009"}') == ("Up", "Pete")


def test_look_ups_rank_facts_by_the_question_words_and_respect_the_cap() -> None:
    found = lookup("Where was Ana Sousa born?", ["Ana Sousa"], ["Ana Sousa"], KG, max_facts=2)
    assert found.facts[0] == Triple("Ana Sousa", "born_in", "Porto") and len(found.facts) == 2
    block, cut = found.block(limit=30)
    assert cut and len(block) == 30


def test_offline_entities_come_from_the_lexicon_and_llm_names_map_onto_the_pack() -> None:
    linker = EntityLinker(KG, None)
    assert OfflineEntityFinder(linker).find("Where was ana sousa born?")[0] == ("Ana Sousa",)
    entities, mentions, steps = LlmEntityFinder(fixed('{"main_entity": "ANA SOUSA"}'), linker).find("Who is she?")
    assert entities == ("Ana Sousa",) and mentions == ("ANA SOUSA",) and steps[0].kind == "llm_call"
    entities, _, steps = LlmEntityFinder(fixed("nothing"), linker).find("Where was Ana Sousa born?")
    assert entities == ("Ana Sousa",) and steps[-1].kind == "error"
