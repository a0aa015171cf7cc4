"""The LLM twins' self-consistency sampling (llm.draw): one call per sample, until a reply repeats an earlier one."""

from __future__ import annotations

from engine.llm.chat import GenerationSettings, Message
from engine.methods.hybrid.llm import draw
from fake_chat import cycling, fixed


def test_sampling_stops_at_the_first_reply_that_repeats_an_earlier_one() -> None:
    messages = (Message("user", "q"),)
    assert len(draw(fixed("same"), messages, GenerationSettings(), "x", 5)) == 2
    replies = draw(cycling("a", "b", "a", "c"), messages, GenerationSettings(), "x", 5)
    assert [r.text for r in replies] == ["a", "b", "a"]
    assert [r.steps[0].role for r in replies] == ["x 1", "x 2", "x 3"]
    assert len(draw(cycling("a", "b", "c"), messages, GenerationSettings(), "x", 3)) == 3
