"""The spaceflight pack (a third, held-out domain for issue 27) loads and its gold data is grounded in its documents."""

from __future__ import annotations

import json
import re
from collections import Counter
from pathlib import Path

import pytest

from engine.knowledge.loader import load_pack

PACK = Path(__file__).resolve().parents[2] / "assets" / "packs" / "spaceflight"
TYPES = {"factoid", "multi_hop", "comparison", "set", "numeric", "rule", "false_premise"}
# Answers that are checked against the documents: a numeric answer is computed and a false
# premise's gold is "invalid question"; "yes"/"no" decide a comparison the documents state.
UNGROUNDED_TYPES = {"numeric", "false_premise"}
YES_NO = {"yes", "no"}


def _jsonl(name: str) -> list[dict]:
    lines = (PACK / name).read_text(encoding="utf-8").splitlines()
    return [json.loads(line) for line in lines if line.strip()]


def _triples() -> list[tuple[str, ...]]:
    rows = (PACK / "triples.tsv").read_text(encoding="utf-8").splitlines()
    return [tuple(row.split("\t")) for row in rows if row.strip() and not row.startswith("#")]


@pytest.fixture(scope="module")
def documents() -> dict[str, dict]:
    return {d["id"]: d for d in _jsonl("documents.jsonl")}


@pytest.fixture(scope="module")
def questions() -> list[dict]:
    return _jsonl("questions.jsonl")


def _text(doc: dict) -> str:
    return f"{doc['title']} {doc['text']}".lower()


def test_the_pack_loads_with_every_file_and_no_problem():
    pack = load_pack(PACK)
    assert pack.info.name == "spaceflight"
    assert len(pack.documents) == len(_jsonl("documents.jsonl"))
    assert len(pack.triples) == len(_triples())
    assert len(pack.rules) == len(_jsonl("rules.jsonl"))
    assert len(pack.questions) == len(_jsonl("questions.jsonl"))
    assert len(pack.pages) == len(_jsonl("pages.jsonl"))


def test_the_pack_has_the_sizes_the_brief_asks_for(documents, questions):
    assert 80 <= len(documents) <= 110
    assert 70 <= len(questions) <= 90
    assert 6 <= len(_jsonl("rules.jsonl")) <= 12
    assert 2 <= len(_jsonl("pages.jsonl")) <= 4
    counts = Counter(q["type"] for q in questions)
    assert set(counts) == TYPES
    assert min(counts.values()) >= 8


def test_every_document_is_one_paragraph_of_60_to_180_words(documents):
    for doc in documents.values():
        words = len(doc["text"].split())
        assert 60 <= words <= 180, f"{doc['id']}: {words} words"
        assert "\n" not in doc["text"], doc["id"]


def test_document_and_question_ids_are_unique(questions):
    doc_ids = [d["id"] for d in _jsonl("documents.jsonl")]
    assert len(doc_ids) == len(set(doc_ids))
    question_ids = [q["id"] for q in questions]
    assert len(question_ids) == len(set(question_ids))


def test_every_supporting_doc_of_a_question_exists(documents, questions):
    for q in questions:
        assert q["supporting_docs"], q["id"]
        missing = [d for d in q["supporting_docs"] if d not in documents]
        assert not missing, f"{q['id']}: unknown supporting docs {missing}"


def test_every_answer_appears_in_one_of_its_supporting_documents(documents, questions):
    for q in questions:
        if q["type"] in UNGROUNDED_TYPES or q["answers"][0].lower() in YES_NO:
            continue
        texts = [_text(documents[d]) for d in q["supporting_docs"]]
        # A set's answers are its members, each of which must be stated; other types list aliases.
        wanted = [[a] for a in q["answers"]] if q["type"] == "set" else [q["answers"]]
        for aliases in wanted:
            found = any(a.lower() in t for a in aliases for t in texts)
            assert found, f"{q['id']}: {aliases} not in {q['supporting_docs']}"


def test_false_premise_and_numeric_questions_are_marked_as_such(questions):
    for q in questions:
        if q["type"] == "false_premise":
            assert q["answers"] == ["invalid question"], q["id"]
        if q["type"] == "numeric":
            assert "calculation" in q, q["id"]
            assert all(re.search(r"\d|[a-z]", a) for a in q["answers"]), q["id"]


def test_topic_entities_are_named_in_the_supporting_documents(documents, questions):
    for q in questions:
        texts = " ".join(_text(documents[d]) for d in q["supporting_docs"])
        for entity in q["topic_entities"]:
            assert entity.lower() in texts, f"{q['id']}: topic entity {entity!r}"


def test_every_rule_relation_occurs_in_the_triples():
    relations = {t[1] for t in _triples()}
    for rule in _jsonl("rules.jsonl"):
        used = [rule["head"], *(r.removeprefix("~") for r in rule["body"])]
        assert set(used) <= relations, f"{rule['id']}: {set(used) - relations}"


def test_every_rule_question_names_rules_that_exist(questions):
    rule_ids = {r["id"] for r in _jsonl("rules.jsonl")}
    for q in questions:
        if q["type"] == "rule":
            assert q.get("rule_ids") and set(q["rule_ids"]) <= rule_ids, q["id"]


def test_rule_support_and_confidence_follow_the_definition_in_docs_packs():
    triples = _triples()
    facts = {t[:3] for t in triples}

    def edges(relation: str) -> list[tuple[str, str]]:
        if relation.startswith("~"):
            return [(t[2], t[0]) for t in triples if t[1] == relation[1:]]
        return [(t[0], t[2]) for t in triples if t[1] == relation]

    for rule in _jsonl("rules.jsonl"):
        pairs = set(edges(rule["body"][0]))
        for relation in rule["body"][1:]:
            step: dict[str, set[str]] = {}
            for a, b in edges(relation):
                step.setdefault(a, set()).add(b)
            pairs = {(x, z) for x, y in pairs for z in step.get(y, ())}
        body_pairs = {(x, y) for x, y in pairs if x != y}
        support = sum((x, rule["head"], y) in facts for x, y in body_pairs)
        assert rule["support"] == support, rule["id"]
        assert rule["confidence"] == pytest.approx(support / len(body_pairs), abs=0.001), rule["id"]


def test_every_triple_head_and_tail_appear_in_some_document(documents):
    corpus = " ".join(_text(d) for d in documents.values())
    for triple in _triples():
        assert len(triple) in (3, 4), triple
        for name in triple[0], triple[2]:
            assert name.lower() in corpus, f"{triple}: {name!r} in no document"


def test_relations_are_snake_case():
    for triple in _triples():
        assert re.fullmatch(r"[a-z][a-z0-9_]*", triple[1]), triple


def test_pages_refer_to_questions_that_exist(questions):
    ids = {q["id"] for q in questions}
    for page in _jsonl("pages.jsonl"):
        assert "<table" in page["html"], page["id"]
        assert set(page.get("question_ids", [])) <= ids, page["id"]
