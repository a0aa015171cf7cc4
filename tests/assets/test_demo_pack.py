"""Consistency checks for the demo knowledge pack (assets/packs/demo).

Stdlib + pytest only: the pack must be valid on its own, independent of the engine.
"""
import ast
import collections
import json
import operator
import re
from pathlib import Path

import pytest

PACK = Path(__file__).resolve().parents[2] / "assets" / "packs" / "demo"
TYPES = ("factoid", "multi_hop", "comparison", "set", "numeric", "rule", "false_premise")
YEARLIKE = ("birth_year", "death_year", "founded_year", "discovery_year")


def _jsonl(name):
    with open(PACK / name, encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def _triples():
    out = []
    with open(PACK / "triples.tsv", encoding="utf-8") as f:
        for n, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line.strip() or line.startswith("#"):
                continue
            parts = line.split("\t")
            assert len(parts) in (3, 4), f"triples.tsv:{n}: expected 3 or 4 columns"
            assert all(p.strip() for p in parts), f"triples.tsv:{n}: empty column"
            out.append((parts[0], parts[1], parts[2], parts[3] if len(parts) == 4 else ""))
    return out


@pytest.fixture(scope="module")
def pack():
    docs = _jsonl("documents.jsonl")
    return {
        "meta": json.loads((PACK / "pack.json").read_text(encoding="utf-8")),
        "docs": docs,
        "by_id": {d["id"]: d for d in docs},
        "triples": _triples(),
        "rules": _jsonl("rules.jsonl"),
        "questions": _jsonl("questions.jsonl"),
        "pages": _jsonl("pages.jsonl"),
    }


def _adjacency(triples):
    adj = collections.defaultdict(set)
    for h, r, t, _ in triples:
        adj[(h, r)].add(t)
        adj[(t, "~" + r)].add(h)
    return adj


def _walk(adj, start, body):
    frontier = {start}
    for rel in body:
        frontier = set().union(*(adj.get((z, rel), set()) for z in frontier)) if frontier else set()
    return frontier


def _rule_stats(head, body, triples):
    adj = _adjacency(triples)
    facts = {(h, r, t) for h, r, t, _ in triples}
    nodes = {h for h, _, _, _ in triples} | {t for _, _, t, _ in triples}
    pairs = {(x, y) for x in nodes for y in _walk(adj, x, body) if y != x}
    support = sum(1 for x, y in pairs if (x, head, y) in facts)
    return support, (round(support / len(pairs), 3) if pairs else 0.0)


_OPS = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.Div: operator.truediv}


def _safe_eval(expr):
    operands = []

    def ev(node):
        if isinstance(node, ast.Expression):
            return ev(node.body)
        if isinstance(node, ast.BinOp) and type(node.op) in _OPS:
            return _OPS[type(node.op)](ev(node.left), ev(node.right))
        if isinstance(node, ast.Constant) and type(node.value) is int:
            operands.append(node.value)
            return node.value
        raise ValueError(f"unsupported expression element in {expr!r}: {ast.dump(node)}")

    return ev(ast.parse(expr, mode="eval")), operands


def _support_text(pack, q):
    return " ".join(pack["by_id"][d]["text"] for d in q["supporting_docs"]).lower()


# ---------------------------------------------------------------- counts and ids

def test_pack_json(pack):
    m = pack["meta"]
    assert m["name"] == "demo"
    assert m["temporal"] is True
    for k in ("title", "description", "license"):
        assert isinstance(m[k], str) and m[k]


def test_counts(pack):
    assert len(pack["docs"]) >= 150
    assert len(pack["triples"]) >= 600
    assert len(pack["rules"]) >= 10
    assert len(pack["questions"]) >= 80
    assert len(pack["pages"]) >= 8
    by_type = collections.Counter(q["type"] for q in pack["questions"])
    for t in TYPES:
        assert by_type[t] >= 8, f"only {by_type[t]} {t} questions"
    assert set(by_type) <= set(TYPES)
    assert sum(1 for d in pack["docs"] if d.get("distractor")) >= 15


@pytest.mark.parametrize("name", ["docs", "rules", "questions", "pages"])
def test_unique_ids(pack, name):
    ids = [x["id"] for x in pack[name]]
    assert len(ids) == len(set(ids))


def test_documents_shape(pack):
    titles = [d["title"] for d in pack["docs"]]
    assert len(titles) == len(set(titles)), "document titles must be unique"
    for d in pack["docs"]:
        assert re.fullmatch(r"doc-\d{4}", d["id"]), d["id"]
        n = len(d["text"].split())
        assert 60 <= n <= 220, f"{d['id']} has {n} words"
        assert isinstance(d["entities"], list)
        for e in d["entities"]:
            assert e in d["text"], f"{d['id']}: entity {e!r} not in text"


# ---------------------------------------------------------------- triples

def test_triples_grounded(pack):
    texts = [d["text"].lower() for d in pack["docs"]]
    bad = []
    for h, r, t, tm in pack["triples"]:
        assert re.fullmatch(r"[a-z_]+", r), r
        if tm:
            assert re.fullmatch(r"-?\d{1,4}(-\d\d(-\d\d)?)?", tm), tm
        if not any(h.lower() in x and t.lower() in x and (not tm or tm.lower() in x) for x in texts):
            bad.append((h, r, t, tm))
    assert not bad, f"{len(bad)} ungrounded triples, e.g. {bad[:5]}"


def test_relation_vocabulary_small(pack):
    rels = {r for _, r, _, _ in pack["triples"]}
    assert 10 <= len(rels) <= 30, sorted(rels)
    for h, r, t, _ in pack["triples"]:
        if r in YEARLIKE:
            assert re.fullmatch(r"\d{4}", t), (h, r, t)


def test_most_docs_are_entity_pages(pack):
    names = {h for h, _, _, _ in pack["triples"]} | {t for _, _, t, _ in pack["triples"]}
    entity_pages = [d for d in pack["docs"] if d["title"] in names]
    assert len(entity_pages) >= 0.6 * len(pack["docs"])


# ---------------------------------------------------------------- rules

def test_rules(pack):
    rels = {r for _, r, _, _ in pack["triples"]}
    for rule in pack["rules"]:
        assert rule["head"] in rels, rule
        assert rule["body"], rule
        for b in rule["body"]:
            assert b.lstrip("~") in rels, rule
        support, conf = _rule_stats(rule["head"], rule["body"], pack["triples"])
        assert rule["support"] == support, (rule["id"], support)
        assert rule["confidence"] == conf, (rule["id"], conf)
        assert support >= 3 and conf >= 0.3, rule["id"]


# ---------------------------------------------------------------- questions

def test_question_shape(pack):
    rule_ids = {r["id"] for r in pack["rules"]}
    for q in pack["questions"]:
        assert q["type"] in TYPES
        assert q["question"].strip().endswith("?"), q["id"]
        assert q["answers"] and all(isinstance(a, str) and a for a in q["answers"]), q["id"]
        assert isinstance(q["hops"], int) and q["hops"] >= 1
        assert q["supporting_docs"], q["id"]
        for d in q["supporting_docs"]:
            assert d in pack["by_id"], (q["id"], d)
        assert q["topic_entities"], q["id"]
        if "dynamism" in q:
            assert q["dynamism"] in ("static", "slow-changing", "fast-changing", "real-time")
        if q["type"] == "rule":
            assert q.get("rule_ids") and set(q["rule_ids"]) <= rule_ids, q["id"]


def test_answers_in_supporting_text(pack):
    for q in pack["questions"]:
        if q["type"] not in ("factoid", "multi_hop", "comparison", "set", "rule"):
            continue
        text = _support_text(pack, q)
        if q["type"] == "set":
            assert 2 <= len(q["answers"]) <= 5, q["id"]
            missing = [a for a in q["answers"] if a.lower() not in text]
            assert not missing, (q["id"], missing)
        else:
            assert any(a.lower() in text for a in q["answers"]), q["id"]


def test_numeric(pack):
    for q in pack["questions"]:
        if q["type"] != "numeric":
            continue
        text = _support_text(pack, q)
        if "calculation" in q:
            value, operands = _safe_eval(q["calculation"])
            assert value == int(value) and str(int(value)) == q["answers"][0], (q["id"], value)
            for o in operands:
                assert str(o) in text, (q["id"], o)
        else:
            assert any(a.lower() in text for a in q["answers"]), q["id"]


def test_rule_questions_follow_rule_paths(pack):
    adj = _adjacency(pack["triples"])
    facts = {(h, r, t) for h, r, t, _ in pack["triples"]}
    rules = {r["id"]: r for r in pack["rules"]}
    for q in pack["questions"]:
        if q["type"] != "rule":
            continue
        for rid in q["rule_ids"]:
            rule = rules[rid]
            reached = set().union(*(_walk(adj, e, rule["body"]) for e in q["topic_entities"]))
            assert any(a in reached for a in q["answers"]), (q["id"], rid, sorted(reached))
            # the inferred fact itself must not be stated as a triple
            for e in q["topic_entities"]:
                for a in q["answers"]:
                    assert (e, rule["head"], a) not in facts, (q["id"], e, a)


def test_false_premise(pack):
    for q in pack["questions"]:
        if q["type"] == "false_premise":
            assert q["answers"] == ["invalid question"], q["id"]


def test_safe_eval_rejects_code():
    with pytest.raises(ValueError):
        _safe_eval("__import__('os').getcwd()")
    with pytest.raises(ValueError):
        _safe_eval("2 ** 8")
    assert _safe_eval("1922 - 1885") == (37, [1922, 1885])


# ---------------------------------------------------------------- pages

def test_pages(pack):
    qids = {q["id"] for q in pack["questions"]}
    for p in pack["pages"]:
        html = p["html"]
        assert html.lstrip().lower().startswith("<!doctype html>"), p["id"]
        for tag in ("<head", "<nav", "<table", "<footer"):
            assert tag in html.lower(), (p["id"], tag)
        assert p["url"].startswith("https://"), p["id"]
        assert p["title"], p["id"]
        assert p["question_ids"] and set(p["question_ids"]) <= qids, p["id"]
    assert any("<script" in p["html"] for p in pack["pages"])
    assert any("<!--" in p["html"] for p in pack["pages"])
