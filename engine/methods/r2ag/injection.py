"""Write the R2-Former's vectors into the placeholder slots of `inputs_embeds`, then decode (spec §2.4, §3 9-11).

The backends' one decode loop serves R2AG and the plain-RAG comparison, so latency and attention are
measured the same way for both. Attention is kept only for the last prompt position and each
generated token's own position (prefill L-1 without weights, spec §4.3): layers × heads × L, never L².
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

import numpy as np
import torch

from engine.errors import BackendError
from engine.llm.decoding import decode
from engine.methods.r2ag.answer import first_line
from engine.methods.r2ag.prompt import SlottedPrompt


@dataclass(frozen=True)
class Generation:
    text: str                         # everything decoded (the first line is the answer: `answer.first_line`)
    tokens: tuple[int, ...]
    pieces: tuple[str, ...]           # each generated token as text
    prompt_last: np.ndarray | None    # (layers, heads, L) attention of the last prompt position
    per_token: np.ndarray | None      # (T, layers, heads, L) row t: the query at generated token t
    latency_ms: float


def prompt_embeddings(model: Any, prompt: SlottedPrompt, vectors: torch.Tensor | None) -> torch.Tensor:
    """(1, L, h) token embeddings with row `prompt.slots[i]` replaced by `vectors[i]` (k, h).

    Differentiable in `vectors`: joint training backpropagates the LM loss through the frozen LLM
    into the projection (spec §2.5). Without vectors this is the plain token embedding.
    """
    device = model.get_input_embeddings().weight.device
    ids = torch.tensor([prompt.ids], device=device)
    embeds = model.get_input_embeddings()(ids)                              # (1, L, h)
    if vectors is None or not prompt.slots:
        return embeds
    rows = torch.tensor(prompt.slots, device=device)
    if vectors.shape[0] != len(rows):
        raise BackendError(f"{len(rows)} placeholder slots but {vectors.shape[0]} vectors")
    batch = torch.zeros_like(rows)
    return embeds.index_put((batch, rows), vectors.to(device=device, dtype=embeds.dtype))


def greedy_decode(model: Any, tokenizer: Any, embeds: torch.Tensor, max_new_tokens: int,
                  capture: bool) -> Generation:
    """Greedy decoding from `inputs_embeds` by the backends' one decode loop (engine/llm/decoding.py),
    also stopping at the end of the first line (spec §3.11)."""
    started = time.perf_counter()
    decoded = decode(model, tokenizer, inputs_embeds=embeds, max_new_tokens=max_new_tokens, capture=capture,
                     done=lambda tokens: _first_line_done(tokenizer, tokens))
    tokens = list(decoded.tokens)
    return Generation(
        text=tokenizer.decode(tokens, skip_special_tokens=True).strip(), tokens=tuple(tokens),
        pieces=tuple(tokenizer.batch_decode([[t] for t in tokens])),
        prompt_last=decoded.prompt_last, per_token=decoded.per_token,
        latency_ms=round((time.perf_counter() - started) * 1000, 2),
    )


def _first_line_done(tokenizer: Any, tokens: list[int]) -> bool:
    """[decide 17] metrics score the first line, so decoding stops once a line with an answer has ended
    (a bare "Answer:" line is the template's label repeated, not the answer)."""
    if "\n" not in tokenizer.decode(tokens[-1:], skip_special_tokens=True):
        return False
    text = tokenizer.decode(tokens, skip_special_tokens=True)
    return bool(first_line(text[:text.rfind("\n")]))
