"""The LLM call card says when the reply was cut at a time, token or byte bound (issue 26), and only then."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _page() -> None:
    from components.llm_call import render_llm_call
    from engine.trace import LlmCallStep

    render_llm_call(LlmCallStep(role="reader", prompt="p", output="word " * 9,
                                cut="reply cut at 256 tokens (max_tokens 64 × 4)"), key="cut")
    render_llm_call(LlmCallStep(role="reader", prompt="p", output="Paris"), key="whole")


def test_a_cut_reply_says_why_and_a_whole_one_says_nothing() -> None:
    at = AppTest.from_function(_page, default_timeout=60).run()
    assert not at.exception
    [warning] = at.warning
    assert warning.value.replace("\\", "") == "reply cut at 256 tokens (max_tokens 64 × 4)"
