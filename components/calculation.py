"""A calculator call: `expression = result`, or the expression and why it could not be evaluated."""

from __future__ import annotations

import streamlit as st

from components.safe import md_text
from engine.trace import CalculationStep


def calculation_line(step: CalculationStep) -> str:
    if step.result is None:
        return step.expression
    # 12 significant digits hide float noise (0.1 + 0.2) but keep real precision.
    return f"{step.expression} = {step.result:.12g}"


def render_calculation(step: CalculationStep, *, key: str) -> None:
    if step.title:
        st.markdown(f":material/calculate: **{md_text(step.title)}**")
    st.code(calculation_line(step) or "(empty expression)", language=None)
    if step.error:
        st.error(f"Could not evaluate: {md_text(step.error)}", icon=":material/error:")
    elif step.result is None:
        st.caption("No result was recorded for this expression.")
