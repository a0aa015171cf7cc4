"""Attention steps of an R2AG run (spec §4.2): the R2-Former's heads and three views of the LLM's attention."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.llm.attention import OTHER, prompt_shares, segment_mass
from engine.trace import AttentionStep, Segment

PAPER_TOP_DOCS = 4  # Fig. 6 shows the top-4 documents


def _rounded(matrix: np.ndarray, digits: int = 5) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(round(float(v), digits) for v in row) for row in matrix)


def former_attention_step(attention: np.ndarray, labels: Sequence[str], highlight: Sequence[str],
                          iteration: int) -> AttentionStep:
    """attention (heads, k, k) of the R2-Former's layer: query rank × key rank, head mean plus each head."""
    return AttentionStep(
        iteration=iteration, title="R2-Former self-attention", name="R2-Former: rank × rank (mean over heads)",
        matrix=_rounded(attention.mean(axis=0)), x_labels=tuple(labels), y_labels=tuple(labels),
        heads=tuple(_rounded(h) for h in attention), group="R2-Former", highlight=tuple(highlight),
        note=f"self-attention of the R2-Former over the {len(labels)} documents in rank order (row attends to "
             f"column), {attention.shape[0]} heads; it sees only each document's r, γ, ζ and its rank",
    )


def _owner(length: int, segments: Sequence[Segment]) -> np.ndarray:
    owner = np.full(length, -1, dtype=np.int64)
    for s, seg in enumerate(segments):
        owner[seg.start:seg.end] = s
    return owner


@dataclass(frozen=True)
class Generated:
    """What a decode wrote: each token's own attention row over the prompt, its id and its text."""

    per_token: np.ndarray  # (T, layers, heads, L)
    tokens: tuple[int, ...]
    pieces: tuple[str, ...]


def llm_attention_steps(prompt_last: np.ndarray, generated: Generated, segments: Sequence[Segment],
                        token_texts: Sequence[str], group: str, highlight: Sequence[str],
                        iteration: int) -> tuple[AttentionStep, ...]:
    """prompt_last (layers, heads, L) → the paper's layer × token view; generated.per_token (T, layers,
    heads, L) → layer × segment of the first generated token and generated token × segment; head-averaged."""
    per_token = generated.per_token
    layers = tuple(f"layer {i}" for i in range(per_token.shape[1]))
    owner = _owner(per_token.shape[-1], segments)
    labels = tuple(s.label for s in segments) + (OTHER,)
    by_layer = prompt_shares(segment_mass(per_token[0].mean(axis=1), owner, len(segments)))
    by_token = prompt_shares(segment_mass(per_token.mean(axis=(1, 2)), owner, len(segments)))
    first = generated.pieces[0] if generated.pieces else ""
    steps = [
        AttentionStep(iteration=iteration, title=f"{group}: first generated token, layer × segment",
                      name=f"{group}: layer × segment (first generated token {first.strip()!r})",
                      matrix=_rounded(by_layer), x_labels=labels, y_labels=layers, segments=tuple(segments),
                      group=group, highlight=tuple(highlight), token=first, token_id=int(generated.tokens[0]),
                      note="where the first token the model wrote looked: its share of attention over the prompt "
                           "per segment (an injected slot marked 'injected', then the document's text), mean "
                           "over heads"),
        _paper_view(prompt_last, segments, token_texts, layers, group, highlight, iteration),
        AttentionStep(iteration=iteration, title=f"{group}: generated token × segment",
                      name=f"{group}: generated token × segment", matrix=_rounded(by_token), x_labels=labels,
                      y_labels=tuple(generated.pieces[:len(per_token)]), segments=tuple(segments), group=group,
                      highlight=tuple(highlight),
                      note="each generated token's share of attention over the prompt, mean over heads and layers"),
    ]
    return tuple(steps)


def _paper_view(prompt_last: np.ndarray, segments: Sequence[Segment], token_texts: Sequence[str],
                layers: tuple[str, ...], group: str, highlight: Sequence[str], iteration: int) -> AttentionStep:
    """Fig. 6: layer × token over the top documents, slots and the '[i]similarity:' labels included."""
    top = [s for s in segments if s.kind in ("placeholder", "document")
           and int(s.label.rsplit(" ", 1)[-1]) <= PAPER_TOP_DOCS]
    start, end = (min(s.start for s in top), max(s.end for s in top)) if top else (0, 0)
    spans = tuple(Segment(s.label, s.start - start, s.end - start, s.kind, s.title) for s in top)
    return AttentionStep(
        iteration=iteration, title=f"{group}: layer × token, top {PAPER_TOP_DOCS} documents",
        name=f"{group}: layer × token over the top {PAPER_TOP_DOCS} documents (paper Fig. 6)",
        matrix=_rounded(prompt_last.mean(axis=1)[:, start:end]), x_labels=tuple(token_texts[start:end]),
        y_labels=layers,
        segments=spans, group=group, highlight=tuple(highlight),
        note="attention of the last prompt token to every token of the top documents, mean over heads; "
             "segments mark the injected slots (e_R i) and document text (doc i); tokens between them are "
             "the '[i]similarity:' labels",
    )
