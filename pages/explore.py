"""Explore: ask a question with a method and watch its steps arrive."""

from __future__ import annotations

import streamlit as st

import ui_state
from components.steps import render_step
from engine.errors import RagscopeError
from engine.methods.base import METHODS, method_ids

workbench = ui_state.current_workbench()
pack = workbench.pack

st.header(pack.info.title or pack.info.name)
if pack.info.description:
    st.caption(pack.info.description)

ids = method_ids()
method = st.selectbox("Method", ids, key="explore.method", format_func=lambda m: METHODS[m].label)
st.caption(f"{METHODS[method].description} — *{METHODS[method].paper}*")


def _use_example() -> None:
    st.session_state["explore.question"] = st.session_state["explore.example"] or ""


st.selectbox("Example questions from the pack", [q.question for q in pack.questions], index=None,
             key="explore.example", on_change=_use_example, placeholder="Choose one, or type your own below")
with st.form("explore.ask"):
    question = st.text_area("Question", key="explore.question", height=80,
                            placeholder="e.g. Where was the doctoral advisor of … born?")
    asked = st.form_submit_button("Run", type="primary")

if asked:
    qid = next((q.id for q in pack.questions if q.question == question.strip()), "")
    try:
        run = workbench.start(question, method, question_id=qid)
    except RagscopeError as exc:
        st.error(str(exc))
        st.stop()
    with st.status("Running…", expanded=True) as status:
        with st.spinner("Preparing the index (first run only)…"):
            workbench.retrieval.ensure_index()
        for i, step in enumerate(run):
            render_step(step, key=f"explore.step.{i}")
        status.update(label=f"Done in {run.trace.totals.latency_ms:.0f} ms", state="complete", expanded=True)
    ui_state.run_store().save(run.trace)
    st.download_button("Download trace JSON", run.trace.to_json(indent=2), file_name=f"trace-{run.trace.id}.json",
                       mime="application/json", key="explore.download")
else:
    st.info("Pick an example or type a question, then press **Run**.")
