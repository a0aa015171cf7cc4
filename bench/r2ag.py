"""R2AG benches: what injection costs (random-weight Llama) and what it is worth (a real model, unseen questions).

overhead: features, R2-Former and k extra prompt slots against plain RAG over the same documents (paper:
+0.8% latency). A random-weight Llama built from a config (speed does not depend on the weights' values),
the MiniLM tokenizer, the demo pack's questions and top-k chunks; medians per part and the overhead ratio of
prefill plus a fixed number of decoded tokens.

quality: a real model answers questions its R2AG checkpoint was not trained on — a pack's held-out split
(the `train-r2ag` split, `--questions heldout`) or another pack (`--questions all`) — three ways: R2AG with
its trained vectors injected (and, in the same run, the paper's plain RAG over the same documents: the
prompt without slots), R2AG re-rank only (a relevance-only checkpoint of the same k: the reader over the
re-ranked chunks), and vanilla. Each (question, variant) is one JSON line appended to `--out`, so slices
of questions can run one after another; `report` prints EM, F1, accuracy, refusals and seconds per question.

Usage:
  python bench/r2ag.py overhead [--pack DIR] [--hidden 1024] [--layers 8]
  python bench/r2ag.py quality --model GGUF --pack DIR --rerank-checkpoint PT [--questions heldout|all]
                               [--first 0] [--count 4] [--runs injected,rerank,vanilla] --out FILE.jsonl
  python bench/r2ag.py report FILE.jsonl
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from pathlib import Path
from typing import Any

from common import fresh_settings
from engine.settings import DEMO_PACK

QUESTIONS = 20
NEW_TOKENS = 16
VARIANTS = ("r2ag injected", "paper plain RAG", "r2ag re-rank only", "vanilla")


def decode_ms(model: Any, embeds: Any) -> float:
    """Prefill plus NEW_TOKENS greedy steps, never stopping early, so both prompts decode the same length."""
    import torch

    started = time.perf_counter()
    with torch.no_grad():
        out = model(inputs_embeds=embeds, use_cache=True)
        past, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
        for _ in range(NEW_TOKENS - 1):
            out = model(input_ids=token, past_key_values=past, use_cache=True)
            past, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
    return (time.perf_counter() - started) * 1000


def overhead(args: argparse.Namespace) -> None:
    import torch
    from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

    from engine.knowledge.loader import load_pack
    from engine.methods.r2ag.checkpoint import SHIPPED, load_checkpoint
    from engine.methods.r2ag.features import ranked_features
    from engine.methods.r2ag.former import R2Former, R2FormerConfig, score
    from engine.methods.r2ag.injection import prompt_embeddings
    from engine.methods.r2ag.prompt import PromptDoc, prompt_pieces, tokenize_prompt
    from engine.retrieval.embedder import default_embedder_path
    from engine.runner import Workbench

    hidden, layers = args.hidden, args.layers
    pack = load_pack(args.pack)
    workbench = Workbench(pack, fresh_settings())
    workbench.retrieval.ensure_index()
    tokenizer = AutoTokenizer.from_pretrained(str(default_embedder_path()), local_files_only=True)
    torch.manual_seed(0)
    llm = LlamaForCausalLM(LlamaConfig(hidden_size=hidden, intermediate_size=hidden * 11 // 4, num_hidden_layers=layers,
                                       num_attention_heads=hidden // 64, num_key_value_heads=hidden // 64,
                                       vocab_size=len(tokenizer))).eval()
    relevance, meta = load_checkpoint(SHIPPED)
    former = R2Former(R2FormerConfig(**{**meta.config, "hidden_size": hidden})).eval()
    former.load_state_dict(relevance.state_dict(), strict=False)  # projection untrained: speed only
    parts: dict[str, list[float]] = {"features": [], "r2former": [], "plain": [], "r2ag": []}
    for q in pack.questions[:QUESTIONS]:
        hits = workbench.retrieval.search(q.question, k=meta.k, retriever="hybrid")
        started = time.perf_counter()
        ordered, features = ranked_features(workbench.retrieval, q.question, hits, meta.list_order == "r")
        parts["features"].append((time.perf_counter() - started) * 1000)
        started = time.perf_counter()
        with torch.no_grad():
            vectors = former.project(score(former, torch.from_numpy(features.matrix())).hidden)[0]
        parts["r2former"].append((time.perf_counter() - started) * 1000)
        docs = [PromptDoc(h.title, h.text) for h in ordered]
        for name, slots in (("plain", False), ("r2ag", True)):
            prompt = tokenize_prompt(tokenizer, prompt_pieces(q.question, docs, slots), 4096)
            with torch.no_grad():
                embeds = prompt_embeddings(llm, prompt, vectors if slots else None)
            parts[name].append(decode_ms(llm, embeds))
    med = {name: statistics.median(values) for name, values in parts.items()}
    total = med["features"] + med["r2former"] + med["r2ag"]
    print(f"llama hidden {hidden}, {layers} layers, CPU; {len(parts['plain'])} questions; {NEW_TOKENS} new tokens")
    for name, value in med.items():
        print(f"  {name:9s} median {value:8.1f} ms")
    print(f"  overhead of R2AG over plain RAG: {100 * (total / med['plain'] - 1):+.1f}% "
          f"(decode only {100 * (med['r2ag'] / med['plain'] - 1):+.1f}%)")


def quality(args: argparse.Namespace) -> None:
    from engine.evaluation.metrics import score_answer
    from engine.knowledge.loader import load_pack
    from engine.methods.r2ag.training import TrainConfig, is_heldout
    from engine.runner import Workbench

    pack = load_pack(args.pack)
    chosen = [q for q in pack.questions if args.questions == "all" or is_heldout(q.id, TrainConfig().heldout)]
    workbench = Workbench(pack, backend="hf", backend_options={"model": str(args.model)})
    workbench.retrieval.ensure_index()
    every = {"injected": ("r2ag", {}), "rerank": ("r2ag", {"checkpoint": str(args.rerank_checkpoint)}),
             "vanilla": ("vanilla", {})}
    runs = [every[name] for name in args.runs.split(",")]
    with args.out.open("a", encoding="utf-8") as out:
        for q in chosen[args.first:args.first + args.count]:
            for method, params in runs:
                started = time.perf_counter()
                trace = workbench.ask(q.question, method, params, question_id=q.id)
                seconds = time.perf_counter() - started
                for variant, answer, refused, calls in _variants(trace, method, params):
                    raw = calls[-1].output if calls else ""
                    scores = score_answer(answer, q.answers, q.type, refused)
                    row = {"pack": pack.info.name, "id": q.id, "type": q.type, "variant": variant, "answer": answer,
                           "raw": raw, "gold": list(q.answers), "refused": refused, "em": scores.em,
                           "f1": round(scores.f1, 4),
                           "acc": scores.acc, "seconds": round(seconds, 2), "calls": len(calls),
                           "call_seconds": round(sum(c.latency_ms for c in calls) / 1000, 2),
                           "tokens_in": sum(c.tokens_in for c in calls), "tokens_out": sum(c.tokens_out for c in calls)}
                    out.write(json.dumps(row, ensure_ascii=False) + "\n")
                    out.flush()
                    print(f"{q.id} {variant:18s} em {scores.em:.0f} f1 {scores.f1:.2f} {seconds:5.1f}s {answer[:70]!r}",
                          flush=True)


def _variants(trace: Any, method: str, params: dict[str, str]) -> list[tuple[str, str, bool, list[Any]]]:
    """(variant, answer, refused, its LLM calls) of one run: an injected R2AG run holds two variants."""
    from engine.methods.r2ag.answer import instructions_of, parse_output
    from engine.trace import LlmCallStep

    calls = [s for s in trace.steps if isinstance(s, LlmCallStep)]
    answer = trace.answer
    if method == "vanilla":
        return [("vanilla", answer.text, answer.refused, calls)]
    if params:
        return [("r2ag re-rank only", answer.text, answer.refused, calls)]
    injected = [c for c in calls if c.role == "r2ag"]
    plain = [c for c in calls if c.role == "plain rag"]
    rows = [("r2ag injected", answer.text, answer.refused, injected)]
    if plain:  # the paper's baseline: the same documents in the same order, the prompt without slots
        docs = next(s for s in trace.steps if s.kind == "retrieval").hits
        texts = [h.text for h in docs]
        parsed = parse_output(plain[0].output, trace.question, instructions_of(plain[0].prompt, trace.question, texts),
                              texts)
        rows.append(("paper plain RAG", parsed.answer or "I don't know", not parsed.answer, plain))
    return rows


def report(args: argparse.Namespace) -> None:
    latest = {}  # a (question, variant) asked again (after a fix) counts once, its last answer
    for line in args.file.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            latest[row["pack"], row["id"], row["variant"]] = row
    rows = list(latest.values())
    for pack in dict.fromkeys(r["pack"] for r in rows):
        print(f"\n{pack}: {len({r['id'] for r in rows if r['pack'] == pack})} questions")
        print("| variant | EM | F1 | acc | refused | s / question (run) | s / question (its LLM calls) | calls | "
              "tokens in / out |")
        print("|---|---|---|---|---|---|---|---|---|")
        for variant in VARIANTS:
            part = [r for r in rows if r["pack"] == pack and r["variant"] == variant]
            if not part:
                continue
            mean = {key: sum(r[key] for r in part) / len(part) for key in
                    ("em", "f1", "acc", "seconds", "call_seconds", "calls", "tokens_in", "tokens_out")}
            print(f"| {variant} | {mean['em']:.3f} | {mean['f1']:.3f} | {mean['acc']:.3f} | "
                  f"{sum(r['refused'] for r in part)}/{len(part)} | {mean['seconds']:.1f} | "
                  f"{mean['call_seconds']:.1f} | {mean['calls']:.1f} | "
                  f"{mean['tokens_in']:.0f} / {mean['tokens_out']:.1f} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    over = sub.add_parser("overhead")
    over.add_argument("--pack", type=Path, default=DEMO_PACK)
    over.add_argument("--hidden", type=int, default=1024)
    over.add_argument("--layers", type=int, default=8)
    over.set_defaults(handler=overhead)
    qual = sub.add_parser("quality")
    qual.add_argument("--model", type=Path, required=True)
    qual.add_argument("--pack", type=Path, default=DEMO_PACK)
    qual.add_argument("--rerank-checkpoint", type=Path, required=True,
                      help="relevance-only checkpoint with the injected checkpoint's k (train-r2ag --k K --out …)")
    qual.add_argument("--questions", choices=("heldout", "all"), default="heldout")
    qual.add_argument("--first", type=int, default=0)
    qual.add_argument("--count", type=int, default=4)
    qual.add_argument("--runs", default="injected,rerank,vanilla",
                      help="which runs: injected (R2AG, with the paper's plain RAG beside it), rerank, vanilla")
    qual.add_argument("--out", type=Path, required=True)
    qual.set_defaults(handler=quality)
    rep = sub.add_parser("report")
    rep.add_argument("file", type=Path)
    rep.set_defaults(handler=report)
    args = parser.parse_args()
    args.handler(args)


if __name__ == "__main__":
    main()
