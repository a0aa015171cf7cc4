"""The iteration timeline: set-up, round 1…n, with Prev / Next / Play for step-through and demos."""

from __future__ import annotations

from collections.abc import Sequence

import streamlit as st


def round_label(iteration: int) -> str:
    return "set-up" if iteration == 0 else f"round {iteration}"


def _step(key: str, iterations: Sequence[int], delta: int) -> None:
    """Button callback: runs before the script, so every widget below sees the new round."""
    position = iterations.index(st.session_state[key])
    st.session_state[key] = iterations[max(0, min(len(iterations) - 1, position + delta))]
    st.session_state[f"{key}.playing"] = False


def _toggle_play(key: str, iterations: Sequence[int]) -> None:
    playing = not st.session_state.get(f"{key}.playing", False)
    st.session_state[f"{key}.playing"] = playing
    if playing:
        st.session_state[key] = iterations[0]


def show_round(iteration: int, *, key: str, trace_id: str) -> None:
    """Put a trace's timeline on `iteration` before it is drawn (a tour driving the rounds itself)."""
    st.session_state[key] = iteration
    st.session_state[f"{key}.trace"] = trace_id


def pick_round(iterations: Sequence[int], *, key: str, trace_id: str = "", playable: bool = True) -> tuple[int, bool]:
    """Returns (chosen iteration, playing). The choice lives in session state under `key`.

    A new trace (another `trace_id`) opens on its last round, the answer (first when playing), not
    on whichever round the previous trace was showing. `playable=False` leaves out Play (something
    else, a tour, plays the rounds).
    """
    pending = st.session_state.pop(f"{key}.pending", None)
    if pending is not None:  # set by `advance` after the slider existed, applied before it exists again
        st.session_state[key] = pending
    playing = st.session_state.get(f"{key}.playing", False)
    new_trace = st.session_state.get(f"{key}.trace") != trace_id
    if new_trace or st.session_state.get(key) not in iterations:
        st.session_state[key] = iterations[0] if playing else iterations[-1]
        st.session_state[f"{key}.trace"] = trace_id
    position = iterations.index(st.session_state[key])
    # without Play, no empty column: the buttons keep their width in a narrow place (the tour's stop column)
    columns = st.columns([1, 1, 1, 6] if playable else [1, 1, 4], vertical_alignment="bottom")
    prev_col, next_col, slider_col = columns[0], columns[1], columns[-1]
    prev_col.button("Prev", key=f"{key}.prev", disabled=position == 0, width="stretch",
                    on_click=_step, args=(key, iterations, -1))
    next_col.button("Next", key=f"{key}.next", disabled=position == len(iterations) - 1, width="stretch",
                    on_click=_step, args=(key, iterations, 1))
    if playable:
        columns[2].button("Pause" if playing else "Play", key=f"{key}.play", width="stretch",
                          disabled=len(iterations) < 2, on_click=_toggle_play, args=(key, iterations))
    if len(iterations) > 1:
        slider_col.select_slider("Round", options=iterations, key=key, format_func=round_label)
    else:
        slider_col.caption(f"One round: {round_label(iterations[0])}")
    return st.session_state[key], playing


def advance(iterations: Sequence[int], *, key: str) -> bool:
    """Move a playing timeline one round on; False (and stop playing) at the end."""
    position = iterations.index(st.session_state[key])
    if position + 1 >= len(iterations):
        st.session_state[f"{key}.playing"] = False
        return False
    st.session_state[f"{key}.pending"] = iterations[position + 1]
    return True
