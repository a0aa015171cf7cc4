"""An `llm_call` step's token logprobs (issue 18): round-trip, older traces without them, bad values named."""

from __future__ import annotations

import math

import pytest

from engine.errors import RagscopeError
from engine.trace import LlmCallStep, TokenLogprob, Trace

SCORED = (TokenLogprob("Paris", -0.1), TokenLogprob(".", -0.3))


def traced(*steps: LlmCallStep) -> Trace:
    head = Trace(id="t1", question="capital of France?", method="vanilla", backend="openai", model="m", pack="mini")
    return head.with_steps(steps, 3.0)


def test_token_logprobs_round_trip_exactly_through_json() -> None:
    trace = traced(LlmCallStep(role="reader", prompt="p", output="Paris.", logprobs=SCORED))
    assert Trace.from_json(trace.to_json()) == trace


def test_a_trace_saved_before_logprobs_existed_loads_with_none() -> None:
    data = traced(LlmCallStep(role="reader", prompt="p", output="Paris.")).to_dict()
    del data["steps"][0]["logprobs"]
    [call] = Trace.from_dict(data).steps
    assert call.logprobs == () and call.mean_logprob is None and call.perplexity is None


def test_mean_logprob_and_perplexity_summarise_the_tokens() -> None:
    call = LlmCallStep(role="reader", prompt="p", output="Paris.", logprobs=SCORED)
    assert math.isclose(call.mean_logprob, -0.2) and math.isclose(call.perplexity, math.exp(0.2))
    certain = LlmCallStep(role="reader", prompt="p", output="x", logprobs=(TokenLogprob("x", 0.0),))
    assert certain.perplexity == 1.0


@pytest.mark.parametrize("bad, path", [
    ([{"token": "Paris", "logprob": "-0.1"}], "trace.steps[0].logprobs[0].logprob must be a number"),
    ([{"token": 7, "logprob": -0.1}], "trace.steps[0].logprobs[0].token must be"),
    ([{"token": "Paris"}], "trace.steps[0].logprobs[0] is missing 'logprob'"),
    ({"Paris": -0.1}, "trace.steps[0].logprobs must be"),
])
def test_a_bad_logprob_in_a_saved_trace_is_named_by_its_path(bad: object, path: str) -> None:
    data = traced(LlmCallStep(role="reader", prompt="p", output="Paris.", logprobs=SCORED)).to_dict()
    data["steps"][0]["logprobs"] = bad
    with pytest.raises(RagscopeError, match=r"not a ragscope trace: " + path.replace("[", r"\[").replace("]", r"\]")):
        Trace.from_dict(data)
