"""RuleRAG-FT (spec §2 "Rule-guided fine-tuning"): both sides of the paper's fine-tuning, the query encoder
(`train_query_encoder`, `python -m engine train-retriever`) and a LoRA adapter for the generator (`main`,
`scripts/finetune_generator_lora.py`).

Retriever side (RGFT-retriever): train the query encoder on q ∘ r → oracle chunks.

q ∘ r uses the bracketed rule form, as RuleRAG's retrieval does by default (`rule_query`).

Pairs: one per (question, rule) for every pack question with supporting documents — the gold
`rule_ids` when the question has them, else the best `match_rules` hit, else the question alone
[decide: the paper only builds pairs for rule queries; our packs are small, so every question
counts, rule questions first]. Positives are the chunks of the supporting documents (the spec's
oracle set `D_o`); negatives are the other documents of the batch plus one BM25 hard negative per
pair [decide].

Only the query side learns: document vectors come from the frozen base encoder exactly as the
Chroma index stores them, so the index stays valid (spec: "the document index never changes").
Loss per positive d+: -log(e^{s+/τ} / (e^{s+/τ} + Σ_{d- ∈ B \\ D_o} e^{s-/τ})), averaged. The paper
uses τ = 0.01 with DPR inner products; MiniLM vectors are normalised (cosine), so [decide] τ = 0.05,
the usual scale 20 of MultipleNegativesRankingLoss. lr 5e-5 (paper 1e-5 on thousands of pairs; ours
are a few dozen), batch 16, 8 epochs, capped at 60 steps.

Generator side (RGFT-generator, spec §4 table): LoRA-tune a causal LM on rule prompts.

Each training example is the paper's five-block prompt (Instruct, Retrieved documents, Rules, Query,
Answer — `engine.methods.rulerag.llm.build_rule_prompt`, the same text RuleRAG sends at inference)
for one pack question with gold `rule_ids`, with the gold answer plus a period as the target. The
documents come from RuleRAG's rule-guided retrieval (one search per rule with question ∘ rule in
the bracketed form RuleRAG uses by default, merged by `merge_hits`), by default with the fine-tuned
`dense-ft` retriever as the paper does (train it first: `python -m engine train-retriever --pack DIR`). The
loss covers the answer tokens only.

Defaults are the paper's LLaMA2-7B row: LoRA r 8, alpha 32, dropout 0.05, lr 3e-4, 5 warm-up steps,
batch 8; [decide] LoRA on q/k/v/o projections, AdamW, linear warm-up then constant, sequence cap
2048 tokens (paper: 5120). On CUDA the base is loaded in 4-bit NF4 (QLoRA-style, as the paper);
on CPU in float32 without quantization (only sensible for tiny test models).

    python scripts/finetune_generator_lora.py --model ~/models/Llama-2-7b-hf --pack assets/packs/demo \\
        --out ~/.ragscope/lora/demo-llama2 --steps 150

Writes the adapter (`adapter_config.json`, `adapter_model.safetensors`) and `training.json`
(config, examples, per-step loss) to --out. Load it with `peft.PeftModel.from_pretrained(base, OUT)`, or
run RuleRAG with it: `python -m engine ask … --backend hf --model MODEL -p adapter=OUT`.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import logging
import math
import random
import re
import shutil
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import BackendError, PackError, RagscopeError
from engine.files import write_text_atomic
from engine.graph.kg import KnowledgeGraph
from engine.hf_imports import TRANSFORMERS_LOCK
from engine.knowledge.records import Pack, Question
from engine.retrieval.index import embedding_text
from engine.retrieval.query_encoder import MANIFEST, QueryEncoderManifest, finetuned_dir
from engine.retrieval.suite import Retrieval, pack_key
from engine.rules.matching import abstract_question, match_rules
from engine.rules.text import rule_query
from engine.settings import Settings
from engine.untraced import untraced

log = logging.getLogger(__name__)

StepProgress = Callable[[int, int, float], None]  # (step, total steps, loss)


@dataclass(frozen=True)
class TrainingPair:
    """One RGFT example: the query q ∘ r, the oracle chunks and one BM25 hard negative."""

    question_id: str
    query: str
    rule_id: str  # "" when no rule was found for the question
    positives: tuple[str, ...]  # chunk ids of the supporting documents
    supporting_docs: tuple[str, ...]
    hard_negative: str = ""  # chunk id, "" when BM25 found none outside the positives


@dataclass(frozen=True)
class FinetuneConfig:
    epochs: int = 8
    max_steps: int = 60  # cap: the demo pack trains in about a minute on two cores
    train_layers: int = 3  # [decide] only the top transformer layers learn: half the backward cost on CPU
    batch_size: int = 16
    lr: float = 5e-5
    temperature: float = 0.05
    heldout: float = 0.25  # share of questions (per question type) kept out of training
    seed: int = 0


@dataclass(frozen=True)
class FinetuneResult:
    manifest: QueryEncoderManifest
    folder: str
    losses: tuple[float, ...] = field(default=())


# ---- pairs --------------------------------------------------------------------------------------------


def build_pairs(pack: Pack, retrieval: Retrieval) -> tuple[TrainingPair, ...]:
    """Every question with supporting documents in the pack → one pair per rule (rule questions first)."""
    kg = KnowledgeGraph.from_pack(pack)
    rules = {r.id: r for r in pack.rules}
    chunks_of: dict[str, list[str]] = {}
    for chunk in retrieval.chunks:
        chunks_of.setdefault(chunk.doc_id, []).append(chunk.id)
    bm25 = retrieval.retriever("bm25", k=10)
    if pack.rules and pack.questions:  # one batched encode instead of one per question inside match_rules
        retrieval.embedder.encode_queries([abstract_question(q.question, kg) for q in pack.questions])
    pairs = []
    for question in sorted(pack.questions, key=lambda q: (q.type != "rule", q.id)):
        docs = tuple(d for d in question.supporting_docs if d in chunks_of)
        if not docs:
            continue
        positives = tuple(c for d in docs for c in chunks_of[d])
        for rule_id, sentence in _question_rules(question, rules, pack, kg, retrieval):
            query = f"{question.question} {sentence}".strip()
            with untraced():
                pool = bm25.invoke(query)
            negative = next((d.metadata["chunk_id"] for d in pool if d.metadata["chunk_id"] not in positives), "")
            pairs.append(TrainingPair(question.id, query, rule_id, positives, docs, negative))
    return tuple(pairs)


def _question_rules(question: Question, rules: dict, pack: Pack, kg: KnowledgeGraph,
                    retrieval: Retrieval) -> list[tuple[str, str]]:
    gold = [(rid, rule_query(rules[rid])) for rid in question.extra.get("rule_ids", ())
            if rid in rules] if isinstance(question.extra.get("rule_ids"), (list, tuple)) else []
    if gold:
        return gold
    if pack.rules:
        matched = match_rules(question.question, pack.rules, kg, retrieval.embedder).matched
        if matched:
            return [(matched[0].rule.id, rule_query(matched[0].rule))]
    return [("", "")]


def split_pairs(pairs: Sequence[TrainingPair], heldout: float,
                types: dict[str, str]) -> tuple[tuple[TrainingPair, ...], tuple[TrainingPair, ...]]:
    """Hold out a share of *questions* per type, ordered by a content hash (all pairs of one question together)."""
    by_type: dict[str, list[str]] = {}
    for qid in dict.fromkeys(p.question_id for p in pairs):
        by_type.setdefault(types.get(qid, ""), []).append(qid)
    held: set[str] = set()
    for qids in by_type.values():
        ordered = sorted(qids, key=lambda q: hashlib.sha256(q.encode()).hexdigest())
        held.update(ordered[: round(len(ordered) * heldout)])
    train = tuple(p for p in pairs if p.question_id not in held)
    return train, tuple(p for p in pairs if p.question_id in held)


# ---- evaluation ---------------------------------------------------------------------------------------


def supporting_share_at(query_vectors: np.ndarray, doc_vectors: np.ndarray, chunk_docs: Sequence[str],
              pairs: Sequence[TrainingPair], k: int) -> float:
    """Mean share of each pair's supporting documents found among its top-k chunks (dot = cosine): a partial
    credit, unlike engine.evaluation.metrics.recall_at, which asks for every supporting document."""
    if not pairs:
        return 0.0
    scores = query_vectors @ doc_vectors.T  # (queries, chunks)
    total = 0.0
    for row, pair in zip(scores, pairs):
        top = np.argsort(-row, kind="stable")[:k]
        found = {chunk_docs[i] for i in top}
        total += len(found & set(pair.supporting_docs)) / len(pair.supporting_docs)
    return round(total / len(pairs), 4)


# ---- training -----------------------------------------------------------------------------------------


def train_query_encoder(pack: Pack, settings: Settings, config: FinetuneConfig = FinetuneConfig(),
                        progress: StepProgress | None = None, retrieval: Retrieval | None = None) -> FinetuneResult:
    """Fine-tune a copy of the base encoder on the pack's pairs; save it with a manifest; return metrics."""
    import torch

    started = time.perf_counter()
    retrieval = retrieval or Retrieval(pack, settings)
    pairs = build_pairs(pack, retrieval)
    train, heldout = split_pairs(pairs, config.heldout, {q.id: q.type for q in pack.questions})
    if not train:
        raise RagscopeError(f"pack {pack.info.name!r} has no questions with supporting_docs to train on; "
                            "add questions.jsonl entries with supporting_docs")
    base = retrieval.embedder
    chunks = retrieval.chunks
    row = {c.id: i for i, c in enumerate(chunks)}
    chunk_docs = [c.doc_id for c in chunks]
    doc_vectors = base.encode([embedding_text(c) for c in chunks])  # frozen side: what the index holds
    before = _recalls(base.encode([p.query for p in heldout]), doc_vectors, chunk_docs, heldout)

    random.seed(config.seed)
    torch.manual_seed(config.seed)
    with TRANSFORMERS_LOCK:  # the app's warm-up or a model load may be importing transformers meanwhile
        from sentence_transformers import SentenceTransformer

        model = SentenceTransformer(str(base.path), device="cpu", local_files_only=True)
    model.train()
    optimizer = torch.optim.AdamW(_trainable(model, config.train_layers), lr=config.lr)
    documents = torch.from_numpy(doc_vectors)  # (chunks, d), no grad
    steps_per_epoch = -(-len(train) // config.batch_size)
    total = min(config.max_steps, config.epochs * steps_per_epoch)
    order = random.Random(config.seed)
    losses: list[float] = []
    while len(losses) < total:
        shuffled = list(train)
        order.shuffle(shuffled)
        for start in range(0, len(shuffled), config.batch_size):
            if len(losses) >= total:
                break
            batch = shuffled[start:start + config.batch_size]
            loss = _contrastive_loss(model, batch, documents, row, config.temperature)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.detach()))
            if progress:
                progress(len(losses), total, losses[-1])
    model.eval()

    after = _recalls(_encode(model, [p.query for p in heldout]), doc_vectors, chunk_docs, heldout)
    folder = finetuned_dir(settings, pack_key(pack), base.id)
    root = settings.finetuned.resolve()
    if folder.resolve().parent != root:  # names are validated at load; never delete outside our own folder
        raise RagscopeError(f"refusing to replace {folder}: it is not directly inside {root}")
    if folder.exists():
        shutil.rmtree(folder)
    model.save(str(folder))
    metrics = {**{f"{k}_before": v for k, v in before.items()}, **{f"{k}_after": v for k, v in after.items()},
               "loss_first": round(losses[0], 4), "loss_last": round(losses[-1], 4)}
    manifest = QueryEncoderManifest(
        pack_name=pack.info.name, pack_key=pack_key(pack), pack_fingerprint=pack.fingerprint,
        base_embedder=base.id, pairs=len(pairs), train_pairs=len(train), heldout_pairs=len(heldout),
        epochs=-(-len(losses) // steps_per_epoch), steps=len(losses),
        seconds=round(time.perf_counter() - started, 1), metrics=metrics, config=asdict(config))
    write_text_atomic(folder / MANIFEST, manifest.to_json())
    log.info("saved query encoder to %s: %s", folder, metrics)
    return FinetuneResult(manifest, str(folder), tuple(losses))


def _contrastive_loss(model: Any, batch: Sequence[TrainingPair], documents: Any, row: dict[str, int],
                      temperature: float) -> Any:
    """In-batch InfoNCE with several positives per query; B = every positive and hard negative of the batch."""
    import torch

    candidates = list(dict.fromkeys(c for p in batch for c in (*p.positives, p.hard_negative) if c))
    queries = _forward(model, [p.query for p in batch])  # (b, d), normalised
    logits = queries @ documents[[row[c] for c in candidates]].T / temperature  # (b, c)
    positive = torch.tensor([[c in p.positives for c in candidates] for p in batch])  # (b, c)
    negatives = torch.logsumexp(logits.masked_fill(positive, float("-inf")), dim=1, keepdim=True)  # (b, 1)
    per_positive = torch.logaddexp(logits, negatives) - logits  # -log softmax of d+ against B \ D_o
    return per_positive[positive].mean()


def _trainable(model: Any, top: int) -> list:
    """Freeze embeddings and all but the top `top` encoder layers; return the parameters left to train."""
    layer = re.compile(r"encoder\.layer\.(\d+)\.")
    numbered = [(int(m[1]) if (m := layer.search(n)) else None, p) for n, p in model.named_parameters()]
    depth = 1 + max((i for i, _ in numbered if i is not None), default=-1)
    trainable = []
    for index, parameter in numbered:
        keep = index is not None and index >= depth - top
        parameter.requires_grad_(keep)
        if keep:
            trainable.append(parameter)
    if not trainable:
        raise RagscopeError(f"train_layers={top} leaves nothing to train; the encoder has {depth} layers")
    return trainable


def _forward(model: Any, texts: list[str]) -> Any:
    import torch.nn.functional as F

    features = model.preprocess(texts)
    return F.normalize(model(dict(features))["sentence_embedding"], dim=-1)


def _encode(model: Any, texts: list[str]) -> np.ndarray:
    if not texts:
        return np.zeros((0, model.get_embedding_dimension()), dtype=np.float32)
    return model.encode(texts, normalize_embeddings=True, convert_to_numpy=True,
                        show_progress_bar=False).astype(np.float32)


def _recalls(query_vectors: np.ndarray, doc_vectors: np.ndarray, chunk_docs: Sequence[str],
             pairs: Sequence[TrainingPair]) -> dict[str, float]:
    return {f"recall@{k}": supporting_share_at(query_vectors, doc_vectors, chunk_docs, pairs, k) for k in (5, 10)}


def with_config(config: FinetuneConfig, **changes: Any) -> FinetuneConfig:
    """The config with the given fields replaced (CLI flags left at None keep their defaults)."""
    return replace(config, **{k: v for k, v in changes.items() if v is not None})


# ---- generator side: a LoRA adapter ---------------------------------------------------------------------

TARGET_MODULES = ("q_proj", "k_proj", "v_proj", "o_proj")


@dataclass(frozen=True)
class LoraTrainConfig:
    steps: int = 100
    rank: int = 8
    alpha: int = 32
    dropout: float = 0.05
    lr: float = 3e-4
    warmup: int = 5
    batch_size: int = 8
    max_length: int = 2048
    retriever: str = "dense-ft"
    k: int = 10
    quantization: str = "auto"  # auto = nf4 on CUDA, none on CPU
    device: str = "auto"
    seed: int = 0


@dataclass(frozen=True)
class Example:
    question_id: str
    prompt: str
    answer: str


def build_examples(pack: Pack, retrieval: Retrieval, retriever: str, k: int) -> list[Example]:
    """One example per question with gold rules and answers: RuleRAG's retrieval, then its prompt."""
    from engine.methods.rulerag.llm import build_rule_prompt
    from engine.methods.rulerag.method import merge_hits
    from engine.rules.matching import ScoredRule
    from engine.rules.text import rule_query

    rules = {r.id: r for r in pack.rules}
    examples = []
    for question in pack.questions:
        gold = [rules[rid] for rid in question.extra.get("rule_ids", ()) or () if rid in rules]
        if not gold or not question.answers:
            continue
        scored = [ScoredRule(rule, 1.0, 1.0, True) for rule in gold]  # gold rules stand in for R_q
        per_rule = [(s, retrieval.search(f"{question.question} {rule_query(s.rule)}", k=k, retriever=retriever,
                                         provenance=f"rule {s.rule.id}")) for s in scored]
        prompt = build_rule_prompt(question.question, merge_hits(per_rule, k), scored)
        examples.append(Example(question.id, prompt, question.answers[0].strip().rstrip(".") + "."))
    return examples


def encode_example(tokenizer: Any, example: Example, max_length: int) -> tuple[list[int], list[int]]:
    """(input ids, labels): the prompt rendered as the HF backend renders it; labels -100 on the prompt."""
    chat = [{"role": "user", "content": example.prompt}]
    if getattr(tokenizer, "chat_template", None):
        text = tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
        special = False  # the template writes its own BOS
    else:
        text, special = f"user: {example.prompt}\n\nassistant:", True
    prompt_ids = tokenizer(text, add_special_tokens=special)["input_ids"]
    answer_ids = tokenizer(" " + example.answer, add_special_tokens=False)["input_ids"]
    if tokenizer.eos_token_id is not None:
        answer_ids = [*answer_ids, tokenizer.eos_token_id]
    prompt_ids = prompt_ids[-max(1, max_length - len(answer_ids)):]  # cut the prompt's start, keep the answer
    return [*prompt_ids, *answer_ids], [-100] * len(prompt_ids) + answer_ids


def load_lora_model(model_path: str, config: LoraTrainConfig) -> tuple[Any, Any, str]:
    """Tokenizer, LoRA-wrapped model and device; NF4 4-bit base on CUDA (QLoRA), float32 on CPU."""
    with TRANSFORMERS_LOCK:
        return _load_lora_model(model_path, config)


def _load_lora_model(model_path: str, config: LoraTrainConfig) -> tuple[Any, Any, str]:
    import torch
    from peft import LoraConfig, get_peft_model, prepare_model_for_kbit_training
    from transformers import AutoModelForCausalLM, AutoTokenizer

    cuda = torch.cuda.is_available() and config.device != "cpu"
    if config.device == "cuda" and not torch.cuda.is_available():
        raise BackendError("--device cuda was requested but there is no usable CUDA GPU; use --device cpu")
    quant = ("nf4" if cuda else "none") if config.quantization == "auto" else config.quantization
    if quant == "nf4" and not cuda:
        raise BackendError("--quantization nf4 needs CUDA; use --quantization none on CPU")
    kwargs: dict[str, Any] = {"local_files_only": True, "dtype": torch.bfloat16 if cuda else torch.float32}
    if quant == "nf4":
        from transformers import BitsAndBytesConfig

        kwargs["quantization_config"] = BitsAndBytesConfig(
            load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
            bnb_4bit_compute_dtype=torch.bfloat16)
        kwargs["device_map"] = {"": 0}
    tokenizer = AutoTokenizer.from_pretrained(model_path, local_files_only=True)
    model = AutoModelForCausalLM.from_pretrained(model_path, **kwargs)
    if quant == "nf4":
        model = prepare_model_for_kbit_training(model)
    elif cuda:
        model = model.to("cuda")
    lora = LoraConfig(r=config.rank, lora_alpha=config.alpha, lora_dropout=config.dropout,
                      target_modules=list(TARGET_MODULES), bias="none", task_type="CAUSAL_LM")
    return tokenizer, get_peft_model(model, lora), "cuda" if cuda else "cpu"


def train(model: Any, tokenizer: Any, examples: list[Example], config: LoraTrainConfig, device: str) -> list[float]:
    """`steps` optimiser steps of `batch_size` examples each (one at a time, gradients accumulated)."""
    import torch

    encoded = [encode_example(tokenizer, e, config.max_length) for e in examples]
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.AdamW(params, lr=config.lr)
    schedule = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / max(1, config.warmup)))
    order = random.Random(config.seed)
    queue: list[int] = []
    losses = []
    model.train()
    for step in range(config.steps):
        total = 0.0
        for _ in range(config.batch_size):
            if not queue:
                queue = list(range(len(encoded)))
                order.shuffle(queue)
            ids, labels = encoded[queue.pop()]
            out = model(input_ids=torch.tensor([ids], device=device), labels=torch.tensor([labels], device=device))
            (out.loss / config.batch_size).backward()
            total += float(out.loss.detach()) / config.batch_size
        torch.nn.utils.clip_grad_norm_(params, 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        losses.append(total)
        log.info("step %d/%d loss %.4f", step + 1, config.steps, total)
    return losses


def run(model_path: str, pack_dir: Path, out: Path, config: LoraTrainConfig) -> dict[str, Any]:
    import torch

    from engine.knowledge.loader import load_pack
    from engine.retrieval.suite import Retrieval
    from engine.settings import Settings, offline_environment

    offline_environment()
    random.seed(config.seed)
    torch.manual_seed(config.seed)
    started = time.perf_counter()
    pack = load_pack(pack_dir)
    examples = build_examples(pack, Retrieval(pack, Settings()), config.retriever, config.k)
    if not examples:
        raise PackError(f"pack {pack_dir} has no questions with gold rule_ids and answers to train on")
    tokenizer, model, device = load_lora_model(model_path, config)
    losses = train(model, tokenizer, examples, config, device)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    report = {"model": str(model_path), "pack": str(pack_dir), "device": device, "config": asdict(config),
              "examples": [e.question_id for e in examples], "losses": losses,
              "seconds": round(time.perf_counter() - started, 1), "finite": all(math.isfinite(v) for v in losses)}
    write_text_atomic(out / "training.json", json.dumps(report, indent=2))
    return report


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", required=True, help="local causal LM folder (no downloads)")
    parser.add_argument("--pack", type=Path, required=True, help="knowledge pack folder with rule questions")
    parser.add_argument("--out", type=Path, required=True, help="folder for the adapter and training.json")
    parser.add_argument("--steps", type=int, default=LoraTrainConfig.steps, help="optimiser steps")
    parser.add_argument("--batch-size", type=int, default=LoraTrainConfig.batch_size)
    parser.add_argument("--lr", type=float, default=LoraTrainConfig.lr)
    parser.add_argument("--rank", type=int, default=LoraTrainConfig.rank)
    parser.add_argument("--alpha", type=int, default=LoraTrainConfig.alpha)
    parser.add_argument("--max-length", type=int, default=LoraTrainConfig.max_length)
    parser.add_argument("--retriever", default=LoraTrainConfig.retriever,
                        help="documents for the prompts: dense-ft (default, paper), dense, bm25 or hybrid")
    parser.add_argument("--quantization", default="auto", choices=("auto", "nf4", "none"))
    parser.add_argument("--device", default="auto", choices=("auto", "cpu", "cuda"))
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    if args.steps < 1 or args.batch_size < 1:
        parser.error("--steps and --batch-size must be at least 1")
    config = LoraTrainConfig(steps=args.steps, batch_size=args.batch_size, lr=args.lr, rank=args.rank,
                             alpha=args.alpha, max_length=args.max_length, retriever=args.retriever,
                             quantization=args.quantization, device=args.device, seed=args.seed)
    try:
        report = run(args.model, args.pack, args.out, config)
    except RagscopeError as exc:  # said as the script's one line, exit status 1 (as SystemExit(message) did)
        print(exc, file=sys.stderr)
        return 1
    print(f"trained {len(report['losses'])} steps on {len(report['examples'])} examples ({report['device']}) "
          f"in {report['seconds']} s; loss {report['losses'][0]:.4f} → {report['losses'][-1]:.4f}; "
          f"adapter saved to {args.out}")
    return 0
