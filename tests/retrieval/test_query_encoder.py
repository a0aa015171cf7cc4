"""The `dense-ft` retriever: fine-tuned query encoder over the unchanged index, and its error when untrained."""

from __future__ import annotations

import shutil

import pytest

from engine.errors import UnknownNameError
from engine.methods.rulerag.method import RuleRagParams
from engine.params import build_params
from engine.retrieval.query_encoder import MANIFEST, QueryEncoderManifest, finetuned_dir
from engine.retrieval.suite import RETRIEVER_NAMES, Retrieval, pack_key
from engine.settings import Settings

METADATA_KEYS = {"score", "rank", "doc_id", "chunk_id", "title", "retriever"}


def _fake_training(retrieval: Retrieval) -> None:
    """A 'trained' encoder that is a copy of the base one: what the retriever loads, without training."""
    pack = retrieval.pack
    folder = finetuned_dir(retrieval.settings, pack_key(pack), retrieval.embedder.id)
    shutil.copytree(retrieval.embedder.path, folder)
    manifest = QueryEncoderManifest(pack.info.name, pack_key(pack), pack.fingerprint, retrieval.embedder.id,
                                    1, 1, 0, 1, 1, 0.1)
    (folder / MANIFEST).write_text(manifest.to_json(), encoding="utf-8")


def test_dense_ft_is_a_retriever_choice_of_rulerag():
    assert "dense-ft" in RETRIEVER_NAMES
    assert build_params(RuleRagParams, {"retriever": "dense-ft"}).retriever == "dense-ft"


def test_untrained_dense_ft_says_to_run_train_retriever(mini_pack, tmp_path):
    retrieval = Retrieval(mini_pack, Settings(home=tmp_path))
    with pytest.raises(UnknownNameError, match=r"run `python -m engine train-retriever --pack .*mini` first"):
        retrieval.retriever("dense-ft")
    with pytest.raises(UnknownNameError, match="no fine-tuned|none in"):
        retrieval.search("Where was Grace Hopper born?", retriever="dense-ft")


def test_trained_dense_ft_searches_the_base_index_with_the_query_encoder(mini_pack, tmp_path):
    retrieval = Retrieval(mini_pack, Settings(home=tmp_path))
    _fake_training(retrieval)
    hits = retrieval.search("Where was Grace Hopper born?", k=3, retriever="dense-ft", provenance="rule r1")
    assert hits and hits[0].doc_id == "m07"
    assert {h.retriever for h in hits} == {"dense-ft"} and {h.provenance for h in hits} == {"rule r1"}
    assert [h.rank for h in hits] == list(range(1, len(hits) + 1))
    docs = retrieval.retriever("dense-ft", k=3).invoke("Where was Grace Hopper born?")
    assert METADATA_KEYS <= set(docs[0].metadata)
    dense = retrieval.search("Where was Grace Hopper born?", k=3, retriever="dense")
    assert [h.chunk_id for h in hits] == [h.chunk_id for h in dense]  # same weights, same index → same list
    assert retrieval.query_encoder() is not retrieval.embedder
