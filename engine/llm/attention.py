"""Aggregate token-level attention into segment mass (documents, rules, triples, question).

Pure numpy so it can be tested without a model: the HF backend hands in, per layer, the
head-wise attention of one query position over the prompt tokens.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import numpy as np

from engine.llm.chat import PromptSegment
from engine.trace import AttentionStep, Segment

OTHER = "other"  # instructions, chat template, separators: every token not inside a segment
TITLE_CHARS = 120  # a segment named by its own text keeps this much of it (the heatmap shows less, hover all)


def text_title(text: str) -> str:
    """A segment's name when its caller gave none: the start of its text, on one line."""
    return " ".join(text.split())[:TITLE_CHARS]


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
            spans.append(Segment(label=seg.label, start=int(positions[0]), end=int(positions[-1]) + 1, kind=seg.kind,
                                 title=seg.title))
    return tuple(spans)


def prompt_shares(mass: np.ndarray) -> np.ndarray:
    """Rows rescaled to sum to 1: a generated token also attends to the answer so far, which no column shows."""
    totals = mass.sum(axis=-1, keepdims=True)
    return np.divide(mass, totals, out=np.zeros_like(mass), where=totals > 0)


_LABEL = re.compile(r"\s*[A-Za-z][A-Za-z ]{0,24}:")  # a reply's leading "Answer:" the prompt asked for


def first_answer_index(pieces: Sequence[str]) -> int:
    """The generated token where the answer itself starts: past a leading "Label:" the prompt's format asks
    the model to write, and past blanks and punctuation; 0 when nothing follows them."""
    text = "".join(pieces)
    label = _LABEL.match(text)
    skip = label.end() if label else 0
    offset = 0
    for i, piece in enumerate(pieces):
        if offset + len(piece) > skip and any(c.isalnum() for c in piece[max(0, skip - offset):]):
            return i
        offset += len(piece)
    return 0


def attention_steps(
    per_token: np.ndarray,
    token_ids: Sequence[int],
    generated: Sequence[str],
    owner: np.ndarray,
    segments: Sequence[PromptSegment],
    head: int | None = None,
) -> tuple[AttentionStep, AttentionStep]:
    """Two heatmaps: layer × segment for the answer's first generated token, generated token × segment.

    per_token: (generated, layers, heads, prompt_tokens) attention of each generated token's own
    position over the prompt; row 0 is the first token the model wrote, not the template before it.
    """
    labels = tuple(s.label for s in segments) + (OTHER,)
    spans = segment_spans(owner, segments)
    pick = (lambda a: a[..., head, :]) if head is not None else (lambda a: a.mean(axis=-2))
    note = f"head {head}" if head is not None else "mean over heads"
    at = min(first_answer_index(generated), len(per_token) - 1)
    by_layer = prompt_shares(segment_mass(pick(per_token[at]), owner, len(segments)))
    by_token = prompt_shares(segment_mass(pick(per_token).mean(axis=1), owner, len(segments)))
    first = generated[at] if generated else ""
    return (
        AttentionStep(name=f"first answer token {first.strip()!r}: layer × segment", matrix=_rounded(by_layer),
                      x_labels=labels, y_labels=tuple(f"layer {i}" for i in range(by_layer.shape[0])),
                      segments=spans, token=first, token_id=int(token_ids[at]),
                      note=f"where the answer's first token looked (generated token {at + 1}, past the reply's "
                           f"own label): its share of attention over the prompt per segment, {note}"),
        AttentionStep(name="generated token × segment", matrix=_rounded(by_token), x_labels=labels,
                      y_labels=tuple(generated), segments=spans,
                      note=f"each generated token's share of attention over the prompt per segment, {note}, "
                           "mean over layers"),
    )


def _rounded(matrix: np.ndarray) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(round(float(v), 5) for v in row) for row in matrix)
