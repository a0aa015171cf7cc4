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


STATUS_COLOURS = {"ok": "green", "dup": "gray", "trivial": "gray", "empty": "gray"}


def status_badge(step: CalculationStep) -> str:
    """ok / dup / forbidden_token / eval_error / trivial / empty, as the hybrid calculator filters them."""
    return f":{STATUS_COLOURS.get(step.status, 'red')}-badge[{md_text(step.status)}]" if step.status else ""


def render_calculation(step: CalculationStep, *, key: str) -> None:
    if step.title:
        st.markdown(f":material/calculate: **{md_text(step.title)}** {status_badge(step)}".rstrip())
    st.code(calculation_line(step) or "(empty expression)", language=None)
    if step.error:
        st.error(f"Could not evaluate: {md_text(step.error)}", icon=":material/error:")
    elif step.result is None:
        st.caption("No result was recorded for this expression.")
