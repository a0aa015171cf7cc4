"""Two evaluations compared (engine.evaluation.regression): the metric deltas with their paired interval, and the
questions that flipped between right and wrong, one of which can be selected to look at both answers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Protocol

import streamlit as st

from components.safe import md_text


# What this draws of engine.evaluation.regression's dataclasses (components import only the trace and params).
class Interval(Protocol):
    estimate: float
    low: float
    high: float


class MetricDelta(Protocol):
    method: str
    scope: str
    metric: str
    before: float
    after: float
    delta: Interval
    changed: int

    @property
    def n(self) -> int: ...


class Flip(Protocol):
    kind: str
    method: str
    question_id: str
    type: str
    question: str
    gold: str
    answer_before: str
    answer_after: str
    outcome_before: str
    outcome_after: str
    confidence_before: float
    confidence_after: float


class Unpaired(Protocol):
    method: str
    only_before: int
    only_after: int


class EvaluationComparison(Protocol):
    rows: Sequence[MetricDelta]
    flips: Sequence[Flip]
    unpaired: Sequence[Unpaired]
    paired: int
    differences: Sequence[str]
    warnings: Sequence[str]
    seed: int


KINDS = {"broken": "✗ broken (was right)", "fixed": "✓ fixed (now right)", "now refuses": "now refuses",
         "now answers": "now answers"}
INTERVAL_HELP = ("after − before, averaged over the n questions both evaluations scored. The 95 % interval is a "
                 "paired percentile bootstrap: the n questions are resampled 2000 times, each question's two scores "
                 "together, with a fixed seed. An interval that holds 0 means the change may be chance.")
SCORE = st.column_config.NumberColumn(format="%.3f")


def render_comparison(comparison: EvaluationComparison, *, key: str, labels: Mapping[str, str] | None = None
                      ) -> Flip | None:
    """The settings' differences, the deltas table and the flipped questions; returns the flip selected, if any."""
    labels = labels or {}
    for warning in comparison.warnings:
        st.warning(md_text(warning), icon=":material/warning:")
    if comparison.differences:
        st.markdown("**What differs:** " + "; ".join(md_text(d) for d in comparison.differences))
    else:
        st.markdown("**What differs:** nothing found in pack, model or parameters.")
    for unpaired in comparison.unpaired:
        st.info(md_text(f"{labels.get(unpaired.method, unpaired.method)}: {unpaired.only_before} question(s) only "
                        f"before, {unpaired.only_after} only after. They are left out of every delta."))
    _deltas(comparison, key, labels)
    return _flips(comparison, key, labels)


def _deltas(comparison: EvaluationComparison, key: str, labels: Mapping[str, str]) -> None:
    st.markdown(f"**Metric deltas** over {comparison.paired} (method, question) pairs answered on both sides")
    moved_only = st.toggle("Only metrics where some question changed", value=True, key=f"{key}.moved")
    rows = [_delta_row(r, labels) for r in comparison.rows if r.changed or not moved_only]
    st.caption(f"delta = after − before; 95 % interval: paired bootstrap over the questions (seed "
               f"{comparison.seed}). An interval holding 0 may be chance.", help=INTERVAL_HELP)
    if not rows:
        st.info("No question scored differently on any metric.")
        return
    st.dataframe(rows, key=f"{key}.deltas", hide_index=True, width="stretch", column_config={
        "method": st.column_config.TextColumn(pinned=True), "before": SCORE, "after": SCORE,
        "delta": st.column_config.NumberColumn(format="%+.3f", help=INTERVAL_HELP),
        "95 % interval": st.column_config.TextColumn(help=INTERVAL_HELP),
        "n": st.column_config.NumberColumn(help="questions scored on both sides (a metric without gold documents "
                                                "on a side leaves that question out)"),
        "changed": st.column_config.NumberColumn(help="of the n questions, how many scored differently")})


def _delta_row(row: MetricDelta, labels: Mapping[str, str]) -> dict[str, object]:
    return {"method": labels.get(row.method, row.method), "scope": row.scope, "metric": row.metric,
            "before": row.before, "after": row.after, "delta": row.delta.estimate,
            "95 % interval": f"[{row.delta.low:+.3f}, {row.delta.high:+.3f}]", "n": row.n, "changed": row.changed}


def _flips(comparison: EvaluationComparison, key: str, labels: Mapping[str, str]) -> Flip | None:
    flips = comparison.flips
    st.markdown(f"**Flipped questions** ({len(flips)}): right ↔ not right, or refusing ↔ answering")
    if not flips:
        st.caption("No question changed between right and not right, nor between refusing and answering.")
        return None
    st.caption("Select a row to see both answers and open either run in Explore.")
    table = [{"change": KINDS.get(f.kind, f.kind), "method": labels.get(f.method, f.method),
              "question_id": f.question_id, "type": f.type, "outcome": f"{f.outcome_before} → {f.outcome_after}",
              "confidence before": f.confidence_before, "confidence after": f.confidence_after,
              "question": f.question} for f in flips]
    event = st.dataframe(table, key=f"{key}.flips", hide_index=True, width="stretch", on_select="rerun",
                         selection_mode="single-row", column_config={
                             "question": st.column_config.TextColumn(width="large"),
                             "confidence before": st.column_config.NumberColumn("conf. before", format="%.2f",
                                                                                width="small"),
                             "confidence after": st.column_config.NumberColumn("conf. after", format="%.2f",
                                                                               width="small")})
    rows = event.selection.rows
    return flips[rows[0]] if rows and rows[0] < len(flips) else None


def render_flip(flip: Flip, *, method: str = "", before: str = "Before", after: str = "After") -> None:
    """The question, its gold answer, and both answers side by side with their outcome and confidence."""
    st.markdown(f"**{md_text(method or flip.method)} · {md_text(flip.question_id)}** · {md_text(flip.question)}")
    st.caption(f"Gold: {md_text(flip.gold)}")
    for column, title, answer, outcome, confidence in zip(
            st.columns(2), (before, after), (flip.answer_before, flip.answer_after),
            (flip.outcome_before, flip.outcome_after), (flip.confidence_before, flip.confidence_after)):
        with column.container(border=True):
            st.markdown(f"**{md_text(title)}** · {md_text(outcome)} · confidence {confidence:.2f}")
            st.markdown(md_text(answer) or "_(no answer)_")
