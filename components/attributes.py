"""Predicted question attributes (domain, question type, dynamism…) as badges with their confidences."""

from __future__ import annotations

import streamlit as st

from components.safe import md_text
from engine.trace import AttributeLabel, AttributesStep


def badge_colour(confidence: float) -> str:
    return "green" if confidence >= 0.7 else "blue" if confidence >= 0.4 else "gray"


def attribute_badge(label: AttributeLabel) -> str:
    """Inline markdown badge; md_text escapes `]` and `:` so a label cannot close or restyle it."""
    text = f"{md_text(label.name)}: {md_text(label.value)} · {label.confidence:.0%}"
    return f":{badge_colour(label.confidence)}-badge[{text}]"


def render_attributes(step: AttributesStep, *, key: str) -> None:
    with st.container(key=f"{key}.attributes"):
        if step.title:
            st.markdown(f"**{md_text(step.title)}**")
        if not step.labels:
            st.caption("No attributes were predicted.")
            return
        st.markdown(" ".join(attribute_badge(label) for label in step.labels))
        how = f"predicted by {md_text(step.method)} · " if step.method else ""
        st.caption(f"{how}confidence: green ≥ 70 %, blue ≥ 40 %, grey below")
        if step.votes:
            st.caption("votes: " + " · ".join(md_text(v) for v in step.votes))
