"""Retrieved chunks: a ranked table with score bars and provenance, and the texts with the query's
terms highlighted (escaped first, so a document can never inject markup)."""

from __future__ import annotations

import streamlit as st

from components.glossary import WHY
from components.safe import highlight_terms, md_text
from engine.trace import RetrievalStep


def render_retrieval(step: RetrievalStep, *, key: str) -> None:
    st.markdown(f"**{md_text(step.title)}** · `{step.retriever}` · query: {md_text(step.query[:300])}")
    if not step.hits:
        st.caption("Nothing came back for this query.")
        return
    low = min(h.score for h in step.hits)
    high = max(h.score for h in step.hits)
    rows = [{"rank": h.rank, "score": h.score, "relative": (h.score - low) / (high - low) if high > low else 1.0,
             "title": h.title, "doc": h.doc_id, "why": h.provenance or "—", "text": h.text[:240]}
            for h in step.hits]
    st.dataframe(rows, key=f"{key}.table", hide_index=True, width="stretch", column_config={
        "score": st.column_config.NumberColumn("score", format="%.4f", help="the retriever's own score"),
        "relative": st.column_config.ProgressColumn("vs. best", min_value=0.0, max_value=1.0, format="%.2f",
                                                    help="score relative to the lowest and highest hit of this list"),
        "why": st.column_config.TextColumn("why", help=WHY),
        "text": st.column_config.TextColumn("text", width="large"),
    })
    terms = step.query_terms
    with st.expander("Read the chunks", expanded=False):
        for h in step.hits:
            st.markdown(f"**{h.rank}. {md_text(h.title)}** · `{h.chunk_id}` · score {h.score:.4f}"
                        + (f" · pulled by {md_text(h.provenance)}" if h.provenance else ""))
            st.markdown(highlight_terms(h.text, terms))
