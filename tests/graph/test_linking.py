"""Entity linking for ToG-2: exact, alias, fuzzy and embedding passes, each with its score."""

from __future__ import annotations

import numpy as np

from engine.graph.kg import KnowledgeGraph
from engine.graph.linking import ALIAS_SCORE, EXACT_SCORE, EntityLinker
from engine.knowledge.records import Triple


class VectorTable:
    """A stand-in embedder: fixed unit vectors per text, orthogonal noise for anything else."""

    def __init__(self, table: dict[str, list[float]]):
        self.table = table

    def encode(self, texts):
        rows = []
        for text in texts:
            vector = np.array(self.table.get(text, [0.0, 0.0, 0.0, 1.0]), dtype=np.float32)
            rows.append(vector / np.linalg.norm(vector))
        return np.stack(rows)


def kg() -> KnowledgeGraph:
    triples = [Triple("Ada Lovelace", "collaborator", "Charles Babbage"), Triple("Mercury (planet)", "orbits", "Sun")]
    return KnowledgeGraph(triples, extra_entities=["Analytical Engine"])


def test_a_kg_node_named_in_the_question_links_exactly_with_full_score():
    links = EntityLinker(kg()).link("Who worked with Ada Lovelace?")
    assert [(x.entity, x.method, x.score) for x in links] == [("Ada Lovelace", "exact", EXACT_SCORE)]


def test_a_document_name_and_a_name_without_its_parenthetical_link_as_aliases():
    links = {x.entity: x for x in EntityLinker(kg()).link("Did the Analytical Engine ever fly to Mercury?")}
    assert links["Analytical Engine"].method == "alias" and links["Analytical Engine"].score == ALIAS_SCORE
    assert links["Mercury (planet)"].method == "alias" and links["Mercury (planet)"].mention == "Mercury"


def test_a_misspelt_name_links_fuzzily_below_an_exact_match():
    (link,) = EntityLinker(kg()).link("Where was Ada Lovelase born?")
    assert link.entity == "Ada Lovelace" and link.method == "fuzzy" and 0.7 < link.score < EXACT_SCORE


def test_a_span_close_in_embedding_space_links_by_embedding():
    names = {n: [1.0, 0.0, 0.0, 0.0] if n == "Charles Babbage" else [0.0, 1.0, 0.0, 0.0] for n in kg().entities}
    embedder = VectorTable({**names, "Father Computer": [0.95, 0.05, 0.0, 0.0]})
    (link,) = EntityLinker(kg(), embedder).link("Who was the Father Computer?")
    assert link.entity == "Charles Babbage" and link.method == "embedding" and link.mention == "Father Computer"


def test_a_question_naming_no_known_entity_links_nothing():
    assert EntityLinker(kg()).link("what is the meaning of life?") == ()


def test_titles_that_are_question_words_are_never_linked_from_the_questions_grammar():
    """Issue 27: HotpotQA paragraphs titled 'Who' and 'One' linked every question's 'who' and 'one'."""
    names = KnowledgeGraph([], extra_entities=["Who", "One", "Grace Hopper"])
    links = EntityLinker(names).link("Who was the one who hired Grace Hopper?")
    assert [x.entity for x in links] == ["Grace Hopper"]


def test_a_one_word_title_is_not_linked_from_inside_a_longer_name():
    names = KnowledgeGraph([], extra_entities=["Grace", "Hopper (crater)"])
    assert EntityLinker(names).link("Which navy hired Grace Hopper?") == ()
