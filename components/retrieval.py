"""Retrieved chunks: a ranked table with score bars and provenance, and the texts with the query's
terms highlighted (escaped first, so a document can never inject markup). For a pack question, the chunks
of its supporting documents are marked gold (DESIGN §10's relevance, as recall@k and nDCG judge the list)."""

from __future__ import annotations

import streamlit as st

from components.glossary import GOLD, WHY
from components.safe import highlight_terms, md_text
from engine.trace import RetrievalStep

GOLD_MARK = "✓"


def render_retrieval(step: RetrievalStep, *, key: str, gold: frozenset[str] = frozenset()) -> None:
    """`gold`: the supporting doc ids of the pack question asked (engine.app.runs.supporting_docs); empty for a
    question of the user's own, which shows no gold column at all rather than a column of blanks."""
    st.markdown(f"**{md_text(step.title)}** · `{step.retriever}` · query: {md_text(step.query[:300])}")
    if not step.hits:
        st.caption("Nothing came back for this query.")
        return
    if gold:
        st.caption(gold_found(step, gold), help=GOLD)
    scores = [h.score for h in step.hits if h.score is not None]
    low, high = min(scores, default=0.0), max(scores, default=0.0)
    rows = [{"rank": h.rank, "score": "no score" if h.score is None else f"{h.score:.4f}",
             "relative": None if h.score is None else (h.score - low) / (high - low) if high > low else 1.0,
             "title": h.title, "doc": h.doc_id, "why": h.provenance or "—", "text": h.text[:240]}
            for h in step.hits]
    if gold:
        rows = [{"gold": GOLD_MARK if h.doc_id in gold else "", **row} for h, row in zip(step.hits, rows)]
    st.dataframe(rows, key=f"{key}.table", hide_index=True, width="stretch", column_config={
        "gold": st.column_config.TextColumn("gold", width=48, alignment="center", help=GOLD),
        "score": st.column_config.TextColumn("score", help="the retriever's own score; many LangChain retrievers "
                                                           "give none"),
        "relative": st.column_config.ProgressColumn("vs. best", min_value=0.0, max_value=1.0, format="%.2f",
                                                    help="score relative to the lowest and highest hit of this list"),
        "why": st.column_config.TextColumn("why", help=WHY),
        "text": st.column_config.TextColumn("text", width="large"),
    })
    terms = step.query_terms
    with st.expander("Read the chunks", expanded=False):
        for h in step.hits:
            mark = f":green-badge[{GOLD_MARK} gold] " if h.doc_id in gold else ""
            st.markdown(f"{mark}**{h.rank}. {md_text(h.title)}** · `{h.chunk_id}` · {shown_score(h.score)}"
                        + (f" · pulled by {md_text(h.provenance)}" if h.provenance else ""))
            st.markdown(highlight_terms(h.text, terms))


def shown_score(score: float | None) -> str:
    """"score 0.8123", or "no score" when the retriever gave none: never a made-up number."""
    return "no score" if score is None else f"score {score:.4f}"


def gold_found(step: RetrievalStep, gold: frozenset[str]) -> str:
    """"2 of 2 gold documents retrieved": how many of the question's supporting docs this list holds."""
    found = len(gold & {h.doc_id for h in step.hits})
    return f"{found} of {len(gold)} gold document{'s' if len(gold) != 1 else ''} retrieved"
