"""Aggregate token-level attention into segment mass (documents, rules, triples, question).

Pure numpy so it can be tested without a model: the HF backend hands in, per layer, the
head-wise attention of one query position over the prompt tokens.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from engine.llm.chat import PromptSegment
from engine.trace import AttentionStep, Segment

OTHER = "other"  # instructions, chat template, separators: every token not inside a segment


def token_segments(offsets: Sequence[tuple[int, int]], segments: Sequence[PromptSegment]) -> np.ndarray:
    """Index of the segment each token overlaps (first match), or -1; offsets are prompt char spans."""
    owner = np.full(len(offsets), -1, dtype=np.int64)
    for t, (start, end) in enumerate(offsets):
        for s, seg in enumerate(segments):
            if start < seg.end and end > seg.start and end > start:
                owner[t] = s
                break
    return owner


def segment_mass(weights: np.ndarray, owner: np.ndarray, n_segments: int) -> np.ndarray:
    """(..., tokens) attention → (..., n_segments + 1): summed per segment, last column = other."""
    index = np.where(owner < 0, n_segments, owner)
    out = np.zeros(weights.shape[:-1] + (n_segments + 1,), dtype=np.float64)
    for column in range(n_segments + 1):
        out[..., column] = weights[..., index == column].sum(axis=-1)
    return out


def segment_spans(owner: np.ndarray, segments: Sequence[PromptSegment]) -> tuple[Segment, ...]:
    """Token ranges of each segment, for the heatmap's axis annotations."""
    spans = []
    for s, seg in enumerate(segments):
        positions = np.flatnonzero(owner == s)
        if positions.size:
            spans.append(Segment(label=seg.label, start=int(positions[0]), end=int(positions[-1]) + 1, kind=seg.kind))
    return tuple(spans)


def attention_steps(
    first_token: np.ndarray,
    per_token: np.ndarray,
    generated: Sequence[str],
    owner: np.ndarray,
    segments: Sequence[PromptSegment],
    head: int | None = None,
) -> tuple[AttentionStep, AttentionStep]:
    """Two heatmaps: layer × segment for the first answer token, generated token × segment.

    first_token: (layers, heads, prompt_tokens) attention of the last prompt position.
    per_token:   (generated, layers, heads, prompt_tokens) attention of each generated token.
    """
    labels = tuple(s.label for s in segments) + (OTHER,)
    spans = segment_spans(owner, segments)
    pick = (lambda a: a[..., head, :]) if head is not None else (lambda a: a.mean(axis=-2))
    note = f"head {head}" if head is not None else "mean over heads"
    by_layer = segment_mass(pick(first_token), owner, len(segments))
    by_token = segment_mass(pick(per_token).mean(axis=1), owner, len(segments)) if len(per_token) else np.zeros((0, len(labels)))
    return (
        AttentionStep(name="first answer token: layer × segment", matrix=_rounded(by_layer), x_labels=labels,
                      y_labels=tuple(f"layer {i}" for i in range(by_layer.shape[0])), segments=spans,
                      note=f"attention mass of the first answer token per segment, {note}"),
        AttentionStep(name="generated token × segment", matrix=_rounded(by_token), x_labels=labels,
                      y_labels=tuple(generated), segments=spans,
                      note=f"attention mass over the prompt per generated token, {note}, mean over layers"),
    )


def _rounded(matrix: np.ndarray) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(round(float(v), 5) for v in row) for row in matrix)
