"""A failure inside a run: a warning when the run went on without it, an error when it could not."""

from __future__ import annotations

import streamlit as st

from components.safe import md_text
from engine.trace import ErrorStep


def render_error(step: ErrorStep, *, key: str) -> None:
    title = f"**{md_text(step.title)}** · " if step.title else ""
    if step.recoverable:
        st.warning(f"{title}{md_text(step.message)} — the run went on.", icon=":material/warning:")
    else:
        st.error(f"{title}{md_text(step.message)} — the run could not go on.", icon=":material/error:")
