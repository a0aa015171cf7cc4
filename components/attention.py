"""An attention heatmap: rows (layers or generated tokens) × columns (documents, rules, question, other)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from components.safe import md_text
from engine.trace import AttentionStep, Segment

TICK_CHARS = 24


def plain(text: str) -> str:
    """Plotly reads a subset of HTML in labels and hover text: no `<`/`>` from data may reach it."""
    return text.replace("<", "‹").replace(">", "›")


def _short(text: str) -> str:
    return text if len(text) <= TICK_CHARS else text[:TICK_CHARS - 1] + "…"


def _labels(given: tuple[str, ...], count: int, stem: str) -> list[str]:
    """Exactly `count` labels: the saved ones, then numbered ones when a trace saved too few."""
    return [given[i] if i < len(given) else f"{stem} {i}" for i in range(count)]


def _span(segment: Segment | None) -> str:
    return f" ({segment.kind}, tokens {segment.start}–{segment.end})" if segment else ""


def _marked(labels: list[str], highlight: tuple[str, ...]) -> list[str]:
    """A star before highlighted labels (e.g. the gold documents)."""
    return [f"★ {label}" if label in highlight else label for label in labels]


CROWDED = 12  # x labels drawn slanted up to this many columns, upright beyond
UNREADABLE = 60  # beyond this many columns the labels are left to the hover text


def heatmap_figure(step: AttentionStep, head: int | None = None) -> go.Figure | None:
    """None when there is nothing to draw. Cells are placed by index, not by label, so two rows that
    carry the same label (a repeated generated token) stay two rows. `head` picks one of `step.heads`."""
    matrix = step.heads[head] if head is not None and 0 <= head < len(step.heads) else step.matrix
    width = max((len(row) for row in matrix), default=0)
    if not matrix or width == 0:
        return None
    z = [list(row) + [None] * (width - len(row)) for row in matrix]
    xs = _marked(_labels(step.x_labels, width, "column"), step.highlight)
    ys = _marked(_labels(step.y_labels, len(z), "row"), step.highlight)
    segments = {s.label: s for s in step.segments}
    hover = [[f"row: {plain(y)}<br>column: {plain(x)}{plain(_span(segments.get(x.removeprefix('★ '))))}"
              for x in xs] for y in ys]
    figure = go.Figure(go.Heatmap(
        z=z, x=list(range(width)), y=list(range(len(z))), text=hover, colorscale="Blues",
        hovertemplate="%{text}<br>value: %{z:.4f}<extra></extra>", colorbar={"title": {"text": "mass"}}))
    figure.update_layout(
        title={"text": plain(step.name)}, height=min(max(140 + 22 * len(z), 280), 760),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        xaxis={"tickmode": "array", "tickvals": list(range(width)), "ticktext": [plain(_short(x)) for x in xs],
               # many columns: upright labels stop overlapping; hundreds (a token view): hover instead
               "tickangle": -35 if width <= CROWDED else -90, "showticklabels": width <= UNREADABLE,
               "title": {"text": "" if width <= UNREADABLE else f"{width} columns — hover a cell for its label"}},
        yaxis={"tickmode": "array", "tickvals": list(range(len(z))), "ticktext": [plain(_short(y)) for y in ys],
               "autorange": "reversed"})
    return figure


def render_attention(step: AttentionStep, *, key: str) -> None:
    head = None
    if step.heads:
        options = ["mean over heads", *(f"head {i}" for i in range(len(step.heads)))]
        chosen = st.radio("Heads", options, horizontal=True, key=f"{key}.head")
        head = options.index(chosen) - 1 if chosen in options[1:] else None
    figure = heatmap_figure(step, head)
    if figure is None:
        st.caption(f"{md_text(step.name or 'attention')}: there was nothing to show (an empty matrix).")
        return
    st.plotly_chart(figure, key=key, width="stretch")
    notes = [step.note] + ([f"run: {step.group}"] if step.group else []) + \
        (["★ = gold (supporting) document"] if step.highlight else [])
    st.caption(md_text(" · ".join(n for n in notes if n)))
