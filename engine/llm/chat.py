"""What every language-model backend offers the LLM tools: chat completion with token counts.

`ChatModel` is the small protocol the tools call; the HF backend adds attention capture and
`inputs_embeds` generation on top (see engine/llm/hf.py), the OpenAI-compatible backend adds
streaming (`StreamingChatModel`). Errors from a model or server are `BackendError`s with a message
for the user.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from engine.trace import TokenLogprob

TokenSink = Callable[[str], None]  # takes each piece of a reply as the model writes it


@dataclass(frozen=True)
class Message:
    role: str  # system | user | assistant
    content: str


@dataclass(frozen=True)
class Completion:
    text: str
    tokens_in: int
    tokens_out: int
    latency_ms: float
    backend: str
    model: str
    logprobs: tuple[TokenLogprob, ...] = ()  # the text's tokens, when the backend reports them
    cut: str = ""  # why the reply was cut short at a time, token or byte bound (engine/llm/bounds.py); "" if not


@dataclass(frozen=True)
class GenerationSettings:
    """Greedy by default: runs must be reproducible for step-through and comparison."""

    max_new_tokens: int = 64
    temperature: float = 0.0
    stop: tuple[str, ...] = ()


@runtime_checkable
class ChatModel(Protocol):
    backend: str
    model: str

    def complete(self, messages: Sequence[Message], settings: GenerationSettings = GenerationSettings()) -> Completion:
        """One reply to a chat; raises BackendError when the model or server fails."""
        ...


@runtime_checkable
class SizedChatModel(ChatModel, Protocol):
    """A chat model that knows its context window and counts a chat's prompt tokens exactly (the HF
    backend), so a caller can fit a prompt and its reply into the window before generating."""

    context_tokens: int | None  # prompt + reply tokens the model takes; None = unknown

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """The prompt tokens `complete` would feed for `messages`, chat template included."""
        ...


@runtime_checkable
class StreamingChatModel(ChatModel, Protocol):
    """A chat model that can show its reply as it is written (the OpenAI-compatible backend)."""

    def complete_streaming(self, messages: Sequence[Message], settings: GenerationSettings,
                           on_text: TokenSink) -> Completion:
        """What `complete` returns, field for field, while handing `on_text` the reply's text piece by
        piece as it arrives; the pieces join to the completion's text."""
        ...


def cut_at_stop(text: str, stop: Sequence[str]) -> str:
    """Servers and local generation both stop late by a few tokens; cut at the first stop string."""
    cut = min((text.find(s) for s in stop if s and s in text), default=-1)
    return text if cut < 0 else text[:cut]


class StreamCut:
    """Passes a stream's text on as it comes, but nothing from the first stop string on, even one split
    across pieces: a tail that could still become a stop string is held back until it cannot."""

    def __init__(self, stop: Sequence[str]):
        self.stop = [s for s in stop if s]
        self.pending, self.stopped = "", False

    def feed(self, piece: str) -> str:
        """The text that is now safe to show."""
        if self.stopped:
            return ""
        self.pending += piece
        cut = cut_at_stop(self.pending, self.stop)
        if len(cut) < len(self.pending):
            self.pending, self.stopped = "", True
            return cut
        hold = max((k for s in self.stop for k in range(1, len(s)) if self.pending.endswith(s[:k])), default=0)
        ready, self.pending = self.pending[: len(self.pending) - hold], self.pending[len(self.pending) - hold:]
        return ready

    def flush(self) -> str:
        """What was held back, once the stream ended without completing a stop string."""
        rest, self.pending = self.pending, ""
        return rest


def logprobs_within(logprobs: Sequence[TokenLogprob], kept: str, written: str) -> tuple[TokenLogprob, ...]:
    """The tokens that wrote `kept`, what a stop-string cut left of `written`: all of them when nothing
    was cut (token strings need not add up to the text: special and byte-level tokens), else the leading
    tokens up to the one the cut fell in."""
    if len(kept) >= len(written):
        return tuple(logprobs)
    found, length = [], 0
    for token in logprobs:
        if length >= len(kept):
            break
        found.append(token)
        length += len(token.token)
    return tuple(found)


@dataclass(frozen=True)
class PromptSegment:
    """A labelled character span [start, end) of the last user message: a document, rule, question."""

    label: str
    kind: str
    start: int
    end: int
    title: str = ""  # what a reader calls it (a document's title); "" = the start of its text


@runtime_checkable
class AttentiveChatModel(ChatModel, Protocol):
    """A chat model that can say where it looked (HF backend only)."""

    def complete_with_attention(
        self, messages: Sequence[Message], segments: Sequence[PromptSegment],
        settings: GenerationSettings = GenerationSettings(), on_text: TokenSink | None = None,
    ) -> tuple[Completion, tuple]:
        """The completion plus AttentionSteps (layer × segment mass of the answer's first token, and
        generated token × segment) aggregated over `segments` of the last user message; `on_text`, when
        given, is handed the reply as it is written (as `StreamingChatModel.complete_streaming`)."""
        ...
