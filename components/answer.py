"""The answer card: the answer, who produced it, its citations (opening the cited text), and, for
pack questions, the gold answers with EM/F1."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import streamlit as st

from components.safe import md_text
from engine.trace import AnswerStep

NO_MODEL_NOTE = "offline — no language model was involved (retrieval, KG, extractive reader, calculator)"


def render_answer(step: AnswerStep, *, key: str, sources: Mapping[str, tuple[str, str]] | None = None,
                  gold: Sequence[str] = (), scores: tuple[float, float] | None = None) -> None:
    """`sources` maps doc id → (title, text) for the citations; `scores` is (EM, F1) against `gold`."""
    with st.container(border=True, key=f"{key}.card"):
        st.markdown("#### Answer")
        if step.refused:
            st.warning(md_text(step.text), icon=":material/help:")
        elif scores is not None and scores[1] == 0:  # answered, and not a word of it is in the gold answer
            st.error(md_text(step.text), icon=":material/cancel:")
        else:
            st.success(md_text(step.text), icon=":material/check_circle:")
        producer = NO_MODEL_NOTE if step.backend == "offline" else f"{step.backend}: {step.model}"
        st.caption(f"by {producer} · confidence {step.confidence:.2f}")
        if gold:
            line = "gold: " + " | ".join(md_text(g) for g in gold)
            if scores is not None:
                line += f" · EM {scores[0]:.2f} · F1 {scores[1]:.2f}"
            st.markdown(line)
        for doc_id in step.citations:
            title, text = (sources or {}).get(doc_id, ("", ""))
            with st.expander(md_text(f"cites {doc_id}" + (f" — {title}" if title else ""))):
                st.text(text or "(the cited text is not part of this trace)")
