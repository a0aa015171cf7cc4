"""R2AG: retrieval features → R2-Former → its vectors injected into the prompt before each document.

Spec: shared/methods/r2ag.md. One pass, so every step is iteration 1 (spec §3 note): retrieve,
features (r, γ, ζ), the R2-Former (re-ranking by its relevance head, its attention), then either
injected generation with a plain-RAG run over the same documents for comparison (HF backend and a
checkpoint trained for that model), or the reader over the re-ranked chunks, with a decision step
saying why nothing was injected. On both paths an output that only hands the prompt back (`answer`)
is a recoverable error step and the answer is "I don't know".
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

from engine.errors import BackendError
from engine.methods.base import Method, RunContext, register
from engine.methods.common import answer_step, distinct_docs, reading_steps
from engine.params import param
from engine.methods.r2ag.checkpoint import CheckpointMeta, find_checkpoint, llm_identity
from engine.methods.r2ag.features import ListFeatures, ranked_features
from engine.retrieval.suite import RETRIEVER_NAMES
from engine.tools.base import IDK
from engine.tools.llm_call import shorten
from engine.trace import (
    AnswerStep, DecisionStep, ErrorStep, FeaturesStep, Hit, LlmCallStep, RetrievalStep, Step,
)

ITERATION = 1
RERANK_ONLY = "R2AG — re-rank only, no injection"  # the run's label when nothing could be injected


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


@dataclass(frozen=True)
class _Model:
    """The HF model pieces injection needs (the twin's LLM side); None where the backend has none."""

    chat: Any
    llm_id: str
    hidden_size: int


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
        model = ctx.tools.twin(_hf_model, lambda: None)
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
            yield _why_not_injected(model, ctx.tools.backend if ctx.tools.chat is not None else "")
            yield from _read_reranked(question, ctx, reranked)
            return
        # §2.4 / §3.7-11: project, inject into the retrieval-aware prompt, generate
        yield from _generate(question, ctx, params, model, former, scored, ordered, reranked, gold)


@dataclass(frozen=True)
class _Scored:
    probs: tuple[float, ...]     # QDM probability per document, list order
    rerank: tuple[int, ...]      # list indices sorted by probability
    attention: Any               # (heads, n, n) numpy
    hidden: Any                  # (1, n, d) torch


def _hf_model(chat: Any) -> _Model | None:
    """Injection needs the model's embedding table: only the HF backend has one."""
    if not all(hasattr(chat, name) for name in ("model_obj", "tokenizer", "exclusive", "config")):
        return None
    width = int(chat.model_obj.get_input_embeddings().weight.shape[1])
    return _Model(chat=chat, llm_id=llm_identity(chat.config.path, chat.model_obj.config), hidden_size=width)


def _checkpoint(ctx: RunContext, params: R2agParams, model: _Model | None) -> tuple[Any, CheckpointMeta]:
    from engine.methods.r2ag.checkpoint import cached_checkpoint

    path = find_checkpoint(ctx.retrieval.settings.home, model.llm_id if model else "", params.checkpoint)
    former, meta = cached_checkpoint(Path(path))
    if model is not None:
        meta.require(ctx.retrieval.embedder.id, llm=model.llm_id, hidden_size=model.hidden_size)
    return former, meta


def _score(former: Any, features: ListFeatures) -> _Scored:
    import torch

    from engine.methods.r2ag.former import score

    out = score(former, torch.from_numpy(features.matrix()))
    probs = tuple(float(p) for p in torch.sigmoid(out.logits[0]))
    rerank = tuple(sorted(range(len(probs)), key=lambda i: (-probs[i], i)))
    return _Scored(probs=probs, rerank=rerank, attention=out.attention[0, -1].numpy(), hidden=out.hidden)


def _doc_label(n: int, hit: Hit) -> str:
    return f"{n} · {hit.title or hit.doc_id}"


def _features_step(ordered: Sequence[Hit], features: ListFeatures, scored: _Scored, gold: set[str],
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


def _why_not_injected(model: _Model | None, remote_backend: str) -> DecisionStep:
    if model is None and not remote_backend:
        detail = ("no embeddings were injected because no language model is loaded (R2AG injects vectors into "
                  "a local HF model's inputs_embeds); the offline reader answers from the R2-Former's "
                  "re-ranked chunks")
    elif model is None:
        detail = (f"no embeddings were injected: the {remote_backend} backend takes text only, not inputs_embeds "
                  "(load a local model with the hf backend); the LLM reader answers from the re-ranked chunks")
    else:
        detail = (f"no embeddings were injected: the R2-Former checkpoint has no projection trained for "
                  f"{model.llm_id} (train one with `python -m engine train-r2ag --pack DIR --backend hf "
                  "--model PATH`); the LLM reader answers from the re-ranked chunks instead")
    return DecisionStep(iteration=ITERATION, title=RERANK_ONLY, action="no_injection", detail=detail)


def _read_reranked(question: str, ctx: RunContext, reranked: Sequence[Hit]) -> Iterator[Step]:
    """The reader over the re-ranked chunks; a reading that only hands back its prompt is no answer."""
    from engine.methods.r2ag.answer import instructions_of
    from engine.tools.short_answer import echo_of

    reading = ctx.tools.reader.read(question, reranked)
    yield from reading_steps(reading, iteration=ITERATION)
    answer = answer_step(reading, reranked, ctx.tools, iteration=ITERATION)
    calls = [s for s in reading.steps if isinstance(s, LlmCallStep)]
    documents = [h.text for h in reranked]
    instructions = instructions_of(calls[-1].prompt, question, documents) if calls else ""
    echoed = "" if reading.refused else echo_of(reading.answer, question, documents, instructions)
    why = " (refused: not enough evidence)" if reading.refused else ""
    if echoed:
        yield ErrorStep(iteration=ITERATION, title="R2AG answer refused",
                        message=f"the reader echoed {echoed} instead of answering: {shorten(reading.answer)}; "
                                "answered I don't know")
        answer, why = replace(answer, text=IDK, refused=True, citations=(), confidence=0.0), f" (refused: {echoed})"
    yield replace(answer, title=RERANK_ONLY + why)


def _generate(question: str, ctx: RunContext, params: R2agParams, model: _Model, former: Any, scored: _Scored,
              ordered: Sequence[Hit], reranked: Sequence[Hit], gold: set[str]) -> Iterator[Step]:
    from engine.methods.r2ag.answer import parse_output
    from engine.methods.r2ag.prompt import PromptDoc, document_text, prompt_pieces, tokenize_prompt

    chat, tokenizer = model.chat, model.chat.tokenizer
    docs = [PromptDoc(h.title, h.text) for h in ordered]
    highlight = tuple(f"doc {n}" for n, h in enumerate(ordered, start=1) if h.doc_id in gold)
    runs = [("R2AG", True)] + ([("plain RAG", False)] if params.compare_plain else [])
    parsed = None
    for group, slots in runs:
        pieces = prompt_pieces(question, docs, slots)
        prompt = tokenize_prompt(tokenizer, pieces, params.max_prompt_tokens)
        if slots and len(prompt.slots) != len(docs):  # spec §3.8: one slot per document, none lost
            raise BackendError(f"the R2AG prompt kept {len(prompt.slots)} slots for {len(docs)} documents")
        generation = _decode(chat, former, scored, prompt, params, inject=slots)
        yield LlmCallStep(iteration=ITERATION, title=f"{group} generation", role=group.lower(), prompt=prompt.text,
                          output=generation.text, tokens_in=len(prompt.ids), tokens_out=len(generation.tokens),
                          latency_ms=generation.latency_ms, backend=f"{chat.backend}: {chat.model}")
        if slots:  # the answer is R2AG's; the plain run is shown for comparison only
            instructions = "".join(p.text for p in pieces if p.kind == "other")
            parsed = parse_output(generation.text, question, instructions, [document_text(d) for d in docs])
            if parsed.problem:
                yield ErrorStep(iteration=ITERATION, title="R2AG answer refused",
                                message=f"{parsed.problem}: {shorten(generation.text)}; answered I don't know")
        if prompt.cut_tokens:
            yield DecisionStep(iteration=ITERATION, action="truncate",
                               detail=f"{prompt.cut_tokens} document tokens cut to fit {params.max_prompt_tokens}; "
                                      "every placeholder slot was kept")
        if generation.prompt_last is not None and generation.per_token is not None:
            from engine.methods.r2ag.views import Generated, llm_attention_steps

            shown = tokenizer.batch_decode([[t] for t in prompt.ids])  # one call, not one per token
            yield from llm_attention_steps(generation.prompt_last, Generated(generation.per_token, generation.tokens,
                                           generation.pieces), prompt.segments, shown, group, highlight, ITERATION)
        ctx.check()
    answer = parsed.answer if parsed else ""
    refused = not answer or answer.lower().startswith(IDK.lower())
    yield AnswerStep(iteration=ITERATION, title="Answer (R2AG)" + (" (refused)" if refused else ""),
                     text=IDK if refused else answer, refused=refused, backend=chat.backend, model=chat.model,
                     evidence=distinct_docs(reranked))


def _decode(chat: Any, former: Any, scored: _Scored, prompt: Any, params: R2agParams, inject: bool) -> Any:
    import torch

    from engine.methods.r2ag.injection import greedy_decode, prompt_embeddings

    with chat.exclusive(), torch.no_grad():
        vectors = former.project(scored.hidden)[0] if inject else None  # (n, hidden)
        embeds = prompt_embeddings(chat.model_obj, prompt, vectors)
        return greedy_decode(chat.model_obj, chat.tokenizer, embeds, params.max_new_tokens, params.attention)
