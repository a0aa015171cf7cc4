"""Train the R2-Former (spec §2.5-2.6): relevance (QDM) alone on CPU, or jointly with the LM loss of a frozen LLM.

Labels come from the pack's `supporting_docs` (spec §7.11): a candidate chunk is relevant when its
document supports the question. Questions are split by a content hash into train and held-out, and
MAP is reported on the held-out part for three orders: the retriever's, r's, and the R2-Former's.
"""

from __future__ import annotations

import hashlib
import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import torch
from torch import nn

from engine.errors import RagscopeError
from engine.evaluation.metrics import average_precision
from engine.knowledge.records import Pack, Question
from engine.methods.r2ag.checkpoint import CheckpointMeta, checkpoint_path, llm_identity, save_checkpoint
from engine.methods.r2ag.features import FEATURE_ORDER, ranked_features
from engine.methods.r2ag.former import R2Former, R2FormerConfig, pad_batch, score
from engine.retrieval.suite import Retrieval
from engine.trace import Hit

Progress = Callable[[int, int, float], None]  # (step, total steps, loss)


@dataclass(frozen=True)
class TrainConfig:
    """lr 2e-4 and Adam [P]; seed 42 [C]. The epoch count is ours: 5-fold cross-validation on the demo
    and HotpotQA packs showed longer relevance-only training fitting the training lists, not new ones.

    The joint stage's bounds are ours too, set for a CPU: each step runs the LLM forward and backward,
    so `lm_max_steps` caps it (the paper's 2 epochs are the upper bound), and training prompts are cut to
    `lm_prompt_tokens` by cutting the longest documents (never a slot); inference reads whole documents.
    Measured on SmolLM2-135M (demo pack, k=5, 12 held-out lists, whole documents): answer loss 1.51 with
    the plain prompt, 1.35 with the vectors trained this way: what they learn carries over to whole ones.
    """

    k: int = 10
    retriever: str = "hybrid"
    list_order: str = "retriever"  # "retriever" (its own rank) or "r" (the paper: sorted by cosine)
    epochs: int = 40
    lm_epochs: int = 2
    batch_size: int = 8
    lm_batch_size: int = 2         # [C] 2 per device (× 2 accumulation there; here more, smaller steps)
    lm_max_steps: int = 32
    lm_prompt_tokens: int = 384
    lr: float = 2e-4
    heldout: float = 0.25
    seed: int = 42


@dataclass(frozen=True)
class Example:
    """One candidate list in r order with its per-document labels."""

    question_id: str
    question: str
    answer: str
    supporting: tuple[str, ...]
    hits: tuple[Hit, ...]
    retriever_order: tuple[str, ...]  # doc ids in the retriever's own rank order
    features: np.ndarray = field(compare=False)  # (n, 3)
    labels: tuple[float, ...] = ()


@dataclass(frozen=True)
class TrainResult:
    path: Path
    meta: CheckpointMeta
    seconds: float


def is_heldout(question_id: str, fraction: float) -> bool:
    """Stable split by content hash (never the built-in hash())."""
    return int(hashlib.sha256(question_id.encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < fraction


def build_examples(pack: Pack, retrieval: Retrieval, config: TrainConfig) -> list[Example]:
    questions = [q for q in pack.questions if q.supporting_docs]
    if not questions:
        raise RagscopeError(f"pack {pack.info.name!r} has no questions with supporting_docs; R2-Former training "
                            "needs them as relevance labels (questions.jsonl)")
    retrieval.ensure_index()
    examples = []
    for q in questions:
        hits = retrieval.search(q.question, k=config.k, retriever=config.retriever, provenance="question")
        if not hits:
            continue
        ordered, features = ranked_features(retrieval, q.question, hits, config.list_order == "r")
        examples.append(Example(
            question_id=q.id, question=q.question, answer=target(q),
            supporting=tuple(q.supporting_docs), hits=ordered,
            retriever_order=tuple(h.doc_id for h in sorted(hits, key=lambda h: h.rank)),
            features=features.matrix(), labels=tuple(float(h.doc_id in q.supporting_docs) for h in ordered)))
    return examples


def split(examples: Sequence[Example], fraction: float) -> tuple[list[Example], list[Example]]:
    heldout = [e for e in examples if is_heldout(e.question_id, fraction)]
    train = [e for e in examples if not is_heldout(e.question_id, fraction)]
    return (train or list(examples)), heldout


def qdm_loss(logits: torch.Tensor, labels: torch.Tensor, pad: torch.Tensor) -> torch.Tensor:
    """BCE-with-logits, mean over real documents (spec §2.5: the code's mean, padding left out)."""
    losses = nn.functional.binary_cross_entropy_with_logits(logits, labels, reduction="none")
    keep = (~pad).float()
    return (losses * keep).sum() / keep.sum().clamp(min=1.0)


def _batch(examples: Sequence[Example], k: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    features, pad = pad_batch([torch.from_numpy(e.features) for e in examples], k)
    labels = torch.zeros(len(examples), k)
    for b, e in enumerate(examples):
        labels[b, :len(e.labels)] = torch.tensor(e.labels[:k])
    return features, labels, pad


def train_relevance(examples: Sequence[Example], config: TrainConfig, progress: Progress | None = None) -> R2Former:
    """QDM loss only (no LLM): the R2-Former becomes a listwise re-ranker over r, γ, ζ (spec §6)."""
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    model = R2Former(R2FormerConfig(k=config.k))
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    order = list(examples)
    total, step = relevance_steps(len(order), config), 0
    model.train()
    for _ in range(config.epochs):
        rng.shuffle(order)
        for start in range(0, len(order), config.batch_size):
            features, labels, pad = _batch(order[start:start + config.batch_size], config.k)
            step = _update(optimiser, qdm_loss(model(features, pad).logits, labels, pad), step, total, progress)
    model.eval()
    return model


def relevance_steps(n: int, config: TrainConfig) -> int:
    return config.epochs * -(-n // config.batch_size)


def joint_steps(n: int, config: TrainConfig) -> int:
    return min(config.lm_max_steps, config.lm_epochs * -(-n // config.lm_batch_size))


def target(question: Question) -> str:
    """The answer the LM loss teaches: every item of a set question (each is a gold answer), else the first."""
    return ", ".join(question.answers) if question.type == "set" else (question.answers[0] if question.answers else "")


def train_joint(examples: Sequence[Example], chat: Any, config: TrainConfig, progress: Progress | None = None,
                start: R2Former | None = None, share_prefix: bool = True) -> R2Former:
    """L = L_QDM + L_LM with the LLM frozen (spec §2.5 'R2AG'); gradients flow through the LLM into the
    projection. [decide 9] the LM loss covers the answer only. `start` is a relevance-trained R2-Former
    to begin from (its QDM part; the projection is new); the LLM side is prepared once (`lm_inputs`)."""
    from engine.methods.r2ag.lm_inputs import LmSource, batch_loss, prepare, sdpa_attention
    from engine.methods.r2ag.prompt import PromptDoc

    llm, tokenizer = chat.model_obj, chat.tokenizer
    torch.manual_seed(config.seed)
    rng = random.Random(config.seed)
    model = R2Former(R2FormerConfig(k=config.k, hidden_size=int(llm.get_input_embeddings().weight.shape[1])))
    if start is not None:
        model.load_state_dict(start.state_dict(), strict=False)  # all but the projection
    _embedding_scale(model, llm)
    for p in llm.parameters():
        p.requires_grad_(False)
    optimiser = torch.optim.Adam(model.parameters(), lr=config.lr)
    usable = [e for e in examples if e.answer]
    total = joint_steps(len(usable), config)
    sources = [LmSource(e.question, tuple(PromptDoc(h.title, h.text) for h in e.hits), e.answer) for e in usable]
    model.train()
    with chat.exclusive(), sdpa_attention(llm):
        inputs = prepare(llm, tokenizer, sources, config.lm_prompt_tokens, share_prefix)
        for step, batch in enumerate(_batches(len(usable), config, rng)):
            features, qdm_labels, pad = _batch([usable[i] for i in batch], config.k)
            out = model(features, pad)
            vectors = model.project(out.hidden)                                   # (B, k, width)
            loss = qdm_loss(out.logits, qdm_labels, pad) + batch_loss(llm, inputs, batch, list(vectors))
            _update(optimiser, loss, step, total, progress)
    model.eval()
    return model


def _batches(n: int, config: TrainConfig, rng: random.Random) -> list[list[int]]:
    """Shuffled batches of list indices, epoch after epoch, at most `joint_steps` of them."""
    batches: list[list[int]] = []
    for _ in range(config.lm_epochs):
        order = list(range(n))
        rng.shuffle(order)
        batches += [order[i:i + config.lm_batch_size] for i in range(0, n, config.lm_batch_size)]
    return batches[:joint_steps(n, config)]


def _embedding_scale(model: R2Former, llm: Any) -> None:
    """[ours] Start the projection at the scale of the LLM's token embeddings. PyTorch's default init
    writes vectors several times louder than any token (4x on SmolLM2), which the paper's long training
    corrects; a CPU run's few steps cannot, so an untrained vector starts no louder than a token.
    The R2-Former's states are layer-normed (unit variance per dimension)."""
    table = llm.get_input_embeddings().weight
    with torch.no_grad():
        model.proj.weight.normal_(0.0, float(table.float().std()) / model.config.d_model ** 0.5)
        model.proj.bias.zero_()


def _update(optimiser: torch.optim.Optimizer, loss: torch.Tensor, step: int, total: int,
            progress: Progress | None) -> int:
    """One optimiser step; reports progress and returns the new step count."""
    optimiser.zero_grad()
    loss.backward()
    optimiser.step()
    if progress:
        progress(step + 1, total, float(loss.detach()))
    return step + 1


def mean_ap(examples: Sequence[Example], ranking: Callable[[Example], Sequence[str]]) -> float:
    values = [average_precision(ranking(e), e.supporting) for e in examples]
    kept = [v for v in values if v is not None]
    return round(sum(kept) / len(kept), 4) if kept else 0.0


def by_r(e: Example) -> tuple[str, ...]:
    """The list sorted by cosine r (the paper's order; the retriever's own for the dense retriever)."""
    return tuple(e.hits[i].doc_id for i in np.argsort(-e.features[:, 0], kind="stable"))


def former_order(model: R2Former) -> Callable[[Example], tuple[str, ...]]:
    def rank(e: Example) -> tuple[str, ...]:
        probs = torch.sigmoid(score(model, torch.from_numpy(e.features)).logits[0]).tolist()
        return tuple(e.hits[i].doc_id for i in sorted(range(len(probs)), key=lambda i: (-probs[i], i)))

    return rank


def map_report(model: R2Former, train: Sequence[Example], heldout: Sequence[Example]) -> dict[str, float]:
    """MAP of the three orders on the held-out lists (and on the training lists, for reference)."""
    report: dict[str, float] = {"train_lists": float(len(train)), "heldout_lists": float(len(heldout))}
    for name, part in (("heldout", heldout), ("train", train)):
        if part:
            report[f"{name}_map_retriever"] = mean_ap(part, lambda e: e.retriever_order)
            report[f"{name}_map_r"] = mean_ap(part, by_r)
            report[f"{name}_map_r2former"] = mean_ap(part, former_order(model))
    return report


def train_r2ag(pack: Pack, retrieval: Retrieval, config: TrainConfig, chat: Any = None, out: Path | None = None,
               progress: Progress | None = None) -> TrainResult:
    """Build lists, train (relevance-only without `chat`; with an HF chat model, relevance first, then
    jointly), save with metadata."""
    started = time.perf_counter()
    train, heldout = split(build_examples(pack, retrieval, config), config.heldout)
    first = relevance_steps(len(train), config)
    total = first + (joint_steps(sum(1 for e in train if e.answer), config) if chat is not None else 0)
    relevance = train_relevance(train, config, _counted(progress, 0, total))
    if chat is None:
        model, llm, width = relevance, "", 0
    else:
        model = train_joint(train, chat, config, _counted(progress, first, total), start=relevance)
        llm = llm_identity(chat.config.path, chat.model_obj.config)
        width = model.config.hidden_size
    meta = CheckpointMeta(embedder=retrieval.embedder.id, k=config.k, config=model.config.to_dict(),
                          feature_order=FEATURE_ORDER, list_order=config.list_order, llm=llm, hidden_size=width,
                          objective="qdm+lm" if chat is not None else "qdm", pack=pack.info.name,
                          metrics=map_report(model, train, heldout))
    path = save_checkpoint(out or checkpoint_path(retrieval.settings.r2ag, llm), model, meta)
    return TrainResult(path=path, meta=meta, seconds=round(time.perf_counter() - started, 2))


def _counted(progress: Progress | None, before: int, total: int) -> Progress | None:
    """A stage's progress as part of the whole run's step count, so one bar covers both stages."""
    if progress is None:
        return None
    return lambda step, _stage_total, loss: progress(before + step, total, loss)
