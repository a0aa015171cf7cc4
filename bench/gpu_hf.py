"""HF backend on a CUDA GPU: an 8B-class Llama built from its config with random weights
(speed and memory do not depend on the weights' values; no weights can be downloaded).

Prints NF4 load time, peak GPU memory (budget ≤ 7 GB), prefill and decode tokens/s, and the
attention-capture overhead against plain generation (budget ≤ 1.3×).
Usage: python bench/gpu_hf.py [--layers 32] [--workdir /tmp/llama8b]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

# Llama-3-8B's published architecture.
LLAMA3_8B = dict(hidden_size=4096, intermediate_size=14336, num_hidden_layers=32, num_attention_heads=32,
                 num_key_value_heads=8, vocab_size=128256, max_position_embeddings=8192, rope_theta=500000.0,
                 rms_norm_eps=1e-5, tie_word_embeddings=False)


def build_checkpoint(folder: Path, layers: int) -> Path:
    """Random bf16 weights written once as a normal checkpoint, so loading goes the real way."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    if (folder / "config.json").is_file():
        return folder
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tests"))
    from tiny_model import build_tiny_llama  # a tokenizer with a chat template; vocab ids are what matter

    build_tiny_llama(folder)
    (folder / "model.safetensors").unlink()  # keep its tokenizer only: transformers would load these weights first
    config = LlamaConfig(**{**LLAMA3_8B, "num_hidden_layers": layers})
    # Initialised in bf16 on the GPU where there is one: 8B random values on the CPU take minutes.
    with torch.device("cuda" if torch.cuda.is_available() else "cpu"):
        model = LlamaForCausalLM._from_config(config, dtype=torch.bfloat16)
    model.save_pretrained(folder, max_shard_size="4GB")
    del model
    torch.cuda.empty_cache()
    return folder


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--layers", type=int, default=32)
    parser.add_argument("--workdir", type=Path, default=Path("/tmp/llama8b-random"))
    parser.add_argument("--prompt-words", type=int, default=600)
    parser.add_argument("--new-tokens", type=int, default=64)
    args = parser.parse_args()

    import torch

    from engine.llm import hf
    from engine.llm.chat import GenerationSettings, Message, PromptSegment

    if not torch.cuda.is_available():
        sys.exit("no CUDA GPU here: this benchmark needs one")
    folder = build_checkpoint(args.workdir, args.layers)
    torch.cuda.reset_peak_memory_stats()
    started = time.perf_counter()
    model = hf._load(hf.HfModelConfig(str(folder)))  # auto on CUDA: NF4, double quant, bf16 compute
    load_s = time.perf_counter() - started
    load_peak = torch.cuda.max_memory_allocated() / 2**30

    docs = [" ".join(f"word{i}_{j}" for j in range(args.prompt_words // 5)) for i in range(5)]
    user = "\n".join(f"[{i + 1}] {d}" for i, d in enumerate(docs)) + "\nQuestion: which?"
    segments, pos = [], 0
    for i, d in enumerate(docs):
        start = user.index(d, pos)
        segments.append(PromptSegment(f"d{i + 1}", "document", start, start + len(d)))
        pos = start + len(d)
    messages = (Message("user", user),)
    # random weights never emit EOS on purpose; force the full length for a fair tokens/s
    model.tokenizer.eos_token_id = None
    settings = GenerationSettings(max_new_tokens=args.new_tokens)

    model.complete(messages, GenerationSettings(max_new_tokens=2))  # warm-up
    prompt = model.render(messages)
    with torch.no_grad():
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        model.model_obj(input_ids=prompt.ids)
        torch.cuda.synchronize()
        prefill_s = time.perf_counter() - t0
    plain = [model.complete(messages, settings).latency_ms for _ in range(3)]
    captured = [model.complete_with_attention(messages, segments, settings)[0].latency_ms for _ in range(3)]
    peak = torch.cuda.max_memory_allocated() / 2**30
    n_prompt = prompt.ids.shape[1]
    decode_tps = args.new_tokens / ((statistics.median(plain) / 1000) - prefill_s)

    print(f"GPU: {torch.cuda.get_device_name(0)}; model: Llama-3-8B config, {args.layers} layers, random weights")
    print(f"NF4 load:            {load_s:6.1f} s   (GPU memory after load {load_peak:.2f} GiB)")
    print(f"peak GPU memory:     {peak:6.2f} GiB (budget ≤ 7 GB)")
    print(f"prefill:             {n_prompt / prefill_s:8.0f} tokens/s ({n_prompt} prompt tokens)")
    print(f"decode (generate):   {decode_tps:8.1f} tokens/s")
    print(f"plain generation:    {statistics.median(plain):8.0f} ms median for {args.new_tokens} tokens")
    print(f"attention capture:   {statistics.median(captured):8.0f} ms median → ratio "
          f"{statistics.median(captured) / statistics.median(plain):.2f} (budget ≤ 1.3)")


if __name__ == "__main__":
    main()
