"""Attention steps of an R2AG run (spec §4.2): the R2-Former's heads and three views of the LLM's attention."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.llm.attention import OTHER, segment_mass
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


def llm_attention_steps(first: np.ndarray, per_token: np.ndarray, generated: Sequence[str],
                        segments: Sequence[Segment], token_texts: Sequence[str], group: str,
                        highlight: Sequence[str], iteration: int) -> tuple[AttentionStep, ...]:
    """first (layers, heads, L), per_token (T, layers, heads, L) → layer × segment, the paper's
    layer × token over the top documents, and generated token × segment; all head-averaged."""
    layers = tuple(f"layer {i}" for i in range(first.shape[0]))
    owner = _owner(first.shape[-1], segments)
    labels = tuple(s.label for s in segments) + (OTHER,)
    by_layer = segment_mass(first.mean(axis=1), owner, len(segments))
    by_token = segment_mass(per_token.mean(axis=(1, 2)), owner, len(segments))
    steps = [
        AttentionStep(iteration=iteration, title=f"{group}: last prompt token, layer × segment",
                      name=f"{group}: layer × segment (last prompt token)", matrix=_rounded(by_layer),
                      x_labels=labels, y_labels=layers, segments=tuple(segments), group=group,
                      highlight=tuple(highlight),
                      note="attention mass of the position that emits the first answer token, summed per "
                           "segment (e_R i = injected slot, doc i = its text), mean over heads"),
        _paper_view(first, segments, token_texts, layers, group, highlight, iteration),
        AttentionStep(iteration=iteration, title=f"{group}: generated token × segment",
                      name=f"{group}: generated token × segment", matrix=_rounded(by_token), x_labels=labels,
                      y_labels=tuple(generated), segments=tuple(segments), group=group,
                      highlight=tuple(highlight),
                      note="attention mass over the prompt of each generated token, mean over heads and layers"),
    ]
    return tuple(steps)


def _paper_view(first: np.ndarray, segments: Sequence[Segment], token_texts: Sequence[str],
                layers: tuple[str, ...], group: str, highlight: Sequence[str], iteration: int) -> AttentionStep:
    """Fig. 6: layer × token over the top documents, slots and the '[i]similarity:' labels included."""
    top = [s for s in segments if s.kind in ("placeholder", "document")
           and int(s.label.rsplit(" ", 1)[-1]) <= PAPER_TOP_DOCS]
    start, end = (min(s.start for s in top), max(s.end for s in top)) if top else (0, 0)
    spans = tuple(Segment(s.label, s.start - start, s.end - start, s.kind) for s in top)
    return AttentionStep(
        iteration=iteration, title=f"{group}: layer × token, top {PAPER_TOP_DOCS} documents",
        name=f"{group}: layer × token over the top {PAPER_TOP_DOCS} documents (paper Fig. 6)",
        matrix=_rounded(first.mean(axis=1)[:, start:end]), x_labels=tuple(token_texts[start:end]), y_labels=layers,
        segments=spans, group=group, highlight=tuple(highlight),
        note="attention of the last prompt token to every token of the top documents, mean over heads; "
             "segments mark the injected slots (e_R i) and document text (doc i); tokens between them are "
             "the '[i]similarity:' labels",
    )
