"""Renderers for steps. Document and model text is always shown as text, never as HTML."""

from __future__ import annotations

import streamlit as st

from engine.trace import AnswerStep, CalculationStep, DecisionStep, ErrorStep, RetrievalStep, Step


def render_retrieval(step: RetrievalStep, *, key: str) -> None:
    st.markdown(f"**{step.title}** · query: `{step.query[:200]}`")
    rows = [{"rank": h.rank, "score": round(h.score, 4), "title": h.title, "doc": h.doc_id,
             "chunk": h.chunk_id, "text": h.text, "why": h.provenance} for h in step.hits]
    top = max((h.score for h in step.hits), default=1.0) or 1.0
    st.dataframe(rows, key=key, hide_index=True, width="stretch",
                 column_config={"score": st.column_config.ProgressColumn("score", min_value=0.0, max_value=top,
                                                                         format="%.3f")})


def render_answer(step: AnswerStep, *, key: str) -> None:
    box = st.warning if step.refused else st.success
    with st.container(border=True, key=key):
        st.caption("Answer")
        box(step.text, icon=":material/help:" if step.refused else ":material/check_circle:")
        st.caption(f"confidence {step.confidence:.2f} · cites {', '.join(step.citations) or 'nothing'} · "
                   f"by {step.backend}: {step.model}")


def render_calculation(step: CalculationStep, *, key: str) -> None:
    st.code(f"{step.expression} = {step.result}" if not step.error else f"{step.expression}  # {step.error}")


def render_decision(step: DecisionStep, *, key: str) -> None:
    st.info(f"{step.action}: {step.detail}" if step.detail else step.action)


def render_error(step: ErrorStep, *, key: str) -> None:
    st.error(step.message)


RENDERERS = {
    "retrieval": render_retrieval,
    "answer": render_answer,
    "calculation": render_calculation,
    "decision": render_decision,
    "error": render_error,
}


def render_step(step: Step, *, key: str) -> None:
    renderer = RENDERERS.get(step.kind)
    if renderer is None:
        with st.expander(f"{step.kind}: {step.title}"):
            st.json({"kind": step.kind, "title": step.title, "iteration": step.iteration})
        return
    renderer(step, key=key)
