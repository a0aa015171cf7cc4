"""Checkpoints round-trip in fp16, stay small, and a setup they were not trained for is refused."""

from __future__ import annotations

from dataclasses import replace

import pytest

torch = pytest.importorskip("torch")

from engine.errors import CheckpointError  # noqa: E402
from engine.methods.r2ag.checkpoint import (  # noqa: E402
    SHIPPED,
    CheckpointMeta,
    checkpoint_path,
    find_checkpoint,
    load_checkpoint,
    read_meta,
    save_checkpoint,
)
from engine.methods.r2ag.former import R2Former, R2FormerConfig  # noqa: E402

META = CheckpointMeta(embedder="minilm-1234", k=4, config=R2FormerConfig(k=4).to_dict(), pack="demo")


def test_a_checkpoint_round_trips_with_its_metadata_and_stays_small(tmp_path):
    torch.manual_seed(0)
    model = R2Former(R2FormerConfig(k=4)).eval()
    path = save_checkpoint(tmp_path / "r.pt", model, META)
    loaded, meta = load_checkpoint(path)
    assert meta == META and path.stat().st_size < 2_000_000
    features = torch.rand(1, 4, 3)
    with torch.no_grad():
        assert torch.allclose(model(features).logits, loaded(features).logits, atol=2e-2)


def test_a_mismatched_embedder_k_or_llm_is_refused_with_a_clear_message():
    with pytest.raises(CheckpointError, match=r"embedder 'minilm-1234' but retrieval uses 'other'.*train-r2ag"):
        META.require("other")
    with pytest.raises(CheckpointError, match=r"trained for k=4 documents but k=10 was asked"):
        META.require("minilm-1234", k=10)
    joint = replace(META, llm="llama-a", hidden_size=64)
    with pytest.raises(CheckpointError, match=r"projects into 'llama-a' \(width 64\) but the loaded model is "
                                              r"'llama-b' \(width 64\).*--backend hf --model PATH"):
        joint.require("minilm-1234", llm="llama-b", hidden_size=64)
    joint.require("minilm-1234", k=4, llm="llama-a", hidden_size=64)
    with pytest.raises(CheckpointError, match="feature order r, zeta, gamma"):
        replace(META, feature_order=("r", "zeta", "gamma")).require("minilm-1234")


def test_a_missing_or_foreign_file_is_a_checkpoint_error(tmp_path):
    with pytest.raises(CheckpointError, match="no R2-Former checkpoint at"):
        load_checkpoint(tmp_path / "none.pt")
    (tmp_path / "junk.pt").write_bytes(b"not a checkpoint")
    with pytest.raises(CheckpointError, match="is not an R2-Former checkpoint"):
        load_checkpoint(tmp_path / "junk.pt")


def test_lookup_prefers_the_named_file_then_the_llm_then_relevance_then_the_shipped_one(tmp_path):
    assert find_checkpoint(tmp_path, "llama-a") == SHIPPED
    save_checkpoint(checkpoint_path(tmp_path), R2Former(R2FormerConfig(k=4)), META)
    assert find_checkpoint(tmp_path, "llama-a") == checkpoint_path(tmp_path)
    save_checkpoint(checkpoint_path(tmp_path, "llama-a"), R2Former(R2FormerConfig(k=4)), META)
    assert find_checkpoint(tmp_path, "llama-a").name == "llama-a.pt"
    assert find_checkpoint(tmp_path, "llama-a", explicit=str(tmp_path / "x.pt")) == tmp_path / "x.pt"


def test_the_shipped_checkpoint_is_relevance_only_for_the_default_embedder_and_small():
    from engine.retrieval.embedder import load_embedder

    meta = read_meta(SHIPPED)
    meta.require(load_embedder().id)
    assert not meta.injects and meta.objective == "qdm" and meta.pack == "demo"
    assert SHIPPED.stat().st_size < 2_000_000
