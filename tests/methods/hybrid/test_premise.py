"""The KG premise check: contradicted only when the KG has facts of the relation and none fits."""

from __future__ import annotations

import pytest

from engine.graph.kg import KnowledgeGraph
from engine.graph.linking import EntityLinker
from engine.knowledge.records import Document, Rule, Triple
from engine.methods.hybrid.premise import PremiseChecker

PEOPLE = {
    "Ana Sousa": [("born_in", "Porto"), ("award_received", "Gold Medal", "1990"),
                  ("award_received", "Gold Medal", "1994"),
                  ("award_received", "Silver Cup"), ("spouse", "Rui Sousa"), ("child", "Marta Sousa"),
                  ("discovered", "Blue Comet"), ("employer", "Lisbon Observatory")],
    "Tomas Berg": [("born_in", "Bergen"), ("award_received", "Silver Cup"), ("employer", "Oslo Institute"),
                   ("field", "astronomy"), ("doctoral_advisor", "Ana Sousa")],
    "Lena Berg": [("award_received", "Gold Medal"), ("discovered", "Red Star"), ("spouse", "Tomas Berg"),
                  ("child", "Ola Berg")],
}
PLACES = [("Porto", "located_in", "Portugal"), ("Bergen", "located_in", "Norway"), ("Oslo", "located_in", "Norway")]
DOCS = (Document("m", "Marta Sousa", "Marta Sousa is an astronomer. She studied in Lisbon; her thesis was on comets."),
        Document("o", "Ola Berg", "Ola Berg is a pilot. He flew for thirty years and his plane is in a museum."))
RULES = (Rule("r", "citizen_of", ("born_in", "located_in"), 0.8, 10),)


@pytest.fixture(scope="module")
def checker(demo_workbench):
    triples = [Triple(p, *fact) for p, facts in PEOPLE.items() for fact in facts] + [Triple(*t) for t in PLACES]
    kg = KnowledgeGraph(triples)
    embedder = demo_workbench.retrieval.embedder
    return PremiseChecker(kg, embedder, DOCS, RULES), EntityLinker(kg, embedder)


def verdict(checker, question: str, is_choice: bool = False):
    premise, linker = checker
    return premise.check(question, linker.link(question), is_choice)


@pytest.mark.parametrize(("question", "check"), [
    ("In which year did Tomas Berg receive the Gold Medal?", "object"),
    ("What did Tomas Berg discover?", "missing_relation"),
    ("Who was Tomas Berg's child?", "missing_relation"),
    ("Where did Ana Sousa's son study?", "gender"),
    ("When did Ana Sousa win her third Gold Medal?", "ordinal"),
    ("In which Norwegian city was Ana Sousa born?", "type"),
])
def test_a_premise_the_kg_contradicts_is_flagged_with_the_check_that_found_it(checker, question, check) -> None:
    got = verdict(checker, question)
    assert got.contradicted and got.check == check and got.subject in question


@pytest.mark.parametrize("question", [
    "In which year did Ana Sousa receive the Gold Medal?",
    "When did Ana Sousa win her second Gold Medal?",
    "What did Ana Sousa discover?",
    "Who was Ana Sousa's husband?",
    "Where did Lena Berg's son work?",
    "Of which country was Tomas Berg a citizen?",  # no citizen_of fact, but the rule derives one
    "Which doctoral students of Ana Sousa received the Silver Cup?",  # the subject is the answer, not Ana
    "Who received the Gold Medal, Tomas Berg or Lena Berg?",
    "Where was Ola Berg born?",  # too little known about Ola to call anything false
    "Who was Tomas Berg's wife?",  # stored the other way round: Lena Berg –spouse→ Tomas Berg (issue 27)
])
def test_a_premise_the_kg_supports_or_cannot_judge_is_not_flagged(checker, question) -> None:
    assert not verdict(checker, question, is_choice=" or " in question).contradicted


def test_containment_relations_are_found_by_shape_whatever_they_are_called():
    from engine.methods.hybrid.premise import containment_relations

    # cities people were born in lie in one country each; the relation is not called located_in
    born = [Triple(f"P{i}", "birthplace", city) for i, city in enumerate(["Aa", "Bb", "Cc", "Dd", "Aa"])]
    inside = [Triple("Aa", "sits_within", "Xland"), Triple("Bb", "sits_within", "Xland"),
              Triple("Cc", "sits_within", "Yland"), Triple("Dd", "sits_within", "Yland")]
    mentors = [Triple("P0", "mentor", "P1"), Triple("P1", "mentor", "P2"), Triple("P3", "mentor", "P4")]
    kg = KnowledgeGraph(born + inside + mentors)
    assert containment_relations(kg) == {"sits_within"}
    renamed = KnowledgeGraph([Triple(t.head, "sits_within" if t.relation == "located_in" else t.relation, t.tail)
                              for p, facts in PEOPLE.items() for t in [Triple(p, *f) for f in facts]]
                             + [Triple(h, "sits_within", t) for h, _, t in PLACES])
    assert containment_relations(renamed) == {"sits_within"}
