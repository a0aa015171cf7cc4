"""RuleRAG-FT retriever side (training.py): pairs from questions + rules, the held-out split, the supporting
share at k (reported as recall@k) and a tiny training run."""

from __future__ import annotations

import numpy as np
import pytest

from engine.knowledge.records import Rule
from engine.methods.rulerag.training import (
    FinetuneConfig,
    TrainingPair,
    build_pairs,
    split_pairs,
    supporting_share_at,
    train_query_encoder,
)
from engine.retrieval.query_encoder import QueryEncoderManifest, finetuned_dir, read_manifest
from engine.retrieval.suite import Retrieval, pack_key
from engine.rules.text import rule_query
from engine.settings import Settings


@pytest.fixture(scope="module")
def demo_pairs(demo_workbench):
    return build_pairs(demo_workbench.pack, demo_workbench.retrieval)


def test_rule_question_queries_end_with_the_gold_rule_in_brackets(demo_pairs, demo_workbench):
    rules = {r.id: r for r in demo_workbench.pack.rules}
    q067 = [p for p in demo_pairs if p.question_id == "q067"]
    assert [p.rule_id for p in q067] == ["r01"]
    assert q067[0].query == ("Of which country was Erwin Schrödinger a citizen by birth? "
                             "[X, born in, Z] and [Z, located in, Y] leads to [X, citizen of, Y]")
    assert q067[0].query.endswith(rule_query(rules["r01"]))


def test_rule_questions_come_first_and_every_question_with_supporting_docs_has_a_pair(demo_pairs, demo_workbench):
    types = [demo_workbench.pack.questions_by_id[p.question_id].type for p in demo_pairs]
    first_other = types.index(next(t for t in types if t != "rule"))
    assert set(types[:first_other]) == {"rule"} and "rule" not in types[first_other:]
    with_docs = {q.id for q in demo_workbench.pack.questions if q.supporting_docs}
    assert {p.question_id for p in demo_pairs} == with_docs


def test_positives_are_the_chunks_of_the_supporting_docs_and_the_hard_negative_is_not_one(demo_pairs, demo_workbench):
    chunks = demo_workbench.retrieval.chunks_by_id
    for pair in demo_pairs:
        assert {chunks[c].doc_id for c in pair.positives} == set(pair.supporting_docs)
        wanted = {c.id for c in chunks.values() if c.doc_id in pair.supporting_docs}
        assert set(pair.positives) == wanted
        assert pair.hard_negative not in pair.positives


def test_questions_without_gold_rule_ids_take_the_best_matched_rule_or_none(demo_pairs, demo_workbench):
    rules = {r.id: r for r in demo_workbench.pack.rules}
    for pair in demo_pairs:
        question = demo_workbench.pack.questions_by_id[pair.question_id].question
        if pair.rule_id:
            assert pair.query == f"{question} {rule_query(rules[pair.rule_id])}"
        else:
            assert pair.query == question


def test_split_holds_out_whole_questions_per_type_deterministically():
    pairs = [TrainingPair(f"q{i}", f"query {i}", "", ("c",), ("d",)) for i in range(8)]
    pairs.append(TrainingPair("q0", "query 0 again", "r2", ("c",), ("d",)))
    types = {f"q{i}": "rule" if i < 4 else "factoid" for i in range(8)}
    train, held = split_pairs(pairs, 0.25, types)
    assert len({p.question_id for p in held}) == 2
    assert {types[p.question_id] for p in held} == {"rule", "factoid"}
    assert not {p.question_id for p in train} & {p.question_id for p in held}
    assert split_pairs(pairs, 0.25, types) == (train, held)


def test_recall_counts_the_share_of_supporting_docs_in_the_top_k():
    docs = np.eye(3, dtype=np.float32)
    queries = np.array([[1.0, 0.5, 0.0], [0.0, 0.0, 1.0]], dtype=np.float32)
    pairs = [TrainingPair("a", "", "", (), ("d0", "d2")), TrainingPair("b", "", "", (), ("d1",))]
    assert supporting_share_at(queries, docs, ["d0", "d1", "d2"], pairs, 1) == 0.25
    assert supporting_share_at(queries, docs, ["d0", "d1", "d2"], pairs, 3) == 1.0


def test_manifest_round_trips_through_json_and_tolerates_unknown_keys():
    manifest = QueryEncoderManifest("demo", "demo-abc", "f00", "minilm-1", 10, 8, 2, 1, 3, 1.5,
                                    {"recall@5_after": 0.5}, {"lr": 2e-5})
    assert QueryEncoderManifest.from_json(manifest.to_json()) == manifest
    assert QueryEncoderManifest.from_json(manifest.to_json()[:-1] + ', "later": 1}') == manifest


def test_a_few_training_steps_save_a_query_encoder_with_its_manifest(mini_pack, tmp_path):
    settings = Settings(home=tmp_path)
    retrieval = Retrieval(mini_pack, settings)
    seen = []
    result = train_query_encoder(mini_pack, settings, FinetuneConfig(max_steps=2, batch_size=4, train_layers=1),
                                 progress=lambda step, total, loss: seen.append((step, total)), retrieval=retrieval)
    folder = finetuned_dir(settings, pack_key(mini_pack), retrieval.embedder.id)
    assert result.folder == str(folder) and seen == [(1, 2), (2, 2)]
    assert len(result.losses) == 2 and all(np.isfinite(result.losses))
    manifest = read_manifest(folder)
    assert manifest == result.manifest
    assert (manifest.steps, manifest.pack_fingerprint, manifest.base_embedder) == (
        2, mini_pack.fingerprint, retrieval.embedder.id)
    assert {"recall@5_before", "recall@5_after", "recall@10_before", "recall@10_after"} <= set(manifest.metrics)
    encoder = retrieval.query_encoder()
    vector = encoder.encode(["In which city was Ada Lovelace born?"])[0]
    assert vector.shape == (retrieval.embedder.dimension,) and abs(float(vector @ vector) - 1.0) < 1e-4


def test_training_needs_questions_with_supporting_docs(mini_pack, tmp_path):
    from dataclasses import replace

    from engine.errors import RagscopeError

    bare = replace(mini_pack, questions=(), rules=(Rule("r", "a", ("b",), 0.5, 1),))
    with pytest.raises(RagscopeError, match="no questions with supporting_docs"):
        train_query_encoder(bare, Settings(home=tmp_path), FinetuneConfig(max_steps=1))
