"""R2AG: retrieval features → R2-Former → its vectors injected into the prompt before each document.

Spec: shared/methods/r2ag.md. One pass, so every step is iteration 1 (spec §3 note): retrieve,
features (r, γ, ζ), the R2-Former (re-ranking by its relevance head, its attention), then either
injected generation with a plain-RAG run over the same documents for comparison (HF backend and a
checkpoint trained for that model), or the reader over the re-ranked chunks, with a decision step
saying why nothing was injected (`llm.py` and `offline.py`, the two twins; `tools.py` what they share). On
both paths an output that only hands the prompt back (`answer`) is a recoverable error step and the answer is
"I don't know".
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.methods.base import Method, RunContext, register
from engine.methods.r2ag.checkpoint import CheckpointMeta, find_checkpoint
from engine.methods.r2ag.features import ListFeatures, ranked_features
from engine.methods.r2ag.llm import generate, injection_model
from engine.methods.r2ag.offline import read_reranked, why_not_injected
from engine.methods.r2ag.tools import ITERATION, InjectionModel, Scored
from engine.params import param
from engine.retrieval.suite import RETRIEVER_NAMES
from engine.tools.base import IDK
from engine.trace import AnswerStep, DecisionStep, FeaturesStep, Hit, RetrievalStep, Step


@dataclass(frozen=True)
class R2agParams:
    retriever: str = param("hybrid", choices=RETRIEVER_NAMES,
                           help="Retriever for the candidate list; features are recomputed from MiniLM vectors.")
    k: int = param(0, min=0, max=30, help="Documents per list; 0 = the checkpoint's k (it must match: the "
                                          "R2-Former's rank positions are learned for one k).")
    checkpoint: str = param("", help="R2-Former checkpoint file; empty = the one trained for the loaded model "
                                     "(in the data folder, else shipped: SmolLM2-135M-Instruct), else the "
                                     "relevance-only one.")
    compare_plain: bool = param(True, help="HF backend: also run plain RAG over the same documents in the same "
                                           "order, for side-by-side answers and attention.")
    attention: bool = param(True, help="HF backend: capture the LLM's attention (slower).")
    max_new_tokens: int = param(100, min=1, max=200,
                                help="Greedy decoding budget (paper: 100 new tokens); the first line is the answer.")
    max_prompt_tokens: int = param(4096, min=256, max=32768,
                                   help="Longer prompts cut document text, never a placeholder slot.")


@register
class R2agMethod(Method):
    id = "r2ag"
    label = "R2AG"
    paper = ("Ye et al., R2AG: Incorporating Retrieval Information into Retrieval Augmented Generation "
             "(Findings of EMNLP 2024)")
    description = ("Three similarity features per retrieved document feed a small Transformer whose vectors are "
                   "written into the LLM's prompt; offline it re-ranks the chunks.")
    Params = R2agParams

    def run(self, question: str, ctx: RunContext) -> Iterator[Step]:
        params: R2agParams = ctx.params
        model = ctx.tools.twin(injection_model, lambda: None)
        former, meta = _checkpoint(ctx, params, model)
        k = meta.k if params.k == 0 else params.k
        meta.require(ctx.retrieval.embedder.id, k=k)
        # §3.1: retrieve the top-k candidates
        hits = ctx.retrieval.search(question, k=k, retriever=params.retriever, provenance="question")
        yield RetrievalStep(iteration=ITERATION, title=f"Top {len(hits)} chunks ({params.retriever})",
                            query=question, retriever=params.retriever, hits=hits)
        if not hits:
            yield DecisionStep(iteration=ITERATION, action="refuse", detail="retrieval returned no chunks")
            yield AnswerStep(iteration=ITERATION, title="Refused: nothing retrieved", text=IDK, refused=True,
                             backend=ctx.tools.backend, model=ctx.tools.model)
            return
        ctx.check()
        # §2.1 / §3.2-5: features from the retriever's encoder, in the checkpoint's list order
        ordered, features = ranked_features(ctx.retrieval, question, hits, meta.list_order == "r")
        # §2.2 / §3.6: the R2-Former; its relevance head re-ranks, its attention is shown
        scored = _score(former, features)
        gold = set(ctx.question.supporting_docs) if ctx.question else set()
        yield _features_step(ordered, features, scored, gold, meta)
        yield _former_attention(scored.attention, ordered, gold)
        reranked = tuple(replace(ordered[i], rank=n, score=round(scored.probs[i], 4))
                         for n, i in enumerate(scored.rerank, start=1))
        yield RetrievalStep(iteration=ITERATION, title="Re-ranked by the R2-Former's relevance head",
                            query=question, retriever="r2ag", hits=reranked)
        ctx.check()
        if model is None or not meta.injects:
            yield why_not_injected(model, ctx.tools.backend if ctx.tools.chat is not None else "")
            yield from read_reranked(question, ctx, reranked)
            return
        # §2.4 / §3.7-11: project, inject into the retrieval-aware prompt, generate
        yield from generate(question, ctx, params, model, former, scored, ordered, reranked, gold)


def _checkpoint(ctx: RunContext, params: R2agParams, model: InjectionModel | None) -> tuple[Any, CheckpointMeta]:
    from engine.methods.r2ag.checkpoint import cached_checkpoint

    path = find_checkpoint(ctx.retrieval.settings.r2ag, model.llm_id if model else "", params.checkpoint)
    former, meta = cached_checkpoint(Path(path))
    if model is not None:
        meta.require(ctx.retrieval.embedder.id, llm=model.llm_id, hidden_size=model.hidden_size)
    return former, meta


def _score(former: Any, features: ListFeatures) -> Scored:
    import torch

    from engine.methods.r2ag.former import score

    out = score(former, torch.from_numpy(features.matrix()))
    probs = tuple(float(p) for p in torch.sigmoid(out.logits[0]))
    rerank = tuple(sorted(range(len(probs)), key=lambda i: (-probs[i], i)))
    return Scored(probs=probs, rerank=rerank, attention=out.attention[0, -1].numpy(), hidden=out.hidden)


def _doc_label(n: int, hit: Hit) -> str:
    return f"{n} · {hit.title or hit.doc_id}"


def _features_step(ordered: Sequence[Hit], features: ListFeatures, scored: Scored, gold: set[str],
                   meta: CheckpointMeta) -> FeaturesStep:
    rerank = {i: n for n, i in enumerate(scored.rerank, start=1)}
    rows = tuple(
        (n + 1, hit.rank, rerank[n], hit.doc_id, hit.title, round(features.r[n], 4), round(features.gamma[n], 4),
         round(features.zeta[n], 4), round(scored.probs[n], 4)) + ((hit.doc_id in gold,) if gold else ())
        for n, hit in enumerate(ordered)
    )
    columns = ("list rank", "retriever rank", "R2-Former rank", "doc", "title", "r", "γ", "ζ", "QDM p") + \
        (("gold",) if gold else ())
    return FeaturesStep(
        iteration=ITERATION, title="Retrieval features and R2-Former relevance", columns=columns, rows=rows,
        note=("r = cosine(query, chunk), γ = cosine to the softmax(r)-weighted mix of the chunks ranked above "
              "(γ₁ = 1), ζ = mean cosine to the neighbouring ranks; vectors from the retriever's encoder "
              f"({meta.embedder}); list order: {'by r' if meta.list_order == 'r' else 'the retriever rank'}. "
              "QDM p = the R2-Former's relevance probability (checkpoint trained on "
              f"'{meta.pack or '?'}', objective {meta.objective})."),
    )


def _former_attention(attention: Any, ordered: Sequence[Hit], gold: set[str]) -> Step:
    from engine.methods.r2ag.views import former_attention_step

    labels = [_doc_label(n, h) for n, h in enumerate(ordered, start=1)]
    highlight = [label for label, h in zip(labels, ordered) if h.doc_id in gold]
    return former_attention_step(attention, labels, highlight, ITERATION)


