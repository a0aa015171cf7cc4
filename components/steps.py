"""Dispatch: one renderer per step kind; any other kind is drawn from its fields, never rejected.

A kind added to `engine.trace` shows in the UI before anyone writes its `render_<kind>` (DESIGN §1), and a
kind from a newer version (an `UnknownStep`) opens as saved (STYLE 21).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from components.answer import render_answer
from components.attention import render_attention
from components.attributes import render_attributes
from components.calculation import render_calculation
from components.decision import render_decision
from components.error import render_error
from components.features import render_features
from components.graph_delta import render_graph_delta
from components.llm_call import render_llm_call
from components.retrieval import render_retrieval
from components.rules import render_rules_matched
from components.safe import md_text
from engine.trace import Step, UnknownStep, saved_kind, step_payload

RENDERERS: dict[str, Callable[..., None]] = {
    "rules_matched": render_rules_matched,
    "retrieval": render_retrieval,
    "graph_delta": render_graph_delta,
    "decision": render_decision,
    "llm_call": render_llm_call,
    "attention": render_attention,
    "features": render_features,
    "attributes": render_attributes,
    "calculation": render_calculation,
    "answer": render_answer,
    "error": render_error,
}


Scalar = str | int | float | bool | None


def render_step(step: Step, *, key: str) -> None:
    RENDERERS.get(step.kind, render_generic)(step, key=key)


def render_generic(step: Step, *, key: str) -> None:
    """One line per scalar field, a table per list of flat records, JSON for anything else; all of it as text."""
    note = " (shown as saved: this version cannot draw it)" if isinstance(step, UnknownStep) else ""
    with st.expander(f"{md_text(saved_kind(step))}: {md_text(step.title)}{note}"):
        for name, value in step_payload(step).items():
            _render_field(name, value)


def _render_field(name: str, value: Any) -> None:
    if isinstance(value, Scalar):
        st.markdown(f"**{md_text(name)}:** {md_text(str(value))}")
        return
    st.markdown(f"**{md_text(name)}**")
    if isinstance(value, list) and value and all(isinstance(v, dict) and all(isinstance(x, Scalar) for x in v.values())
                                                 for v in value):
        st.dataframe(value, hide_index=True)
    else:
        st.json(value)
