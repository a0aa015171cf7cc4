"""Hybrid RAG run by a real small instruct model (SmolLM2-135M-Instruct on the CPU, issue 23): no call spent
for nothing, and every reply bounded.

Before issue 23's fixes, "Where was Marie Curie born?" cost 13 calls and 5 minutes on a loaded 2-core
machine: 3 attribute and 5 calculator samples that repeated the first word for word, a calculator asked
about a question with no number in it, and 2 reasoning samples that looped to 512 tokens each.
"""

from __future__ import annotations

import pytest

from engine.methods.hybrid.reasoner import REASON_SETTINGS
from engine.trace import AnswerStep, AttentionStep, DecisionStep, LlmCallStep

pytestmark = pytest.mark.llm


@pytest.fixture(scope="module")
def hybrid_trace(real_workbench):
    return real_workbench.ask("Where was Marie Curie born?", "hybrid")


def test_a_question_without_numbers_asks_no_calculator_and_repeated_samples_stop(hybrid_trace):
    roles = [s.role for s in hybrid_trace.steps if isinstance(s, LlmCallStep)]
    assert not [r for r in roles if r.startswith("calculator")]
    assert len([r for r in roles if r.startswith("attributes")]) <= 2  # the local model repeats its first vote
    assert [r for r in roles if r.startswith("reasoning")] == ["reasoning 1"]
    skip = next(s for s in hybrid_trace.steps if isinstance(s, DecisionStep) and s.iteration == 3)
    assert skip.action == "skip"


def test_every_reply_stays_within_its_roles_budget_and_the_answer_is_no_echo(hybrid_trace):
    for call in (s for s in hybrid_trace.steps if isinstance(s, LlmCallStep)):
        assert call.tokens_out <= REASON_SETTINGS.max_new_tokens, call.role
    assert any(isinstance(s, AttentionStep) for s in hybrid_trace.steps)
    answer = next(s for s in hybrid_trace.steps if isinstance(s, AnswerStep))
    assert answer.text.strip().rstrip("?").lower() != "where was marie curie born"
    assert "<" not in answer.text and "unknown" not in answer.text.lower()
