"""A finished (or replayed) trace: the round controls, the chosen round's steps and its graph."""

from __future__ import annotations

import time
from collections.abc import Sequence

import streamlit as st

from components.retrieval import render_retrieval
from components.steps import render_step
from components.timeline import advance, pick_round, round_label
from engine.trace import AnswerStep, AttentionStep, RetrievalStep, Step, Trace
from engine.trace_graph import rounds_of

PLAY_SECONDS = 1.5


def sources_of(trace: Trace) -> dict[str, tuple[str, str]]:
    """doc id → (title, text) from every chunk the trace retrieved, so citations can be opened."""
    sources: dict[str, tuple[str, str]] = {}
    for step in trace.steps:
        if isinstance(step, RetrievalStep):
            for hit in step.hits:
                title, text = sources.get(hit.doc_id, (hit.title, ""))
                if hit.text not in text:
                    text = f"{text}\n…\n{hit.text}" if text else hit.text
                sources[hit.doc_id] = (title, text)
    return sources


def render_trace(trace: Trace, *, key: str, gold: frozenset[str] = frozenset()) -> None:
    """The chosen round's steps beside its graph, with the round controls; the page shows the answer card.
    `gold`: the pack question's supporting doc ids (engine.app.runs.supporting_docs), marked in retrieval steps."""
    iterations = rounds_of(trace)
    chosen, playing = pick_round(iterations, key=f"{key}.round", trace_id=trace.id)
    from components.graph import has_graph, render_graph  # pyvis and networkx only when a trace is shown

    steps_col, graph_col = st.columns([3, 2]) if has_graph(trace.steps, chosen) else (st.container(), None)
    with steps_col:
        st.markdown(f"##### {round_label(chosen).capitalize()}")
        shown = [s for s in trace.steps if s.iteration == chosen and not isinstance(s, AnswerStep)]
        if not shown:
            st.caption("Nothing but the answer happened in this round.")
        compared = _compared_groups(shown)
        for i, step in enumerate(shown):
            if compared and isinstance(step, AttentionStep) and step.group in compared:
                continue  # drawn below, one column per run
            if gold and isinstance(step, RetrievalStep):  # the one renderer that takes the gold docs
                render_retrieval(step, key=f"{key}.{trace.id}.{chosen}.{i}", gold=gold)
            else:
                render_step(step, key=f"{key}.{trace.id}.{chosen}.{i}")
        if compared:
            _render_side_by_side(shown, compared, key=f"{key}.{trace.id}.{chosen}.side")
    if graph_col is not None:
        with graph_col:
            render_graph(trace.steps, chosen, key=f"{key}.graph.{trace.id}", trace=trace)
    if playing:
        time.sleep(PLAY_SECONDS)
        advance(iterations, key=f"{key}.round")
        st.rerun()  # also at the end, so the button reads Play again


def _compared_groups(steps: Sequence[Step]) -> tuple[str, ...]:
    """The LLM runs whose attention maps a round holds (e.g. R2AG and plain RAG over the same documents),
    when there are two or more of them to compare; a single run's maps are drawn in place."""
    groups = dict.fromkeys(s.group for s in steps if isinstance(s, AttentionStep) and s.group and not s.heads)
    return tuple(groups) if len(groups) > 1 else ()


def _render_side_by_side(steps: Sequence[Step], groups: Sequence[str], *, key: str) -> None:
    st.markdown("###### Attention, side by side")
    for column, group in zip(st.columns(len(groups)), groups):
        with column:
            st.markdown(f"**{group}**")
            for i, step in enumerate(s for s in steps if isinstance(s, AttentionStep) and s.group == group):
                render_step(step, key=f"{key}.{group}.{i}")
