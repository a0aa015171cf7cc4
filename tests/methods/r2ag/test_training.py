"""Training: relevance-only on the demo pack beats the retriever's order on the lists it learned from;
joint training reaches the projection through a frozen tiny Llama; the CLI trains and reports."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from engine.methods.r2ag.checkpoint import read_meta  # noqa: E402
from engine.methods.r2ag.training import (  # noqa: E402
    TrainConfig, build_examples, by_r, former_order, is_heldout, mean_ap, train_joint, train_relevance,
)


@pytest.fixture(scope="module")
def demo_lists(demo_workbench):
    return build_examples(demo_workbench.pack, demo_workbench.retrieval, TrainConfig())


def test_relevance_training_on_the_demo_pack_improves_map_over_the_retriever_order(demo_lists):
    """Three seeds, not one: on the demo lists the gain of one training run varies 0.014–0.034 with the seed
    alone (measured for the rank-bm25 and the bm25s retriever, and with RRF ties in dense order: 0.016,
    0.026, 0.018), so a single seed tests the seed."""
    before = mean_ap(demo_lists, lambda e: e.retriever_order)
    gains = []
    for seed in (42, 0, 1):
        model = train_relevance(demo_lists, TrainConfig(epochs=120, batch_size=16, seed=seed))
        gains.append(mean_ap(demo_lists, former_order(model)) - before)
    print(f"demo pack, {len(demo_lists)} lists: MAP retriever order {before:.4f}, by r "
          f"{mean_ap(demo_lists, by_r):.4f}, R2-Former gain per seed {[round(g, 4) for g in gains]}")
    # on the lists it was trained on; held-out figures are in the checkpoint's metadata and the README
    assert len(demo_lists) == 89 and min(gains) > 0.01 and sum(gains) / len(gains) > 0.015


def test_labels_come_from_supporting_docs_and_the_split_is_stable(demo_lists):
    first = demo_lists[0]
    assert first.labels == tuple(float(h.doc_id in first.supporting) for h in first.hits)
    assert first.features.shape == (10, 3) and sum(first.labels) >= 1
    assert [is_heldout(e.question_id, 0.2) for e in demo_lists] == [is_heldout(e.question_id, 0.2) for e in demo_lists]
    assert 5 < sum(is_heldout(e.question_id, 0.2) for e in demo_lists) < 35


def test_joint_training_updates_the_projection_through_the_frozen_llm(mini_workbench, tiny_llama):
    from engine.llm import hf

    chat = hf._load(hf.HfModelConfig(str(tiny_llama), quantization="none", device="cpu"))
    lists = build_examples(mini_workbench.pack, mini_workbench.retrieval, TrainConfig())
    frozen = {n: p.detach().clone() for n, p in chat.model_obj.named_parameters()}
    seen = []
    model = train_joint(lists[:2], chat, TrainConfig(lm_epochs=1), progress=lambda s, t, loss: seen.append(loss))
    assert model.proj is not None and model.proj.out_features == 64 and len(seen) == 2
    torch.manual_seed(42)
    fresh = type(model)(model.config)  # same seed, same init as the trained one
    assert not torch.allclose(fresh.proj.weight, model.proj.weight)  # the LM loss reached the projection
    assert all(torch.equal(frozen[n], p) for n, p in chat.model_obj.named_parameters())


def test_the_cli_trains_a_relevance_checkpoint_and_reports_map(ragscope_home, capsys, tmp_path):
    from engine.cli import main
    from paths import MINI_PACK

    out = tmp_path / "mini.pt"
    assert main(["train-r2ag", "--pack", str(MINI_PACK), "--epochs", "2", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "MAP: retriever order" in printed and f"saved {out}" in printed
    meta = read_meta(out)
    assert meta.objective == "qdm" and meta.k == 10 and "train_map_r2former" in meta.metrics


def test_the_cli_refuses_bad_input_with_exit_2(capsys):
    from engine.cli import main
    from paths import MINI_PACK

    assert main(["train-r2ag", "--pack", str(MINI_PACK), "--k", "0"]) == 2
    assert "--k, --epochs and --lm-epochs must be at least 1" in capsys.readouterr().err
    assert main(["train-r2ag", "--pack", str(MINI_PACK), "--backend", "openai"]) == 2
