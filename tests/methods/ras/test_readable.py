"""RAS's offline sub-queries and triples read as a researcher would write them (issue 22), on a pack
written here: relations are relation phrases, never an adverb or a bare preposition; a follow-up
sub-query is a question about two names, never a name pasted before the question's leftover words."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Triple
from engine.methods.ras.extractor import OfflineExtractor
from engine.methods.ras.offline import OfflinePlanner
from engine.methods.ras.query_graph import GraphTriple, QueryGraph
from engine.methods.ras.tools import Round
from engine.retrieval.embedder import load_embedder
from engine.tools.base import IDK, Reader, Reading
from engine.trace import Hit

PAGE = ("Ada Brenn was a Danish chemist born in Kelso (today Varna). "
        "Ada Brenn shared the Orvel Medal with Tomas Reed. "
        "She studied at Lund Academy under Piet Galen. "
        "Ada Brenn and her two new elements, Korium and Velium, made the town famous.")
FACTS = (Triple("Ada Brenn", "born_in", "Kelso"), Triple("Ada Brenn", "award_received", "Orvel Medal"),
         Triple("Ada Brenn", "educated_at", "Lund Academy"), Triple("Kelso", "located_in", "Varna"))
NAMES = ("Ada Brenn", "Kelso", "Varna", "Orvel Medal", "Tomas Reed", "Lund Academy", "Piet Galen", "Korium",
         "Velium")


@pytest.fixture(scope="module")
def triples() -> dict[tuple[str, str], str]:
    kg = KnowledgeGraph(FACTS, NAMES)
    extractor = OfflineExtractor(kg, load_embedder(), tuple(sorted({t.relation for t in FACTS})))
    found = extractor.extract(Hit(doc_id="d1", chunk_id="d1#0", title="Ada Brenn", text=PAGE, score=1.0, rank=1))
    return {(t.head, t.tail): t.relation for t in found.triples}


def test_a_time_word_in_brackets_is_no_relation(triples):
    assert ("Ada Brenn", "Varna") not in triples  # was 'Ada Brenn –today→ Varna'
    assert triples[("Ada Brenn", "Kelso")] == "born_in"  # the phrase before it still maps onto the pack's
    assert all(head in NAMES and tail in NAMES for head, tail in triples)


def test_a_bare_preposition_keeps_the_verb_it_continues(triples):
    assert triples[("Ada Brenn", "Tomas Reed")] == "shared_with"  # was 'with'
    assert triples[("Ada Brenn", "Piet Galen")] == "studied_under"  # was 'under' (or a pack relation it neared)


def test_a_noun_phrase_without_a_verb_is_no_relation(triples):
    assert not [r for (_, tail), r in triples.items() if tail in ("Korium", "Velium")]  # was 'two_new_elements'


class Unsure(Reader):
    """A reader that never answers: the planner must fall back to a bridge entity of the graph."""

    def read(self, question: str, evidence: Sequence[Hit], facts: Sequence[Triple] = ()) -> Reading:
        return Reading(IDK, refused=True)


def test_a_bridge_sub_query_is_a_question_about_two_names():
    question = "Which element did Ada Brenn discover?"
    kg = KnowledgeGraph(FACTS, NAMES + ("chemistry",))
    graph = QueryGraph()
    found = (GraphTriple("Ada Brenn", "field", "chemistry", 1, question),
             GraphTriple("Ada Brenn", "discovered", "Korium", 1, question))
    graph.add(found)
    planner = OfflinePlanner(Unsure(), kg, load_embedder(), sufficiency=0.45)
    plan = planner.plan(question, [Round(question, found)], graph, ())
    assert plan.action == "subq"
    assert plan.subquery == "What links Korium to Ada Brenn?"  # was 'Korium Which element did discover?'


class Sure(Reader):
    """A reader that answers every question with an institution, confidently."""

    def read(self, question: str, evidence: Sequence[Hit], facts: Sequence[Triple] = ()) -> Reading:
        return Reading("Lund Academy", ("d1",), confidence=0.9)


def test_an_institution_is_not_written_in_where_a_person_is_asked_for():
    question = "Where was Ada Brenn's doctoral advisor born?"
    planner = OfflinePlanner(Sure(), KnowledgeGraph(FACTS, NAMES), load_embedder(), sufficiency=0.45)
    plan = planner.plan(question, [Round(question, ())], QueryGraph(), ())
    assert plan.subquery == "Who is Ada Brenn's doctoral advisor?"  # was 'Where was Lund Academy born?'
