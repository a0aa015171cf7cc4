"""A method's decision as one badge-like line: the action as code, the reason as text; stops stand out."""

from __future__ import annotations

import re

import streamlit as st

from components.glossary import action_hint
from components.safe import md_text
from engine.trace import DecisionStep

_STOPPED = re.compile(r"stop|cancel|abort", re.IGNORECASE)
# STYLE §13: when the iteration cap ends a run, a decision step says so, in its action or its detail.
_CAPPED = re.compile(r"\bcap\b|cap[_ -]?reached|max[_ ]?iter|iteration (?:cap|limit)|limit reached", re.IGNORECASE)


def code_span(text: str) -> str:
    """A markdown code span that shows `text` verbatim, backticks included (CommonMark: a longer fence)."""
    flat = " ".join(text.split()) or " "
    fence = "`" * (max((len(run) for run in re.findall(r"`+", flat)), default=0) + 1)
    pad = " " if flat.startswith("`") or flat.endswith("`") else ""
    return f"{fence}{pad}{flat}{pad}{fence}"


def decision_tone(step: DecisionStep) -> str:
    """"stopped", "capped" or "" — what makes this decision look different from a plain one."""
    if _STOPPED.search(step.action):
        return "stopped"
    if _CAPPED.search(step.action) or _CAPPED.search(step.detail):
        return "capped"
    return ""


def render_decision(step: DecisionStep, *, key: str) -> None:
    tone = decision_tone(step)
    badge = {"stopped": ":red-badge[:material/stop_circle: stopped]",
             "capped": ":orange-badge[:material/block: iteration cap reached]"}.get(
        tone, ":blue-badge[:material/alt_route: decision]")
    detail = f" · {md_text(step.detail)}" if step.detail else ""
    title = f" **{md_text(step.title)}**" if step.title and step.title.lower() != step.action.lower() else ""
    with st.container(key=f"{key}.decision"):
        st.markdown(f"{badge}{title} {code_span(step.action)}{detail}", help=action_hint(step.action))
