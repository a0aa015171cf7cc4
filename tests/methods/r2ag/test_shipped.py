"""A checkpoint that ships for a model is found for that model: by its name without the GGUF quantization
and the hash of its architecture, after one trained in the data folder and before the relevance-only one."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from engine.methods.r2ag.checkpoint import (  # noqa: E402
    SHIPPED,
    SHIPPED_FOLDER,
    CheckpointMeta,
    checkpoint_path,
    find_checkpoint,
    llm_identity,
    read_meta,
    save_checkpoint,
)
from engine.methods.r2ag.former import R2Former, R2FormerConfig  # noqa: E402

SMOLLM2 = SimpleNamespace(model_type="llama", hidden_size=576, num_hidden_layers=30, num_attention_heads=9,
                          vocab_size=49152)
SMOLLM2_ID = llm_identity("SmolLM2-135M-Instruct", SMOLLM2)


@pytest.mark.parametrize("name", ["SmolLM2-135M-Instruct", ".venv/models/SmolLM2-135M-Instruct.Q4_1.gguf",
                                  "/m/SmolLM2-135M-Instruct-Q4_K_M.gguf", "SmolLM2-135M-Instruct.f16.gguf",
                                  "HuggingFaceTB/SmolLM2-135M-Instruct"])
def test_a_model_has_one_identity_whatever_its_quantization_or_file(name):
    assert llm_identity(name, SMOLLM2) == SMOLLM2_ID


def test_another_architecture_or_model_name_is_another_identity():
    assert llm_identity("SmolLM2-135M-Instruct", SimpleNamespace(**{**vars(SMOLLM2), "hidden_size": 960})) != SMOLLM2_ID
    assert llm_identity("Qwen2.5-0.5B-Instruct", SMOLLM2) != SMOLLM2_ID


def test_lookup_takes_this_models_trained_then_shipped_checkpoint_before_a_relevance_only_one(tmp_path):
    home, shipped = tmp_path / "home", tmp_path / "assets"
    meta = CheckpointMeta(embedder="e", k=4, config=R2FormerConfig(k=4).to_dict())
    save_checkpoint(checkpoint_path(home), R2Former(R2FormerConfig(k=4)), meta)
    assert find_checkpoint(home, "llama-a", shipped=shipped) == checkpoint_path(home)
    save_checkpoint(checkpoint_path(shipped, "llama-a"), R2Former(R2FormerConfig(k=4)), meta)
    assert find_checkpoint(home, "llama-a", shipped=shipped) == checkpoint_path(shipped, "llama-a")
    assert find_checkpoint(home, "llama-b", shipped=shipped) == checkpoint_path(home)
    save_checkpoint(checkpoint_path(home, "llama-a"), R2Former(R2FormerConfig(k=4)), meta)
    assert find_checkpoint(home, "llama-a", shipped=shipped) == checkpoint_path(home, "llama-a")
    assert find_checkpoint(tmp_path / "empty", "", shipped=shipped) == SHIPPED


def test_the_smollm2_checkpoint_ships_small_and_injects_for_that_model_and_the_default_embedder(tmp_path):
    from engine.retrieval.embedder import load_embedder

    path = find_checkpoint(tmp_path, SMOLLM2_ID)
    assert path == checkpoint_path(SHIPPED_FOLDER, SMOLLM2_ID) and path.stat().st_size < 5_000_000
    meta = read_meta(path)
    meta.require(load_embedder().id, llm=SMOLLM2_ID, hidden_size=576)
    assert meta.injects and meta.objective == "qdm+lm" and meta.k == 5 and meta.pack == "demo"
    assert meta.metrics["heldout_lists"] >= 20  # trained on the demo pack's other questions only


@pytest.mark.llm
def test_the_real_model_loaded_from_its_gguf_file_finds_its_shipped_checkpoint(real_gguf, tmp_path):
    from engine.llm import hf
    from engine.methods.r2ag.llm import injection_model

    chat = hf._load(hf.HfModelConfig(str(real_gguf), quantization="none", device="cpu"))
    model = injection_model(chat)
    assert model is not None and model.llm_id == SMOLLM2_ID and model.hidden_size == 576
    assert find_checkpoint(tmp_path, model.llm_id) == checkpoint_path(SHIPPED_FOLDER, SMOLLM2_ID)
