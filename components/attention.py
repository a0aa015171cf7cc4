"""An attention heatmap: rows (layers or generated tokens) × columns (documents, rules, question, other)."""

from __future__ import annotations

import plotly.graph_objects as go
import streamlit as st

from components.safe import md_text
from engine.trace import AttentionStep, Segment

TICK_CHARS = 24
OTHER = "other"  # the last column of a prompt-segment map as saved traces label it (engine.llm.attention.OTHER)


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
TEMPLATE = "instructions & template"  # how the OTHER column reads
SCAFFOLD_KINDS = frozenset({"question"})  # prompt parts that are not evidence, besides the template ("other")


def evidence_columns(step: AttentionStep) -> tuple[int, ...]:
    """The columns that hold evidence in a prompt-segment map (its last column is OTHER); () for any
    other map (R2-Former ranks, a token view) or one with no evidence, which are drawn as saved."""
    if not step.x_labels or step.x_labels[-1] != OTHER:
        return ()
    kinds = {s.label: s.kind for s in step.segments}
    return tuple(i for i, x in enumerate(step.x_labels[:-1]) if kinds.get(x) not in SCAFFOLD_KINDS)


def _evidence_shares(z: list[list[float | None]], columns: tuple[int, ...]) -> list[list[float | None]]:
    """Each row renormalised over the evidence columns: the template's mass would wash out the scale;
    a row that gave evidence nothing stays blank rather than pretending to an even split."""
    out = []
    for row in z:
        cells = [row[c] or 0.0 for c in columns]
        total = sum(cells)
        out.append([v / total if total > 0 else None for v in cells])
    return out


def scaffold_share(step: AttentionStep) -> float | None:
    """Mean share of a row's attention that went to the question and template, for the caption."""
    columns = evidence_columns(step)
    rows = [row for row in step.matrix if sum(row) > 0]
    if not columns or not rows:
        return None
    return sum(1 - sum(row[c] for c in columns if c < len(row)) / sum(row) for row in rows) / len(rows)


def _column_names(step: AttentionStep, width: int) -> tuple[list[str], list[str]]:
    """Tick text (a segment's title, else its label) and hover text (full title, label, kind, token span)."""
    segments = {s.label: s for s in step.segments}
    ticks, hovers = [], []
    for label in _labels(step.x_labels, width, "column"):
        segment = segments.get(label)
        title = segment.title if segment and segment.title else TEMPLATE if label == OTHER and not segment else label
        star = "★ " if label in step.highlight else ""
        ticks.append(star + _short(title))
        named = f"{title} [{label}]" if title != label else label
        hovers.append(plain(star + named + _span(segment)))
    return ticks, hovers


def heatmap_figure(step: AttentionStep, head: int | None = None, scaffolding: bool = False) -> go.Figure | None:
    """None when there is nothing to draw. Cells are placed by index, not by label, so two rows that
    carry the same label (a repeated generated token) stay two rows. `head` picks one of `step.heads`.
    A prompt-segment map shows evidence only, each row renormalised to 1, unless `scaffolding`."""
    matrix = step.heads[head] if head is not None and 0 <= head < len(step.heads) else step.matrix
    width = max((len(row) for row in matrix), default=0)
    if not matrix or width == 0:
        return None
    z: list[list[float | None]] = [list(row) + [None] * (width - len(row)) for row in matrix]
    ticks, hovers = _column_names(step, width)
    columns = () if scaffolding else evidence_columns(step)
    if columns:
        z = _evidence_shares(z, columns)
        ticks, hovers = [ticks[c] for c in columns], [hovers[c] for c in columns]
    width = len(ticks)
    ys = _marked(_labels(step.y_labels, len(z), "row"), step.highlight)
    text = [[f"row: {plain(y)}<br>column: {x}" for x in hovers] for y in ys]
    scale = "share of evidence" if columns else "mass"
    figure = go.Figure(go.Heatmap(
        z=z, x=list(range(width)), y=list(range(len(z))), text=text, colorscale="Blues",
        hovertemplate="%{text}<br>" + scale + ": %{z:.4f}<extra></extra>", colorbar={"title": {"text": scale}}))
    figure.update_layout(
        title={"text": plain(step.name)}, height=min(max(140 + 22 * len(z), 280), 760),
        margin={"l": 10, "r": 10, "t": 50, "b": 10},
        xaxis={"tickmode": "array", "tickvals": list(range(width)), "ticktext": [plain(t) for t in ticks],
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
    share = scaffold_share(step)
    scaffolding = share is not None and st.toggle(
        "Show the question and prompt template", key=f"{key}.scaffolding",
        help="Off: each row is renormalised over the evidence only, so the template's mass does not wash out "
             "the scale. On: the saved shares over the whole prompt.")
    figure = heatmap_figure(step, head, scaffolding)
    if figure is None:
        st.caption(f"{md_text(step.name or 'attention')}: there was nothing to show (an empty matrix).")
        return
    st.plotly_chart(figure, key=key, width="stretch")
    notes = [step.note] + ([f"run: {step.group}"] if step.group else []) + \
        (["★ = gold (supporting) document"] if step.highlight else []) + \
        ([f"evidence only, each row rescaled to 1; the question and template took {share:.0%} on average"]
         if share is not None and not scaffolding else [])
    st.caption(md_text(" · ".join(n for n in notes if n)))
