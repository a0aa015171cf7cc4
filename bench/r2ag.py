"""R2AG's cost over plain RAG on the same documents: features, R2-Former, k extra prompt slots (paper: +0.8%).

A random-weight Llama built from a config (speed does not depend on the weights' values) and the
MiniLM tokenizer; the demo pack's questions and top-k chunks. Prints per-question medians of each
part and the overhead ratio of time to first token (prefill) plus a fixed number of decoded tokens.

Usage: python bench/r2ag.py [PACK_DIR] [HIDDEN] [LAYERS]   (default: demo pack, 1024, 8)
"""

from __future__ import annotations

import statistics
import sys
import time

import torch
from common import fresh_settings, pack_path
from transformers import AutoTokenizer, LlamaConfig, LlamaForCausalLM

from engine.knowledge.loader import load_pack
from engine.methods.r2ag.checkpoint import SHIPPED, load_checkpoint
from engine.methods.r2ag.features import ranked_features
from engine.methods.r2ag.former import R2Former, R2FormerConfig, score
from engine.methods.r2ag.injection import prompt_embeddings
from engine.methods.r2ag.prompt import PromptDoc, prompt_pieces, tokenize_prompt
from engine.retrieval.embedder import default_embedder_path
from engine.runner import Workbench

QUESTIONS = 20
NEW_TOKENS = 16


@torch.no_grad()
def decode_ms(model: LlamaForCausalLM, embeds: torch.Tensor) -> float:
    """Prefill plus NEW_TOKENS greedy steps, never stopping early, so both prompts decode the same length."""
    started = time.perf_counter()
    out = model(inputs_embeds=embeds, use_cache=True)
    past, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
    for _ in range(NEW_TOKENS - 1):
        out = model(input_ids=token, past_key_values=past, use_cache=True)
        past, token = out.past_key_values, out.logits[:, -1:].argmax(-1)
    return (time.perf_counter() - started) * 1000


def main() -> None:
    hidden = int(sys.argv[2]) if len(sys.argv) > 2 else 1024
    layers = int(sys.argv[3]) if len(sys.argv) > 3 else 8
    pack = load_pack(pack_path())
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


if __name__ == "__main__":
    main()
