"""RuleRAG-FT generator side (spec §2 "RGFT-generator", §4 table): LoRA-tune a causal LM on rule prompts.

Each training example is the paper's five-block prompt (Instruct, Retrieved documents, Rules, Query,
Answer — `engine.methods.rulerag.reader.build_rule_prompt`, the same text RuleRAG sends at inference)
for one pack question with gold `rule_ids`, with the gold answer plus a period as the target. The
documents come from RuleRAG's rule-guided retrieval (one search per rule with question ∘ rule in
the bracketed form RuleRAG uses by default, merged by `merge_hits`), by default with the fine-tuned `dense-ft` retriever as the
paper does (train it first: `python -m engine train-retriever --pack DIR`). The loss covers the
answer tokens only.

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
import json
import logging
import math
import random
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from engine.hf_imports import TRANSFORMERS_LOCK

log = logging.getLogger("finetune_generator_lora")

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


def build_examples(pack, retrieval, retriever: str, k: int) -> list[Example]:
    """One example per question with gold rules and answers: RuleRAG's retrieval, then its prompt."""
    from engine.methods.rulerag.method import merge_hits
    from engine.rules.matching import ScoredRule
    from engine.rules.text import rule_query
    from engine.methods.rulerag.reader import build_rule_prompt

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


def encode_example(tokenizer, example: Example, max_length: int) -> tuple[list[int], list[int]]:
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
        raise SystemExit("--device cuda was requested but there is no usable CUDA GPU; use --device cpu")
    quant = ("nf4" if cuda else "none") if config.quantization == "auto" else config.quantization
    if quant == "nf4" and not cuda:
        raise SystemExit("--quantization nf4 needs CUDA; use --quantization none on CPU")
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


def train(model, tokenizer, examples: list[Example], config: LoraTrainConfig, device: str) -> list[float]:
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
        raise SystemExit(f"pack {pack_dir} has no questions with gold rule_ids and answers to train on")
    tokenizer, model, device = load_lora_model(model_path, config)
    losses = train(model, tokenizer, examples, config, device)
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    report = {"model": str(model_path), "pack": str(pack_dir), "device": device, "config": asdict(config),
              "examples": [e.question_id for e in examples], "losses": losses,
              "seconds": round(time.perf_counter() - started, 1), "finite": all(math.isfinite(v) for v in losses)}
    (out / "training.json").write_text(json.dumps(report, indent=2), encoding="utf-8")
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
    report = run(args.model, args.pack, args.out, config)
    print(f"trained {len(report['losses'])} steps on {len(report['examples'])} examples ({report['device']}) "
          f"in {report['seconds']} s; loss {report['losses'][0]:.4f} → {report['losses'][-1]:.4f}; "
          f"adapter saved to {args.out}")
    return 0
