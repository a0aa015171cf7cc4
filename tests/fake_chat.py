"""Scripted chat models for testing the LLM tools: fixed, cycling, prompt-dependent, attentive, failing."""

from __future__ import annotations

import itertools
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from engine.llm.chat import Completion, GenerationSettings, Message, PromptSegment
from engine.trace import AttentionStep


@dataclass
class ScriptedChat:
    """A ChatModel whose reply is a function of the last user message; it remembers what it was sent and
    the generation settings of each call."""

    reply: Callable[[str], str]
    backend: str = "fake"
    model: str = "scripted"
    latency_ms: float = 12.5
    sent: list[str] = field(default_factory=list)
    settings_sent: list[GenerationSettings] = field(default_factory=list)

    def complete(self, messages: Sequence[Message], settings: GenerationSettings = GenerationSettings()) -> Completion:
        prompt = messages[-1].content
        self.sent.append(prompt)
        self.settings_sent.append(settings)
        text = self.reply(prompt)
        return Completion(text, len(prompt.split()), len(text.split()), self.latency_ms, self.backend, self.model)


@dataclass
class AttentiveChat(ScriptedChat):
    segments: list[tuple[PromptSegment, ...]] = field(default_factory=list)

    def complete_with_attention(
        self, messages: Sequence[Message], segments: Sequence[PromptSegment],
        settings: GenerationSettings = GenerationSettings(), on_text=None,
    ) -> tuple[Completion, tuple[AttentionStep, ...]]:
        self.segments.append(tuple(segments))
        heat = AttentionStep(name="dummy", matrix=((1.0,),), x_labels=("q",), y_labels=("layer 0",))
        completion = self.complete(messages, settings)
        if on_text is not None:
            on_text(completion.text)
        return completion, (heat,)


@dataclass
class FailingChat:
    error: Exception
    backend: str = "openai"
    model: str = "down"

    def complete(self, messages: Sequence[Message], settings: GenerationSettings = GenerationSettings()) -> Completion:
        raise self.error

    def complete_with_attention(self, messages, segments, settings=GenerationSettings(), on_text=None):
        raise self.error


def fixed(text: str) -> ScriptedChat:
    return ScriptedChat(lambda _prompt: text)


def cycling(*texts: str) -> ScriptedChat:
    replies = itertools.cycle(texts)
    return ScriptedChat(lambda _prompt: next(replies))
