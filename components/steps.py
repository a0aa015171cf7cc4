"""Dispatch: one renderer per step kind; an unknown kind is shown as raw JSON, never rejected."""

from __future__ import annotations

from collections.abc import Callable

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
from engine.trace import Step, step_to_dict

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


def render_step(step: Step, *, key: str) -> None:
    renderer = RENDERERS.get(step.kind)
    if renderer is None:
        with st.expander(f"{step.kind}: {step.title} (shown as saved: this version cannot draw it)"):
            st.json(step_to_dict(step))
        return
    renderer(step, key=key)
