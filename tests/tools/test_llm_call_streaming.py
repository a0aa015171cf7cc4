"""call_model: logprobs reach the `llm_call` step, and a watched run's calls stream when the backend can."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field

from engine.live import Partial, listening
from engine.llm.chat import Completion, GenerationSettings, Message, TokenSink
from engine.tools.llm_call import call_model
from engine.trace import LlmCallStep, TokenLogprob

ASKED = (Message("user", "Who wrote Hamlet?"),)
SCORED = (TokenLogprob("Shakes", -0.25), TokenLogprob("peare", -0.05))


@dataclass
class StreamingChat:
    """Writes 'Shakespeare' in two pieces; remembers which way it was asked."""

    backend: str = "fake"
    model: str = "streaming"
    asked: list[str] = field(default_factory=list)

    def complete(self, messages: Sequence[Message], settings: GenerationSettings = GenerationSettings()) -> Completion:
        self.asked.append("complete")
        return Completion("Shakespeare", 4, 2, 10.0, self.backend, self.model, logprobs=SCORED)

    def complete_streaming(self, messages: Sequence[Message], settings: GenerationSettings,
                           on_text: TokenSink) -> Completion:
        self.asked.append("complete_streaming")
        for token in SCORED:
            on_text(token.token)
        return Completion("Shakespeare", 4, 2, 10.0, self.backend, self.model, logprobs=SCORED)


def test_logprobs_reach_the_step_with_their_mean_and_perplexity() -> None:
    reply = call_model(StreamingChat(), ASKED, GenerationSettings(), role="reader")
    [call] = reply.steps
    assert isinstance(call, LlmCallStep) and call.logprobs == SCORED
    assert math.isclose(call.mean_logprob, -0.15) and math.isclose(call.perplexity, math.exp(0.15))


def test_a_call_streams_only_while_someone_watches_and_records_the_same_step() -> None:
    chat = StreamingChat()
    plain = call_model(chat, ASKED, GenerationSettings(), role="reader")
    heard: list[Partial] = []
    with listening(heard.append):
        watched = call_model(chat, ASKED, GenerationSettings(), role="reader")
    assert chat.asked == ["complete", "complete_streaming"]
    assert heard == [Partial("reader", "Shakes"), Partial("reader", "Shakespeare")]
    assert watched == plain


def test_a_backend_that_cannot_stream_is_asked_plainly_while_watched() -> None:
    from fake_chat import fixed

    chat = fixed("Answer: 1906")
    heard: list[Partial] = []
    with listening(heard.append):
        reply = call_model(chat, ASKED, GenerationSettings(), role="reader")
    assert reply.text == "Answer: 1906" and heard == [] and chat.sent == ["Who wrote Hamlet?"]
