"""A feature table (e.g. R2AG's r/γ/ζ per document, a QDM probability): columns and rows as saved."""

from __future__ import annotations

import streamlit as st

from components.glossary import FEATURE_COLUMNS
from components.safe import md_text
from engine.trace import FeaturesStep, Scalar


def _family(value: Scalar) -> type:
    return bool if isinstance(value, bool) else float if isinstance(value, int | float) else str


def _column_names(step: FeaturesStep) -> list[str]:
    """The saved names, repeated ones suffixed, plus numbered names for cells beyond them."""
    names: list[str] = []
    for column in step.columns:
        name, n = column or "column", 2
        while name in names:
            name, n = f"{column} ({n})", n + 1
        names.append(name)
    width = max([len(names), *(len(r) for r in step.rows)])
    return names + [f"column {i + 1}" for i in range(len(names), width)]


def feature_records(step: FeaturesStep) -> list[dict[str, Scalar]]:
    """Row dicts with short rows padded. A column mixing numbers, booleans and text is shown as text,
    since a table column has one type (Arrow would otherwise reject it)."""
    names = _column_names(step)
    rows = [[row[i] if i < len(row) else None for i in range(len(names))] for row in step.rows]
    mixed = {i for i in range(len(names)) if len({_family(r[i]) for r in rows if r[i] is not None}) > 1}
    return [{name: (str(r[i]) if i in mixed and r[i] is not None else r[i]) for i, name in enumerate(names)}
            for r in rows]


def render_features(step: FeaturesStep, *, key: str) -> None:
    if step.title:
        st.markdown(f"**{md_text(step.title)}**")
    if not step.rows:
        st.caption("No feature rows in this step.")
        return
    records = feature_records(step)
    hints = {name: st.column_config.Column(name, help=FEATURE_COLUMNS[name])
             for name in (records[0] if records else {}) if name in FEATURE_COLUMNS}
    st.dataframe(records, key=f"{key}.features", hide_index=True, width="stretch", column_config=hints)
    if step.note:
        st.caption(md_text(step.note))
