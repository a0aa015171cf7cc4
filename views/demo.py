"""Demo tour: one example question per method, played stop by stop and round by round with
plain-language captions; Pause and the stop / round controls take over at any time."""

from __future__ import annotations

import time

import streamlit as st

import ui_state
from components.captions import STEP_CAPTIONS
from components.safe import md_text
from components.timeline import round_label, show_round
from components.trace_view import render_trace, rounds_of
from engine.errors import RagscopeError
from engine.evaluation.metrics import grade_trace
from engine.methods.base import METHODS, method_ids
from engine.trace import Trace

# The question type that shows each method at its best; any pack question works as a fallback.
SHOWCASE_TYPES = {"vanilla": "factoid", "rulerag": "rule", "hybrid": "numeric", "r2ag": "comparison",
                  "tog2": "multi_hop", "ras": "multi_hop"}
PACE_SECONDS = 3.0  # per round by default: time to read a caption aloud
_TRACES = "demo.traces"
_LEFT_OUT = "demo.left_out"
_PLAYING = "demo.playing"
_STOP = "demo.stop"
_NEXT_STOP = "demo.next_stop"

workbench = ui_state.current_workbench()
pack = workbench.pack


def _showcase_question(method: str):
    wanted = SHOWCASE_TYPES.get(method)
    return next((q for q in pack.questions if q.type == wanted), pack.questions[0] if pack.questions else None)


def _view_key(method: str) -> str:
    return f"demo.view.{method}"


def _go_to_stop(method: str, trace: Trace) -> None:
    """Open a stop on its first round: a tour tells the story from the start."""
    st.session_state[_NEXT_STOP] = method
    show_round(rounds_of(trace)[0], key=f"{_view_key(method)}.round", trace_id=trace.id)


def _toggle_play() -> None:
    st.session_state[_PLAYING] = not st.session_state.get(_PLAYING, False)


def _pause() -> None:
    st.session_state[_PLAYING] = False


def _step_stop(traces: dict[str, Trace], delta: int) -> None:
    order = list(traces)
    position = order.index(st.session_state[_STOP]) + delta
    if 0 <= position < len(order):
        _go_to_stop(order[position], traces[order[position]])
    st.session_state[_PLAYING] = False


def _advance(traces: dict[str, Trace], method: str) -> bool:
    """One tick of the tour: the next round, else the next stop's first round; False at the very end."""
    iterations = rounds_of(traces[method])
    key = f"{_view_key(method)}.round"
    position = iterations.index(st.session_state[key])
    if position + 1 < len(iterations):
        st.session_state[f"{key}.pending"] = iterations[position + 1]  # applied before the slider is drawn
        return True
    order = list(traces)
    if order.index(method) + 1 < len(order):
        following = order[order.index(method) + 1]
        _go_to_stop(following, traces[following])
        return True
    return False


def _ask_all(left_out: list[str]) -> dict[str, Trace]:
    """One trace per method; a method that cannot be created is named in `left_out` instead."""
    traces = {}
    bar = st.progress(0.0, text="Asking…")
    tour = sorted(method_ids(), key=lambda m: m != "vanilla")  # the baseline first, then what improves on it
    for i, method in enumerate(tour):
        question = _showcase_question(method)
        try:
            traces[method] = workbench.ask(question.question, method, question_id=question.id)
        except RagscopeError as exc:  # a user's method that cannot even be created: the tour goes on without it
            left_out.append(f"{METHODS[method].label} is left out of the tour: {exc}")
        bar.progress((i + 1) / len(tour), text=f"{METHODS[method].label} done")
    bar.empty()
    return traces


st.header("Demo tour")
st.markdown("Each stop asks one question with one method and plays what it did, round by round, with a "
            "caption for every step. Press **Start the tour** and sit back; **Pause** any time, or move "
            "between stops and rounds yourself.")
if not pack.questions:
    st.warning("This pack has no example questions (questions.jsonl); pick another pack in the sidebar.")
    st.stop()
start_col, pace_col = st.columns([1, 3], vertical_alignment="bottom")
pace = pace_col.slider("Seconds per round", 0.5, 10.0, PACE_SECONDS, 0.5, key="demo.pace",
                       help="How long the tour stays on each round before it moves on.")
if start_col.button("Start the tour", type="primary", key="demo.start"):
    left_out: list[str] = []
    traces = _ask_all(left_out)
    st.session_state[_TRACES], st.session_state[_LEFT_OUT] = traces, left_out
    if traces:
        first = next(iter(traces))
        _go_to_stop(first, traces[first])
        st.session_state[_PLAYING] = True

for message in st.session_state.get(_LEFT_OUT, []):
    st.error(md_text(message))
traces: dict[str, Trace] = st.session_state.get(_TRACES, {})
if traces:
    if _NEXT_STOP in st.session_state:  # set by a tick or a button, applied before the stop box is drawn
        st.session_state[_STOP] = st.session_state.pop(_NEXT_STOP)
    playing = st.session_state.get(_PLAYING, False)
    order = list(traces)
    play_col, back_col, on_col, _ = st.columns([1, 1.4, 1.4, 4])
    play_col.button("Pause" if playing else "Play", key="demo.play", type="primary", width="stretch",
                    on_click=_toggle_play)
    back_col.button("Previous stop", key="demo.back", width="stretch", on_click=_step_stop, args=(traces, -1))
    on_col.button("Next stop", key="demo.on", width="stretch", on_click=_step_stop, args=(traces, 1))
    stop = st.radio("Stop", order, key=_STOP, horizontal=True, format_func=lambda m: METHODS[m].label,
                    on_change=_pause)
    trace = traces[stop]
    st.subheader(f"Stop {order.index(stop) + 1} of {len(order)}: {METHODS[stop].label}")
    st.caption(f"{METHODS[stop].description}" + (f" — {METHODS[stop].paper}" if METHODS[stop].paper else ""))
    st.markdown(f"**Question:** {md_text(trace.question)}")
    gold, scores = grade_trace(trace, pack)
    render_trace(trace, key=_view_key(stop), gold=gold, scores=scores, captions=STEP_CAPTIONS, playable=False)
    shown = st.session_state[f"{_view_key(stop)}.round"]
    if playing:
        st.caption(f":material/play_circle: Playing: {round_label(shown)} of {METHODS[stop].label}; the tour "
                   f"moves on in {pace:g} s.")
        time.sleep(pace)
        if not _advance(traces, stop):
            st.session_state[_PLAYING] = False
        st.rerun()
