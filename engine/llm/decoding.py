"""The one decode loop of local models: plain generation, attention capture and R2AG's injected prompts.

Every path prefills the prompt but its last position without attention weights, then feeds one
token at a time (plain generation too, though one pass over the whole prompt would save a step: the
same arithmetic with and without capture writes the same tokens, also in bf16), and stops on the same
conditions: one of the model's own end-of-sequence tokens (the generation config's list, not only the
tokenizer's single `eos_token_id`: Llama-3 ends a chat turn with `<|eot_id|>`), a stop string, a
caller's own test, the token budget, or a loop: the same block of tokens written LOOP_REPEATS times in a
row at the end (a small model greedily repeating "(1904–2007) (1904–2007) …" would otherwise spend its
whole budget on it; at temperature 0 a block repeated that often is never left again). Attention, when
captured, is kept for the newest query position only: layers × heads × prompt length, never L². Each
generated token's own row is kept (the query at that token, so the last one is fed once more), apart from
the last prompt position's row: the latter is a template token, not something the model wrote.
torch is imported inside the functions: importing this module costs nothing.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

LOOP_REPEATS = 4      # a block of tokens written this many times in a row at the end is a loop …
LOOP_MAX_PERIOD = 32  # … when the block is at most this many tokens long
LOOP_MIN_TOKENS = 12  # … and the repeats span at least this many tokens (one token 4 times is no loop)
SAMPLING_SEED = 0  # sampling above temperature 0 is seeded: the same prompt samples the same tokens (run cards)


@dataclass(frozen=True)
class Decoded:
    tokens: tuple[int, ...]
    prompt_last: np.ndarray | None = None  # (layers, heads, L): the last prompt position's attention
    per_token: np.ndarray | None = None    # (T, layers, heads, L): row t is the query at generated token t
    logprobs: tuple[float, ...] = ()       # natural log of each chosen token's probability (temperature 1)

    @property
    def first(self) -> np.ndarray | None:
        """(layers, heads, L): where the first generated token looked."""
        return self.per_token[0] if self.per_token is not None and len(self.per_token) else None


def end_of_sequence_ids(model: Any, tokenizer: Any) -> frozenset[int]:
    """The model's end-of-sequence list: its generation config's ids plus the tokenizer's."""
    ids: set[int] = set()
    for source in (getattr(getattr(model, "generation_config", None), "eos_token_id", None),
                   getattr(tokenizer, "eos_token_id", None)):
        if isinstance(source, int):
            ids.add(source)
        elif isinstance(source, (list, tuple)):
            ids.update(int(i) for i in source)
    return frozenset(ids)


def decode(model: Any, tokenizer: Any, *, input_ids: Any = None, inputs_embeds: Any = None,
           max_new_tokens: int = 64, temperature: float = 0.0, stop: Sequence[str] = (),
           capture: bool = False, done: Callable[[list[int]], bool] | None = None,
           on_token: Callable[[list[int]], None] | None = None) -> Decoded:
    """Generate from token ids (1, L) or embeddings (1, L, h); greedy at temperature 0, seeded sampling above.

    `on_token` sees the tokens so far after each new one (the live view streams from it)."""
    import torch

    prompt = input_ids if input_ids is not None else inputs_embeds
    key = "input_ids" if input_ids is not None else "inputs_embeds"
    n = prompt.shape[1]
    eos = end_of_sequence_ids(model, tokenizer)
    generator = torch.Generator(device="cpu").manual_seed(SAMPLING_SEED)  # reproducible samples for step-through
    tokens: list[int] = []
    logprobs: list[float] = []
    rows: list[np.ndarray] = []
    with torch.no_grad():
        # logits of the last position only: the prompt's other L-1 rows of vocabulary logits are never read
        past = model(**{key: prompt[:, :-1]}, use_cache=True, **_last_logits(model)).past_key_values if n > 1 else None
        out = model(**{key: prompt[:, -1:]}, past_key_values=past, use_cache=True, output_attentions=capture)
        prompt_last = _prompt_row(out, n) if capture else None
        capture = prompt_last is not None  # sdpa gives no attentions (STACK): no extra step for nothing
        for _ in range(max(1, max_new_tokens)):
            logits = out.logits[0, -1]
            token = _next_token(logits, temperature, generator)
            tokens.append(token)
            logprobs.append(float(torch.log_softmax(logits.float(), dim=-1)[token]))
            if on_token is not None:
                on_token(tokens)
            last = (len(tokens) >= max_new_tokens or token in eos or _hit_stop(tokenizer, tokens, stop)
                    or looping(tokens) or (done is not None and done(tokens)))
            if last and not capture:
                break
            step = torch.tensor([[token]], device=prompt.device)
            out = model(input_ids=step, past_key_values=out.past_key_values, use_cache=True,
                        output_attentions=capture)
            row = _prompt_row(out, n) if capture else None
            if row is not None:
                rows.append(row)
            if last:
                break
    return Decoded(tuple(tokens), prompt_last, np.stack(rows) if rows else None, tuple(logprobs))


def _last_logits(model: Any) -> dict[str, int]:
    """`logits_to_keep=1` where the model takes it (every current causal LM); older remote code does not."""
    import inspect

    return {"logits_to_keep": 1} if "logits_to_keep" in inspect.signature(model.forward).parameters else {}


def _prompt_row(out: Any, n: int) -> np.ndarray | None:
    """Per layer (1, heads, 1, kv) → (layers, heads, n): the newest query's weights over the prompt only."""
    if not out.attentions:
        return None
    return np.stack([a[0, :, -1, :n].float().cpu().numpy() for a in out.attentions])


def _next_token(logits: Any, temperature: float, generator: Any) -> int:
    import torch

    if temperature <= 0:
        return int(logits.argmax())
    probs = torch.softmax(logits.float().cpu() / temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


def _hit_stop(tokenizer: Any, tokens: list[int], stop: Sequence[str]) -> bool:
    if not stop:
        return False
    tail = tokenizer.decode(tokens[-16:], skip_special_tokens=True)
    return any(s and s in tail for s in stop)


def looping(tokens: Sequence[int]) -> bool:
    """Whether `tokens` ends in one block of at most LOOP_MAX_PERIOD tokens written LOOP_REPEATS times or
    more in a row, the repeats spanning at least LOOP_MIN_TOKENS."""
    for period in range(1, LOOP_MAX_PERIOD + 1):
        repeats = max(LOOP_REPEATS, -(-LOOP_MIN_TOKENS // period))
        span = period * repeats
        if len(tokens) < span:
            break
        block = list(tokens[-period:])
        if list(tokens[-span:]) == block * repeats:
            return True
    return False
