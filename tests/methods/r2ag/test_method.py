"""R2AG end to end: offline (re-rank, no injection, said plainly) and on a tiny random Llama (inject + plain RAG)."""

from __future__ import annotations

import pytest

from engine.errors import CheckpointError
from engine.methods.base import RunContext, get_method
from engine.methods.r2ag.method import R2agParams
from engine.methods.r2ag.offline import RERANK_ONLY
from engine.params import build_params
from engine.trace import AnswerStep, AttentionStep, DecisionStep, FeaturesStep, LlmCallStep, RetrievalStep, Trace

QUESTION = "Who was born first, Ada Lovelace or Charles Babbage?"


def kinds(steps) -> list[tuple[str, int]]:
    return [(s.kind, s.iteration) for s in steps]


def run(workbench, tools=None, **params) -> list:
    ctx = RunContext(pack=workbench.pack, retrieval=workbench.retrieval, tools=tools or workbench.tools,
                     params=build_params(R2agParams, params), question=workbench.pack.questions_by_id["mq3"])
    return list(get_method("r2ag").run(QUESTION, ctx))


def test_offline_run_on_the_mini_pack_reranks_and_says_nothing_was_injected(mini_workbench):
    trace = mini_workbench.ask(QUESTION, "r2ag", question_id="mq3")
    # the offline reader compares the two birth years with the calculator
    assert kinds(trace.steps) == [("retrieval", 1), ("features", 1), ("attention", 1), ("retrieval", 1),
                                  ("decision", 1), ("calculation", 1), ("answer", 1)]
    features, attention, reranked, decision = trace.steps[1:5]
    assert isinstance(features, FeaturesStep) and features.columns[:3] == ("list rank", "retriever rank",
                                                                            "R2-Former rank")
    assert {"r", "γ", "ζ", "QDM p", "gold"} <= set(features.columns)
    assert len(features.rows) == len(trace.steps[0].hits)  # the mini pack has fewer chunks than k: padded
    n = len(features.rows)
    assert isinstance(attention, AttentionStep) and len(attention.heads) == 4 and len(attention.matrix) == n
    assert isinstance(reranked, RetrievalStep) and [h.rank for h in reranked.hits] == list(range(1, n + 1))
    assert isinstance(decision, DecisionStep) and "no embeddings were injected because no language model " \
                                                  "is loaded" in decision.detail
    assert trace.answer.evidence[0] == reranked.hits[0].doc_id and "offline" in trace.answer.backend


def test_the_trace_round_trips_through_json(mini_workbench):
    trace = mini_workbench.ask(QUESTION, "r2ag", question_id="mq3")
    assert Trace.from_json(trace.to_json()) == trace


def test_a_k_other_than_the_checkpoints_fails_with_the_reason(mini_workbench):
    trace = mini_workbench.ask(QUESTION, "r2ag", {"k": 7})
    assert trace.steps[0].kind == "error" and "trained for k=10 documents but k=7" in trace.steps[0].message
    assert trace.answer.refused


@pytest.fixture(scope="module")
def tiny_tools(tiny_llama, mini_pack):
    pytest.importorskip("torch")
    from engine.llm import hf
    from engine.tools.bundle import llm_bundle

    chat = hf._load(hf.HfModelConfig(str(tiny_llama), quantization="none", device="cpu"))
    return llm_bundle(chat, mini_pack)


@pytest.fixture(scope="module")
def tiny_checkpoint(tiny_tools, mini_workbench, tmp_path_factory):
    from engine.methods.r2ag.training import TrainConfig, train_r2ag

    out = tmp_path_factory.mktemp("r2ag") / "tiny.pt"
    result = train_r2ag(mini_workbench.pack, mini_workbench.retrieval, TrainConfig(lm_epochs=1),
                        chat=tiny_tools.chat, out=out)
    assert result.meta.objective == "qdm+lm" and result.meta.hidden_size == 64
    return out


def test_hf_run_injects_the_vectors_and_runs_plain_rag_over_the_same_documents(mini_workbench, tiny_tools,
                                                                               tiny_checkpoint):
    steps = run(mini_workbench, tiny_tools, checkpoint=str(tiny_checkpoint), max_new_tokens=4)
    calls = [s for s in steps if isinstance(s, LlmCallStep)]
    assert [c.role for c in calls] == ["r2ag", "plain rag"]
    assert calls[0].prompt.count("<R>") == len(steps[0].hits) and "<R>" not in calls[1].prompt
    docs = [line.split(")", 1)[0] for line in calls[0].prompt.splitlines() if line.startswith("[")]
    assert [d.replace("similarity: <R>", "") for d in docs] == \
           [line.split(")", 1)[0] for line in calls[1].prompt.splitlines() if line.startswith("[")]
    maps = [s for s in steps if isinstance(s, AttentionStep)]
    assert [m.group for m in maps] == ["R2-Former"] + ["R2AG"] * 3 + ["plain RAG"] * 3
    layer_segment = maps[1]
    assert layer_segment.x_labels[:2] == ("e_R 1", "doc 1") and len(layer_segment.y_labels) == 2
    assert sum(layer_segment.matrix[0]) == pytest.approx(1.0, abs=1e-3)
    assert any(s.kind == "placeholder" for s in maps[2].segments)  # the paper's layer × token view
    assert not any(isinstance(s, DecisionStep) and s.action == "no_injection" for s in steps)
    answer = steps[-1]
    assert isinstance(answer, AnswerStep) and answer.backend == "hf" and answer.evidence


def test_hf_run_without_a_projection_for_this_model_falls_back_and_says_why(mini_workbench, tiny_tools):
    steps = run(mini_workbench, tiny_tools, max_new_tokens=4)  # only the relevance-only checkpoint exists
    decision = next(s for s in steps if isinstance(s, DecisionStep))
    assert decision.action == "no_injection" and "no projection trained for" in decision.detail
    assert decision.title == "R2AG — re-rank only, no injection"
    answer = steps[-1]
    assert isinstance(answer, AnswerStep) and answer.title.startswith("R2AG — re-rank only, no injection")


def test_without_injection_the_run_is_labelled_re_rank_only(mini_workbench):
    trace = mini_workbench.ask(QUESTION, "r2ag", question_id="mq3")
    decision = next(s for s in trace.steps if isinstance(s, DecisionStep))
    assert RERANK_ONLY == "R2AG — re-rank only, no injection"
    assert decision.title == RERANK_ONLY and decision.action == "no_injection"
    assert not trace.answer.refused and trace.answer.title == RERANK_ONLY


def test_the_decoding_budget_is_the_papers_100_new_tokens():
    assert R2agParams().max_new_tokens == 100
    assert build_params(R2agParams, {}).max_new_tokens == 100


def test_a_checkpoint_for_another_model_is_refused(mini_workbench, tiny_tools, tiny_checkpoint, tmp_path):
    import torch

    blob = torch.load(tiny_checkpoint, weights_only=True)
    blob["meta"] = {**blob["meta"], "llm": "other-model-00000000"}
    torch.save(blob, tmp_path / "other.pt")
    with pytest.raises(CheckpointError, match="projects into 'other-model-00000000'"):
        run(mini_workbench, tiny_tools, checkpoint=str(tmp_path / "other.pt"))


def test_injected_generation_decodes_with_the_default_budget(mini_workbench, tiny_tools, tiny_checkpoint,
                                                             monkeypatch):
    from engine.methods.r2ag import injection

    budgets = []
    real = injection.greedy_decode

    def spy(model, tokenizer, embeds, max_new_tokens, capture=True, *args, **kwargs):
        budgets.append(max_new_tokens)
        return real(model, tokenizer, embeds, 2, capture, *args, **kwargs)  # keep the test quick

    monkeypatch.setattr(injection, "greedy_decode", spy)
    run(mini_workbench, tiny_tools, checkpoint=str(tiny_checkpoint), compare_plain=False, attention=False)
    assert budgets == [100]
