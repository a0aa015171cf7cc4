"""A failure inside a run: a warning when the run went on without it, an error when it could not. A failed
backend (model server, vector store) says that the answer rests on it (issue 26)."""

from __future__ import annotations

import streamlit as st

from components.safe import md_text
from engine.trace import ErrorStep

BACKEND_NOTE = " A backend failed: the answer rests on this failure, not on what the method gives with it working."


def render_error(step: ErrorStep, *, key: str) -> None:
    title = f"**{md_text(step.title)}** · " if step.title else ""
    note = BACKEND_NOTE if step.backend_failure else ""
    if step.recoverable:
        st.warning(f"{title}{md_text(step.message)} — the run went on.{note}", icon=":material/warning:")
    else:
        st.error(f"{title}{md_text(step.message)} — the run could not go on.{note}", icon=":material/error:")
