"""A reproduce-a-paper card (engine.methods.paper_cards): the paper's setting beside ours, the deviations, the
command that runs the closest setting, and the range it is expected to give."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import streamlit as st

from components.safe import md_text

ROWS = (("Model", "model"), ("Retriever", "retriever"), ("k", "k"), ("Dataset", "dataset"), ("Metric", "metric"))


def render_paper_card(card: Mapping[str, Any], *, key: str) -> None:
    """Render only: `card` is a PaperCard as plain data (engine.app.runs.paper_card); every text is the card
    file's, shown as text (md_text), the commands in st.code."""
    st.markdown(f"**{md_text(card['title'])}**  \n{md_text(card['source'])}")
    st.markdown(comparison_table(card))
    st.markdown("**Deviations**\n\n" + "\n".join(f"- {md_text(line)}" for line in card["deviations"]))
    st.caption("Closest setting here: build the pack, then evaluate")
    st.code(f"{card['prepare']}\n{card['command']}", language="bash", wrap_lines=True)  # a narrow column: no scroll
    expected = card["expected"]
    if expected["measured"]:
        st.markdown(f"**Expected** on the {md_text(expected['backend'])} backend: {md_text(expected['metric'])} "
                    f"**{expected['estimate']:.3f}**, 95 % interval [{expected['low']:.3f}, {expected['high']:.3f}] "
                    f"over {expected['n']} questions; the paper: {md_text(card['number'])}")
        st.caption(md_text(expected["note"]))
    else:
        st.markdown(f"**Expected**: not measured here ({md_text(expected['note'])})")


def comparison_table(card: Mapping[str, Any]) -> str:
    """Markdown table of two columns, paper | ours, a row per setting (its name in bold in both cells: a third
    column of names would overflow Explore's narrow controls column) and the number last: the paper's as quoted
    and on the 0..1 scale ours is measured on, so the two compare at a glance."""
    lines = ["| Paper | Ours |", "|---|---|"]
    for label, name in ROWS:
        lines.append(f"| **{label}**: {md_text(card['paper'][name])} "
                     f"| **{label}**: {md_text(card['ours'][name])} |")
    expected = card["expected"]
    ours = (f"{expected['estimate']:.3f} [{expected['low']:.3f}, {expected['high']:.3f}]"
            if expected["measured"] else "not measured here")
    lines.append(f"| **Number**: {md_text(card['number'])} (= {card['value']:.3f}) | **Expected**: {md_text(ours)} |")
    return "\n".join(lines)
