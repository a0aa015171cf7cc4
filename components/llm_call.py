"""One call to a language model: who asked, which backend, tokens and latency; prompt and output as text."""

from __future__ import annotations

import streamlit as st

from components.safe import md_text
from engine.trace import LlmCallStep


def call_summary(step: LlmCallStep) -> str:
    """The header line's plain facts, e.g. "hf · 812 → 37 tokens · 1.42 s"."""
    parts = [step.backend or "unknown backend", f"{step.tokens_in:,} → {step.tokens_out:,} tokens"]
    if step.latency_ms:
        parts.append(f"{step.latency_ms / 1000:.2f} s" if step.latency_ms >= 1000 else f"{step.latency_ms:.0f} ms")
    return " · ".join(parts)


def render_llm_call(step: LlmCallStep, *, key: str) -> None:
    title = f" — {md_text(step.title)}" if step.title else ""
    st.markdown(f":material/smart_toy: **{md_text(step.role or 'model')}**{title} · {md_text(call_summary(step))}")
    # Prompts and outputs are model text: shown in code blocks, never interpreted as markdown.
    with st.expander("Prompt", key=f"{key}.prompt"):
        st.code(step.prompt or "(empty prompt)", language=None, wrap_lines=True)
    with st.expander("Output", expanded=False, key=f"{key}.output"):
        st.code(step.output or "(empty output)", language=None, wrap_lines=True)
