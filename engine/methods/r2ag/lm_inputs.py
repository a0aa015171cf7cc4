"""The frozen LLM's side of joint training (spec §2.5, "R2AG" = frozen LLM), prepared once and batched.

With the LLM frozen, everything it is given apart from the injected vectors is the same in every
epoch: each list's retrieval-aware prompt and answer as token ids, where its slots are, and the
key/value cache of the prompt head that every list shares (chat template, instruction, up to the
first slot). That head is run through the LLM once; each step runs only the rest. Losses and
gradients equal those of the whole sequence (`share_prefix=False` computes them that way; a test
compares the two), because nothing before the first slot depends on the vectors.

Each step scores the answer tokens only ([decide 9]), and asks the LLM for vocabulary logits at
those positions only: the other positions' logits are never read.
"""

from __future__ import annotations

import copy
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import torch

from engine.methods.r2ag.prompt import Piece, PromptDoc, SlottedPrompt, prompt_pieces, tokenize_prompt

MAX_PROMPT_TOKENS = 4096  # [C] training examples over 4096 tokens are skipped; here their documents are cut
MIN_DOC_TOKENS = 16
Tokenized = tuple[tuple[int, ...], tuple[int, ...], int]  # ids, slot positions, answer start


@dataclass(frozen=True)
class LmList:
    """One training list as the LLM sees it, after the shared head."""

    ids: tuple[int, ...]     # prompt (after the head) + answer + end of sequence
    slots: tuple[int, ...]   # placeholder positions within `ids`, document order
    answer_start: int        # position of the first answer token within `ids`


@dataclass(frozen=True)
class LmInputs:
    head: tuple[int, ...]    # token ids every list starts with (no slot among them)
    past: Any                # the frozen LLM's key/value cache of `head`; None when `head` is empty
    lists: tuple[LmList, ...]


@dataclass(frozen=True)
class LmSource:
    """What a list's LLM side is built from."""

    question: str
    docs: tuple[PromptDoc, ...]
    answer: str


def prepare(llm: Any, tokenizer: Any, sources: Sequence[LmSource], prompt_tokens: int,
            share_prefix: bool = True) -> LmInputs:
    """Tokenise every list once, its prompt cut to `prompt_tokens` (`fitted`), and run the shared head
    through the LLM once."""
    full = [_tokenized(tokenizer, s, prompt_tokens) for s in sources]
    cut = _shared_head(full) if share_prefix else 0
    lists = tuple(LmList(ids=ids[cut:], slots=tuple(p - cut for p in slots), answer_start=start - cut)
                  for ids, slots, start in full)
    head = full[0][0][:cut] if full else ()
    past = None
    if head:
        with torch.no_grad():
            device = llm.get_input_embeddings().weight.device
            past = llm(input_ids=torch.tensor([head], device=device), use_cache=True).past_key_values
    return LmInputs(head=tuple(head), past=past, lists=lists)


def _tokenized(tokenizer: Any, source: LmSource, prompt_tokens: int) -> Tokenized:
    pieces = prompt_pieces(source.question, source.docs, True)
    prompt = fitted(tokenizer, pieces, prompt_tokens)
    # no leading space: the template ends the prompt with a new line (the assistant turn, "### Response:\n")
    answer = tokenizer(source.answer, add_special_tokens=False)["input_ids"] + [tokenizer.eos_token_id]
    return prompt.ids + tuple(answer), prompt.slots, len(prompt.ids)


def fitted(tokenizer: Any, pieces: Sequence[Piece], prompt_tokens: int) -> SlottedPrompt:
    """The prompt in `prompt_tokens`, the longest documents cut first, each keeping at least
    MIN_DOC_TOKENS: where the template alone nearly fills the budget, the prompt grows past it."""
    whole = tokenize_prompt(tokenizer, pieces, MAX_PROMPT_TOKENS)
    text = sum(s.end - s.start for s in whole.segments if s.kind == "document")
    documents = sum(p.kind == "document" for p in pieces)
    needed = len(whole.ids) - text + MIN_DOC_TOKENS * documents
    return tokenize_prompt(tokenizer, pieces, min(MAX_PROMPT_TOKENS, max(prompt_tokens, needed)))


def _shared_head(full: Sequence[Tokenized]) -> int:
    """Length of the longest prefix all lists share, ending before any list's first slot."""
    if not full:
        return 0
    limit = min(min(slots, default=len(ids)) for ids, slots, _ in full)
    first = full[0][0]
    n = 0
    while n < limit and all(ids[n] == first[n] for ids, _, _ in full):
        n += 1
    return n


def batch_loss(llm: Any, inputs: LmInputs, batch: Sequence[int], vectors: Sequence[torch.Tensor]) -> torch.Tensor:
    """Mean next-token loss over the answer tokens of `batch` (indices into `inputs.lists`) with
    `vectors[b]` (n_b, h) written into list b's slots. Lists are right-padded: under causal attention
    no real token sees a pad, so no attention mask is needed."""
    lists = [inputs.lists[i] for i in batch]
    embedding = llm.get_input_embeddings()
    device = embedding.weight.device
    width = max(len(x.ids) for x in lists)
    ids = torch.full((len(lists), width), _pad_id(llm), dtype=torch.long, device=device)
    for b, x in enumerate(lists):
        ids[b, :len(x.ids)] = torch.tensor(x.ids, device=device)
    embeds = embedding(ids)                                                    # (B, T, h)
    rows = torch.tensor([b for b, x in enumerate(lists) for _ in x.slots], dtype=torch.long, device=device)
    cols = torch.tensor([p for x in lists for p in x.slots], dtype=torch.long, device=device)
    values = torch.cat([v[:len(x.slots)] for v, x in zip(vectors, lists)]).to(device=device, dtype=embeds.dtype)
    embeds = embeds.index_put((rows, cols), values)
    # logits at t predict token t + 1: keep the positions just before each answer token, for the whole batch
    keep = torch.arange(min(x.answer_start for x in lists) - 1, width - 1, device=device)
    targets = ids[:, keep + 1].clone()                                         # (B, K)
    for b, x in enumerate(lists):
        scored = (keep + 1 >= x.answer_start) & (keep + 1 < len(x.ids))
        targets[b, ~scored] = -100
    past = _batch_past(inputs.past, len(lists))
    logits = llm(inputs_embeds=embeds, past_key_values=past, use_cache=past is not None,
                 logits_to_keep=keep).logits                                   # (B, K, V)
    return torch.nn.functional.cross_entropy(logits.float().flatten(0, 1), targets.flatten(), ignore_index=-100)


def _batch_past(past: Any, size: int) -> Any:
    """A fresh copy of the head's cache for a batch (a forward pass appends to the cache it is given)."""
    if past is None:
        return None
    fresh = copy.deepcopy(past)
    if size > 1:
        fresh.batch_repeat_interleave(size)
    return fresh


def _pad_id(llm: Any) -> int:
    """Any id in range: padded positions are never attended to by a real token nor scored."""
    return int(getattr(llm.config, "pad_token_id", None) or 0)


@contextmanager
def sdpa_attention(llm: Any) -> Iterator[None]:
    """Fused attention while training: the eager kernel the backend loads (its weights feed the
    heatmaps) is about twice as slow on a CPU, and training reads no attention weights."""
    before = getattr(llm.config, "_attn_implementation", None)
    try:
        llm.set_attn_implementation("sdpa")
    except (AttributeError, ValueError, ImportError):  # a model without SDPA trains with what it has
        before = None
    try:
        yield
    finally:
        if before is not None:
            llm.set_attn_implementation(before)
