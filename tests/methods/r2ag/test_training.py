"""Training: relevance-only on the demo pack beats the retriever's order on the lists it learned from;
joint training reaches the projection through a frozen tiny Llama, starts from the relevance stage, is
bounded and reports one progress count; the CLI trains and reports."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from engine.methods.r2ag.checkpoint import read_meta  # noqa: E402
from engine.methods.r2ag.training import (  # noqa: E402
    TrainConfig,
    build_examples,
    by_r,
    former_order,
    is_heldout,
    joint_steps,
    mean_ap,
    target,
    train_joint,
    train_r2ag,
    train_relevance,
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
    model = train_joint(lists[:2], chat, TrainConfig(lm_epochs=1, lm_batch_size=1),
                        progress=lambda s, t, loss: seen.append(loss))
    assert model.proj is not None and model.proj.out_features == 64 and len(seen) == 2
    fresh = train_joint(lists[:2], chat, TrainConfig(lm_max_steps=0))  # same seed, same init, no step
    assert not torch.allclose(fresh.proj.weight, model.proj.weight)  # the LM loss reached the projection
    assert all(torch.equal(frozen[n], p) for n, p in chat.model_obj.named_parameters())


@pytest.fixture(scope="module")
def tiny_chat(tiny_llama):
    from engine.llm import hf

    return hf._load(hf.HfModelConfig(str(tiny_llama), quantization="none", device="cpu"))


def test_joint_training_starts_from_the_relevance_stage_and_reports_one_count_for_both(mini_workbench, tiny_chat,
                                                                                        tmp_path):
    config = TrainConfig(epochs=2, lm_epochs=1, lm_max_steps=3)
    seen: list[tuple[int, int]] = []
    result = train_r2ag(mini_workbench.pack, mini_workbench.retrieval, config, chat=tiny_chat, out=tmp_path / "j.pt",
                        progress=lambda step, total, loss: seen.append((step, total)))
    steps, totals = [s for s, _ in seen], {t for _, t in seen}
    assert steps == list(range(1, len(seen) + 1)) and totals == {len(seen)}  # one bar, counted once, to its end
    train = int(result.meta.metrics["train_lists"])
    assert len(seen) == 2 * -(-train // config.batch_size) + 3  # the relevance epochs, then the bounded joint steps
    assert result.meta.objective == "qdm+lm" and result.meta.injects


def test_the_joint_stage_begins_with_the_relevance_stages_weights_and_a_quiet_projection(mini_workbench, tiny_chat):
    lists = build_examples(mini_workbench.pack, mini_workbench.retrieval, TrainConfig())
    relevance = train_relevance(lists, TrainConfig(epochs=1))
    start = train_joint(lists, tiny_chat, TrainConfig(lm_max_steps=0), start=relevance)
    assert torch.equal(start.qdm.weight, relevance.qdm.weight) and torch.equal(start.inp.weight, relevance.inp.weight)
    table = tiny_chat.model_obj.get_input_embeddings().weight.float()
    features = torch.from_numpy(lists[0].features)[None]
    with torch.no_grad():
        vectors = start.project(start(features).hidden)[0]
    # an untrained vector is about as loud as a token, not several times louder
    assert 0.5 < float(vectors.norm(dim=-1).mean() / table.norm(dim=-1).mean()) < 2.0


def test_the_joint_stage_is_bounded_by_its_step_cap():
    assert joint_steps(66, TrainConfig()) == 32 and joint_steps(10, TrainConfig()) == 10
    assert joint_steps(66, TrainConfig(lm_max_steps=5)) == 5


def test_a_set_question_teaches_every_item_and_others_their_first_answer(demo_pack):
    by_type = {q.type: q for q in demo_pack.questions}
    assert target(by_type["set"]) == ", ".join(by_type["set"].answers)
    assert target(by_type["factoid"]) == by_type["factoid"].answers[0]


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
