"""The reliability diagram of an evaluation: per method, accuracy against confidence bin by bin."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import plotly.graph_objects as go
import streamlit as st

from components.glossary import ECE


class ReliabilityBin(Protocol):
    """One confidence interval of a diagram (engine.evaluation.calibration.ReliabilityBin has it)."""

    lower: float
    upper: float
    count: int
    confidence: float | None
    accuracy: float | None


class Reliability(Protocol):
    """A method's diagram as the evaluation computed it (engine.evaluation.calibration.Reliability)."""

    bins: Sequence[ReliabilityBin]
    answered: int
    refused: int
    ece: float | None

# Under this many answers one answer moves a bin's accuracy by several points: the ECE is a rough figure.
FEW_ANSWERS = 30

_HOW = ("Answers are grouped by their confidence into ten bins (0–0.1, …, 0.9–1). Each point is one bin of one "
        "method: the mean confidence of its answers against the share of them that were correct; bigger points "
        "hold more answers. ECE is the gap between the two, averaged over the bins weighted by their answers. "
        "Refused questions make no claim and are left out; the legend counts them.")


def _legend(label: str, diagram: Reliability) -> str:
    ece = "–" if diagram.ece is None else f"{diagram.ece:.2f}"
    refused = f", {diagram.refused} refused" if diagram.refused else ""
    return f"{label} · ECE {ece} ({diagram.answered} answered{refused})"


def reliability_figure(diagrams: Mapping[str, Reliability], labels: Mapping[str, str]) -> go.Figure:
    """One trace per method: a point per non-empty bin at (mean confidence, accuracy), sized by its count,
    so a point on the dashed diagonal is a bin whose confidence matched its accuracy."""
    figure = go.Figure()
    largest = max((b.count for d in diagrams.values() for b in d.bins), default=0) or 1
    for method, diagram in diagrams.items():
        filled = [b for b in diagram.bins if b.count]
        label = labels.get(method, method)
        figure.add_scatter(
            x=[b.confidence for b in filled], y=[b.accuracy for b in filled], mode="lines+markers",
            name=_legend(label, diagram), meta=label,
            marker={"size": [8 + 14 * (b.count / largest) ** 0.5 for b in filled]},
            customdata=[(b.lower, b.upper, b.count) for b in filled],
            hovertemplate=("confidence %{customdata[0]:.1f}–%{customdata[1]:.1f}: %{customdata[2]} answers<br>"
                           "mean confidence %{x:.2f}, accuracy %{y:.2f}<extra>%{meta}</extra>"),
        )
    # Added after the methods, so each method keeps the colour it has in the page's other charts; the
    # caption names the diagonal, so the legend (below the plot, clear of the toolbar) lists methods only.
    figure.add_scatter(x=[0, 1], y=[0, 1], mode="lines", name="perfectly calibrated", hoverinfo="skip",
                       showlegend=False, line={"dash": "dash", "color": "#9e9e9e", "width": 1})
    figure.update_layout(
        height=460, margin={"l": 10, "r": 10, "t": 30, "b": 10},
        xaxis={"range": [-0.02, 1.02], "title": {"text": "confidence (mean in bin)"}, "dtick": 0.1},
        yaxis={"range": [-0.03, 1.05], "title": {"text": "accuracy (share correct)"}, "dtick": 0.2},
        legend={"orientation": "h", "yanchor": "top", "y": -0.15, "x": 0},
    )
    return figure


def render_reliability(diagrams: Mapping[str, Reliability], *, labels: Mapping[str, str], key: str) -> None:
    """The diagram with the one-line ECE hint; says so instead when no method answered anything."""
    st.caption(f"{ECE} Points under the dashed diagonal are over-confident.", help=_HOW)
    if not any(d.answered for d in diagrams.values()):
        st.info("No method answered any question, so there is no confidence to compare with accuracy.")
        return
    few = [f"{labels.get(m, m)} {d.answered}" for m, d in diagrams.items() if 0 < d.answered < FEW_ANSWERS]
    if few:
        st.warning(f"Few answers to judge calibration by (answered: {', '.join(few)}; under {FEW_ANSWERS} "
                   "each): one answer more or less moves these ECEs a lot. Evaluate on more questions for a "
                   "figure to rely on.", icon=":material/warning:")
    st.plotly_chart(reliability_figure(diagrams, labels), key=key, width="stretch")
