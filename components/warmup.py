"""The background warm-up's status in the sidebar, redrawn every second until it is done."""

from __future__ import annotations

from typing import Protocol

import streamlit as st

from components.safe import md_text


class WarmupStatus(Protocol):
    """What the line shows of a warm-up's status (engine.warmup.WarmupStatus has it)."""

    stage: str
    done: bool
    error: str
    elapsed_s: float


class Warming(Protocol):
    """Anything with a status that is read afresh on every redraw (engine.warmup.Warmup)."""

    @property
    def status(self) -> WarmupStatus: ...


def _status_line(warmup: Warming) -> None:
    status = warmup.status
    if status.error:
        st.caption(f":material/error: Preparing failed ({md_text(status.error)}); the first question will retry.")
    elif status.done and status.elapsed_s < 1:  # another model or pack over what an earlier warm-up loaded
        st.caption(":material/check_circle: Ready: index, tools and methods were already warm.")
    elif status.done:
        st.caption(f":material/check_circle: Ready: index, tools and methods warmed in {status.elapsed_s:.0f} s.")
    else:
        st.caption(f":material/hourglass_top: Preparing in the background: {status.stage} "
                   f"({status.elapsed_s:.0f} s). You can ask already; the first answer may wait for it.")


def render_warmup(warmup: Warming) -> None:
    st.fragment(_status_line, run_every=None if warmup.status.done else 1.0)(warmup)
