"""One call to a language model: who asked, which backend, tokens, latency and how sure it was; prompt and
output as text."""

from __future__ import annotations

import math

import streamlit as st

from components.safe import md_text
from engine.trace import LlmCallStep, TokenLogprob

_VISIBLE = str.maketrans({" ": "␣", "\n": "↵", "\t": "⇥"})  # a token's spaces are part of it: show them


def call_summary(step: LlmCallStep) -> str:
    """The header line's plain facts, e.g. "openai: llama3 · 812 → 37 tokens · 1.42 s · mean token logprob
    −0.12 (perplexity 1.13)"; the last part only where the backend gave logprobs."""
    parts = [step.backend or "unknown backend", f"{step.tokens_in:,} → {step.tokens_out:,} tokens"]
    if step.latency_ms:
        parts.append(f"{step.latency_ms / 1000:.2f} s" if step.latency_ms >= 1000 else f"{step.latency_ms:.0f} ms")
    if step.mean_logprob is not None:
        mean = f"{step.mean_logprob:.2f}".replace("-", "−")  # a typographic minus, as in the docs
        parts.append(f"mean token logprob {mean} (perplexity {step.perplexity:.2f})")
    return " · ".join(parts)


def token_rows(logprobs: tuple[TokenLogprob, ...]) -> list[dict[str, object]]:
    """One row per output token: the token with its whitespace made visible, its logprob and probability."""
    return [{"token": t.token.translate(_VISIBLE), "logprob": t.logprob, "probability": math.exp(t.logprob)}
            for t in logprobs]


def render_llm_call(step: LlmCallStep, *, key: str) -> None:
    title = f" — {md_text(step.title)}" if step.title else ""
    st.markdown(f":material/smart_toy: **{md_text(step.role or 'model')}**{title} · {md_text(call_summary(step))}")
    if step.cut:  # a time, token or byte bound ended the reply (issue 26): the output is not all the model wrote
        st.warning(md_text(step.cut), icon=":material/content_cut:")
    # Prompts and outputs are model text: shown in code blocks, never interpreted as markdown.
    with st.expander("Prompt", key=f"{key}.prompt"):
        st.code(step.prompt or "(empty prompt)", language=None, wrap_lines=True)
    with st.expander("Output", expanded=False, key=f"{key}.output"):
        st.code(step.output or "(empty output)", language=None, wrap_lines=True)
    if step.logprobs:
        with st.expander("Token logprobs", expanded=False, key=f"{key}.logprobs"):
            st.dataframe(token_rows(step.logprobs), key=f"{key}.logprobs.table", hide_index=True, width="stretch",
                         column_config={
                             "token": st.column_config.TextColumn("token"),
                             "logprob": st.column_config.NumberColumn("logprob", format="%.3f"),
                             "probability": st.column_config.ProgressColumn(
                                 "probability", min_value=0.0, max_value=1.0, format="%.2f",
                                 help="exp(logprob): how likely the model found this token where it wrote it"),
                         })
