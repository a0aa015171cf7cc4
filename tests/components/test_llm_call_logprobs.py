"""The LLM call card says how sure the model was when the backend gave logprobs, token by token on request."""

from __future__ import annotations

import math

from streamlit.testing.v1 import AppTest

from components.llm_call import call_summary, token_rows
from engine.trace import LlmCallStep, TokenLogprob

SCORED = (TokenLogprob(" Paris", -0.1), TokenLogprob(".\n", -0.14))


def test_the_summary_adds_mean_logprob_and_perplexity_only_when_there_are_logprobs() -> None:
    step = LlmCallStep(role="reader", prompt="", output=" Paris.\n", tokens_in=12, tokens_out=2, latency_ms=80,
                       backend="openai: m", logprobs=SCORED)
    assert call_summary(step) == "openai: m · 12 → 2 tokens · 80 ms · mean token logprob −0.12 (perplexity 1.13)"
    assert "logprob" not in call_summary(LlmCallStep(role="reader", prompt="", output="x", backend="hf"))


def test_token_rows_show_whitespace_and_probabilities() -> None:
    assert token_rows(SCORED) == [
        {"token": "␣Paris", "logprob": -0.1, "probability": math.exp(-0.1)},
        {"token": ".↵", "logprob": -0.14, "probability": math.exp(-0.14)},
    ]


def _page() -> None:
    from components.llm_call import render_llm_call
    from engine.trace import LlmCallStep, TokenLogprob

    render_llm_call(LlmCallStep(role="reader", prompt="p", output="<b>Paris</b>",
                                logprobs=(TokenLogprob("<b>Paris</b>", -0.1),)), key="scored")
    render_llm_call(LlmCallStep(role="reader", prompt="p", output="Paris"), key="plain")


def test_the_per_token_view_sits_behind_an_expander_only_where_there_are_logprobs() -> None:
    at = AppTest.from_function(_page, default_timeout=60).run()
    assert not at.exception
    assert [e.label for e in at.expander] == ["Prompt", "Output", "Token logprobs", "Prompt", "Output"]
    [table] = at.dataframe
    assert list(table.value["token"]) == ["<b>Paris</b>"]  # a table cell is text, never markup
