"""Demo tour: one example question per method, played round by round with plain-language captions."""

from __future__ import annotations

import streamlit as st

import ui_state
from components.captions import STEP_CAPTIONS
from components.safe import md_text
from components.trace_view import render_trace
from engine.methods.base import METHODS, method_ids

# The question type that shows each method at its best; any pack question works as a fallback.
SHOWCASE_TYPES = {"vanilla": "factoid", "rulerag": "rule", "hybrid": "numeric", "r2ag": "comparison",
                  "tog2": "multi_hop", "ras": "multi_hop"}
_TRACES = "demo.traces"

workbench = ui_state.current_workbench()
pack = workbench.pack


def _showcase_question(method: str):
    wanted = SHOWCASE_TYPES.get(method)
    return next((q for q in pack.questions if q.type == wanted), pack.questions[0] if pack.questions else None)


st.header("Demo tour")
st.markdown("Each stop asks one question with one method and plays what it did, round by round. "
            "Press **Start the tour**, then sit back — or use Prev / Next to go at your own pace.")
if not pack.questions:
    st.warning("This pack has no example questions (questions.jsonl); pick another pack in the sidebar.")
    st.stop()
if st.button("Start the tour", type="primary", key="demo.start"):
    traces = {}
    bar = st.progress(0.0, text="Asking…")
    tour = sorted(method_ids(), key=lambda m: m != "vanilla")  # the baseline first, then what improves on it
    for i, method in enumerate(tour):
        question = _showcase_question(method)
        traces[method] = workbench.ask(question.question, method, question_id=question.id)
        bar.progress((i + 1) / len(tour), text=f"{METHODS[method].label} done")
    bar.empty()
    st.session_state[_TRACES] = traces
    for method in traces:  # every stop starts playing from its first round
        st.session_state[f"demo.view.{method}.round"] = None
        st.session_state[f"demo.view.{method}.round.playing"] = True

traces = st.session_state.get(_TRACES, {})
if traces:
    stop = st.radio("Stop", list(traces), key="demo.stop", horizontal=True, format_func=lambda m: METHODS[m].label)
    trace = traces[stop]
    st.subheader(METHODS[stop].label)
    st.caption(f"{METHODS[stop].description} — {METHODS[stop].paper}")
    st.markdown(f"**Question:** {md_text(trace.question)}")
    known = pack.questions_by_id.get(trace.question_id)
    render_trace(trace, key=f"demo.view.{stop}", gold=known.answers if known else (), captions=STEP_CAPTIONS)
