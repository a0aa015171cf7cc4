"""Generation speed of our decode loop (engine/llm/decoding.py through HfChatModel) against transformers'
own `model.generate`, on the same prompt and the same number of new tokens.

Every variant writes exactly `--new-tokens` tokens: generate with `min_new_tokens` (no end of sequence
before), ours with the model's end-of-sequence list emptied for the bench. The variants' repeats are
interleaved (generate, ours, ours with attention capture, ours streaming, then again), so load from other
processes on a shared machine hits them alike; medians and the min–max spread are printed, of wall time
and of this process's CPU time (less sensitive to other processes than wall time, with one torch thread).
Targets: ours ≥ 0.9× generate's tokens/s; with attention capture ≤ 1.3× generate's time.

    python bench/hf_decode.py [--model .venv/models/SmolLM2-135M-Instruct.Q4_1.gguf] [--tiny]
        [--repeats 5] [--new-tokens 64] [--prompt-tokens 700] [--dtype auto|bf16|fp32]
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "tests"))

from engine.llm import decoding, hf  # noqa: E402
from engine.llm.chat import GenerationSettings, Message, PromptSegment  # noqa: E402
from engine.settings import DEMO_PACK  # noqa: E402

SMOLLM2 = ROOT / ".venv" / "models" / "SmolLM2-135M-Instruct.Q4_1.gguf"
QUESTION = "Which of these people won two Nobel Prizes, and in which fields?"


def evidence_prompt(model: hf.HfChatModel, tokens: int) -> tuple[tuple[Message, ...], tuple[PromptSegment, ...]]:
    """Demo-pack documents as numbered references, as many as make about `tokens` prompt tokens."""
    docs = [json.loads(line) for line in (DEMO_PACK / "documents.jsonl").read_text().splitlines() if line.strip()]
    texts: list[str] = []
    for doc in docs * 8:
        texts.append(f"{doc['title']}: {doc['text']}")
        user = "Answer from the references.\n" + "\n".join(f"[{n}] {t}" for n, t in enumerate(texts, 1))
        if model.count_tokens((Message("user", user),)) >= tokens:
            break
    user += f"\nQuestion: {QUESTION}"
    segments, at = [], 0
    for n, text in enumerate(texts, 1):
        at = user.index(text, at)
        segments.append(PromptSegment(f"doc {n}", "document", at, at + len(text)))
        at += len(text)
    start = user.rindex(QUESTION)
    segments.append(PromptSegment("question", "question", start, start + len(QUESTION)))
    return (Message("user", user),), tuple(segments)


def variants(model: hf.HfChatModel, messages: tuple[Message, ...], segments: tuple[PromptSegment, ...],
             new_tokens: int) -> dict[str, Callable[[], int]]:
    """Each variant runs one generation and returns how many tokens it wrote."""
    import torch

    settings = GenerationSettings(max_new_tokens=new_tokens)
    ids = model.render(messages).ids
    mask = torch.ones_like(ids)
    pieces: list[str] = []

    def generate() -> int:
        with torch.no_grad():
            out = model.model_obj.generate(input_ids=ids, attention_mask=mask, do_sample=False,
                                           max_new_tokens=new_tokens, min_new_tokens=new_tokens)
        return out.shape[1] - ids.shape[1]

    def ours() -> int:
        return model.complete(messages, settings).tokens_out

    def captured() -> int:
        completion, steps = model.complete_with_attention(messages, segments, settings)
        assert steps, "attention capture gave no steps"
        return completion.tokens_out

    def streamed() -> int:
        pieces.clear()
        return model.complete_streaming(messages, settings, pieces.append).tokens_out

    return {"generate": generate, "ours": ours, "ours + attention": captured, "ours streaming": streamed}


def bench(name: str, model: hf.HfChatModel, repeats: int, new_tokens: int, prompt_tokens: int) -> None:
    messages, segments = evidence_prompt(model, prompt_tokens)
    runs = variants(model, messages, segments, new_tokens)
    for run in runs.values():  # warm-up: first calls allocate caches and compile kernels
        run()
    wall: dict[str, list[float]] = {k: [] for k in runs}
    cpu: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(repeats):
        for key, run in runs.items():
            started, started_cpu = time.perf_counter(), time.process_time()
            written = run()
            wall[key].append(time.perf_counter() - started)
            cpu[key].append(time.process_time() - started_cpu)
            assert written == new_tokens, f"{key} wrote {written} tokens, not {new_tokens}"
    print(f"\n{name}: {model.count_tokens(messages)} prompt tokens, {new_tokens} new tokens, {repeats} repeats, "
          f"{model.precision}, {len(segments)} segments, {torch_threads()} torch thread(s)")
    print(f"{'variant':18} {'wall s':>7} {'min–max':>13} {'tokens/s':>9} {'÷ generate':>10} {'cpu s':>7} "
          f"{'min–max':>13} {'÷ generate':>10}")
    med = lambda d, k: statistics.median(d[k])  # noqa: E731
    for key in runs:
        print(f"{key:18} {med(wall, key):7.3f} {min(wall[key]):6.3f}–{max(wall[key]):<6.3f} "
              f"{new_tokens / med(wall, key):9.1f} {med(wall, key) / med(wall, 'generate'):10.2f} "
              f"{med(cpu, key):7.3f} {min(cpu[key]):6.3f}–{max(cpu[key]):<6.3f} "
              f"{med(cpu, key) / med(cpu, 'generate'):10.2f}")
    for label, d in (("wall", wall), ("cpu", cpu)):
        print(f"{label}: ours speed ÷ generate speed {med(d, 'generate') / med(d, 'ours'):.2f} (target ≥ 0.9); "
              f"attention capture time ÷ generate time {med(d, 'ours + attention') / med(d, 'generate'):.2f} "
              "(target ≤ 1.3)")


def torch_threads() -> int:
    import torch

    return torch.get_num_threads()


def tiny_llama() -> Path:
    from tiny_model import build_tiny_llama

    return build_tiny_llama(Path(tempfile.mkdtemp(prefix="tiny-llama-")))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--model", default=str(SMOLLM2), help="a model folder or .gguf file; '' to skip")
    parser.add_argument("--tiny", action="store_true", help="also the random tiny Llama of the tests")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--new-tokens", type=int, default=64)
    parser.add_argument("--prompt-tokens", type=int, default=700)
    parser.add_argument("--dtype", default="auto", choices=hf.DTYPES)
    args = parser.parse_args()
    # ours writes the full length, as generate does with min_new_tokens: no end of sequence in the bench
    decoding.end_of_sequence_ids = lambda _model, _tokenizer: frozenset()
    paths = ([("SmolLM2" if args.model == str(SMOLLM2) else Path(args.model).name, args.model)] if args.model
             else []) + ([("tiny random Llama", str(tiny_llama()))] if args.tiny else [])
    for name, path in paths:
        model = hf._load(hf.HfModelConfig(path, quantization="none", device="cpu", dtype=args.dtype))
        bench(name, model, args.repeats, args.new_tokens, args.prompt_tokens)


if __name__ == "__main__":
    main()
