"""Demo tour: one example question per method, played stop by stop and round by round with
plain-language captions; Pause and the stop / round controls take over at any time.

The stops are asked in the background (engine.tour): the first is shown as soon as its run is done,
while the page says which method it is asking for the next. Each stop is laid out so that the answer
and the graph share the screen, and the page scrolls to the stop whenever the stop or round changes.
"""

from __future__ import annotations

import time

import streamlit as st

import ui_state
from components.answer import render_answer
from components.captions import round_story
from components.graph import has_graph, render_graph
from components.safe import md_text
from components.steps import render_step
from components.timeline import pick_round, round_label, show_round
from components.trace_view import rounds_of, sources_of
from engine.app import runs
from engine.app.runs import Tour
from engine.trace import AnswerStep, Trace

PACE_SECONDS = 3.0  # per round by default: time to read a caption aloud
POLL_SECONDS = 0.5  # how often the page looks for a stop that has just been asked
WAIT_SECONDS = 1.5  # the longest a playing tour waits for its first stop before redrawing (Stop acts then)
_PLAYING = "demo.playing"
_STOP = "demo.stop"
_NEXT_STOP = "demo.next_stop"
STOP_BOX = "demo-stop"  # the stop's container key; the page scrolls to it
# Runs in the page (st.iframe's srcdoc is same-origin): puts the stop at the top of the window, below
# Streamlit's fixed header. Only the stop and round numbers vary, so that it runs again when they change.
_SCROLL = """<script>/* stop {stop}, round {round} */
let tries = 0;
(function scroll() {{
  const box = window.parent.document.querySelector(".st-key-{box}");
  if (box) {{ box.style.scrollMarginTop = "4rem"; box.scrollIntoView({{block: "start"}}); }}
  else if (tries++ < 40) setTimeout(scroll, 50);
}})();
</script>"""

workbench = ui_state.current_workbench()
pack = workbench.pack


def _view_key(method: str) -> str:
    return f"demo.view.{method}"


def _go_to_stop(method: str, trace: Trace) -> None:
    """Open a stop on its first round: a tour tells the story from the start."""
    st.session_state[_NEXT_STOP] = method
    show_round(rounds_of(trace)[0], key=f"{_view_key(method)}.round", trace_id=trace.id)


def _start() -> None:
    """Start button: a new tour, asked in the background, played from its first stop once that is ready."""
    ui_state.start_tour(runs.new_tour(workbench, ui_state.run_store()))
    st.session_state.pop(_STOP, None)
    st.session_state[_PLAYING] = True


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


def _advance(tour: Tour, traces: dict[str, Trace], method: str) -> bool:
    """One tick of the tour: the next round, else the next stop's first round, else wait for the next
    stop while it is being asked; False at the very end."""
    iterations = rounds_of(traces[method])
    key = f"{_view_key(method)}.round"
    position = iterations.index(st.session_state[key])
    if position + 1 < len(iterations):
        st.session_state[f"{key}.pending"] = iterations[position + 1]  # applied before the slider is drawn
        return True
    stops = {stop.method: stop.trace for stop in tour.stops}  # now: more may have arrived since the page began
    order = list(stops)
    if order.index(method) + 1 < len(order):
        following = order[order.index(method) + 1]
        _go_to_stop(following, stops[following])
        return True
    return not tour.done


def _asking_line(tour: Tour) -> None:
    """What the tour is doing in the background, with Stop; nothing once every stop is asked."""
    stops, asking = tour.progress()
    ready = len(stops)
    if tour.stopped:
        st.caption(f":material/stop_circle: Stopped asking; the tour keeps the {ready} stops asked so far.")
    if asking is None or tour.stopped:
        return
    text_col, stop_col = st.columns([5, 1], vertical_alignment="center")
    so_far = f"{ready} of {len(tour.methods)} stops ready; " if ready else ""
    text_col.caption(f":material/hourglass_top: {so_far}asking **{md_text(runs.label(asking))}** for stop "
                     f"{ready + 1}…")
    stop_col.button("Stop asking", key="demo.cancel", width="stretch", on_click=tour.stop,
                    help="Stop asking further stops; the tour keeps the stops it has.")


def _watch(tour: Tour, ready: int) -> None:
    """Redrawn every POLL_SECONDS while paused: the whole page reruns when a stop arrives or the asking ends."""
    if len(tour.stops) != ready or tour.done:
        st.rerun()
    _asking_line(tour)


def _round_details(trace: Trace, chosen: int, key: str) -> None:
    """The round in plain words; what the method recorded (its own labels and numbers) in an expander."""
    shown = [s for s in trace.steps if s.iteration == chosen and not isinstance(s, AnswerStep)]
    st.markdown(f"##### {round_label(chosen).capitalize()}")
    for sentence in round_story(shown) or ["Nothing but the answer happened in this round."]:
        st.caption(sentence)
    if shown:
        with st.expander("What the method recorded in this round"):
            for i, step in enumerate(shown):
                render_step(step, key=f"{key}.{trace.id}.{chosen}.{i}")


def _draw_stop(trace: Trace, method: str, position: int, total: int, pace: float | None) -> int:
    """The stop: question, rounds and answer on the left, the graph (or the round's story) on the right from
    the stop's top, so both fit one screen; `pace` while the tour plays. Returns the round shown."""
    key = _view_key(method)
    left, right = st.columns([3, 2], gap="medium")
    with left:
        st.subheader(f"Stop {position} of {total}: {runs.label(method)}")
        st.markdown(f"**Question:** {md_text(trace.question)}")
        chosen, _ = pick_round(rounds_of(trace), key=f"{key}.round", trace_id=trace.id, playable=False)
        if pace is not None:
            st.caption(f":material/play_circle: Playing {round_label(chosen)}; the tour moves on in {pace:g} s.")
        if trace.answer is not None:
            gold, scores = runs.grade(trace, pack)
            render_answer(trace.answer, key=f"{key}.answer", sources=sources_of(trace), gold=gold, scores=scores,
                          failure=runs.backend_failure(trace))
        else:
            st.info("This run stopped before it answered; its steps so far are below.")
    graph = has_graph(trace.steps, chosen)
    if graph:
        with right:
            render_graph(trace.steps, chosen, key=f"{key}.graph.{trace.id}")
    with left if graph else right:
        info = runs.method_info(method)
        st.caption(info.description + (f" — {info.paper}" if info.paper else ""))
        _round_details(trace, chosen, key)
    return chosen


st.header("Demo tour")
st.caption("Each stop asks one question with one method and plays what it did, round by round, in plain "
           "words. Press **Start the tour** and sit back; **Pause** any time, or move between stops and "
           "rounds yourself.")
if not pack.questions:
    st.warning("This pack has no example questions (questions.jsonl); pick another pack in the sidebar.")
    st.stop()
start_col, pace_col = st.columns([1, 3], vertical_alignment="bottom")
pace = pace_col.slider("Seconds per round", 0.5, 10.0, PACE_SECONDS, 0.5, key="demo.pace",
                       help="How long the tour stays on each round before it moves on.")
start_col.button("Start the tour", type="primary", key="demo.start", on_click=_start)

tour = ui_state.tour()
if tour is None:
    st.stop()
for message in tour.left_out:
    st.error(md_text(message))
if tour.error:
    st.error(md_text(f"The tour could not ask every stop: {tour.error}"))
traces = {stop.method: stop.trace for stop in tour.stops}
if tour.done and not traces:
    st.session_state[_PLAYING] = False  # nothing to play
playing = st.session_state.get(_PLAYING, False)
shown_round = None
with st.container(key=STOP_BOX):
    if playing or tour.done:
        _asking_line(tour)
    else:
        st.fragment(_watch, run_every=POLL_SECONDS)(tour, len(traces))
    if traces:
        if st.session_state.get(_STOP) not in traces and _NEXT_STOP not in st.session_state:
            first = next(iter(traces))  # the first stop has just been asked
            _go_to_stop(first, traces[first])
        if _NEXT_STOP in st.session_state:  # set by a tick or a button, applied before the stop box is drawn
            st.session_state[_STOP] = st.session_state.pop(_NEXT_STOP)
        order = list(traces)
        play_col, back_col, on_col, stops_col = st.columns([1, 1.6, 1.3, 5.5], vertical_alignment="center")
        play_col.button("Pause" if playing else "Play", key="demo.play", type="primary", width="stretch",
                        on_click=_toggle_play)
        back_col.button("Previous stop", key="demo.back", width="stretch", on_click=_step_stop, args=(traces, -1))
        on_col.button("Next stop", key="demo.on", width="stretch", on_click=_step_stop, args=(traces, 1))
        stop = stops_col.radio("Stop", order, key=_STOP, horizontal=True, format_func=runs.label, on_change=_pause,
                               label_visibility="collapsed")
        total = len(order) if tour.done else len(tour.methods) - len(tour.left_out)
        shown_round = _draw_stop(traces[stop], stop, order.index(stop) + 1, total, pace if playing else None)
        st.iframe(_SCROLL.format(stop=order.index(stop), round=shown_round, box=STOP_BOX), height=1)
if playing:
    if shown_round is None:  # the first stop is being asked: wake the moment it is ready
        tour.wait_for_stop(len(traces), WAIT_SECONDS)
    else:
        time.sleep(pace)
        if not _advance(tour, traces, stop):
            st.session_state[_PLAYING] = False
    st.rerun()
