"""One model call as every LLM tool makes it: never raises, always leaves an `llm_call` step, and streams
its reply to a page that is watching the run (engine/live.py) when the backend can."""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from engine.errors import ServerUnreachable
from engine.live import reply_sink
from engine.llm.chat import (
    AttentiveChatModel,
    ChatModel,
    Completion,
    GenerationSettings,
    Message,
    PromptSegment,
    StreamingChatModel,
)
from engine.tools.prompts import fill_spans
from engine.trace import AttentionStep, ErrorStep, LlmCallStep, Step

MAX_SHOWN = 120  # characters of model output quoted in an error message


@dataclass(frozen=True)
class ModelReply:
    """One model call as a tool sees it: the text ('' when the call failed) and the steps to record."""

    text: str
    steps: tuple[Step, ...]
    failed: bool = False


def call_model(
    chat: ChatModel, messages: Sequence[Message], settings: GenerationSettings, role: str,
    segments: Sequence[PromptSegment] | None = None,
) -> ModelReply:
    """Call the model (with attention when `segments` are given and it captures it); never raises, but
    for a server that cannot be reached (`ServerUnreachable`), which ends the run.

    A failed call still gets an `llm_call` step, so the prompt that was sent stays inspectable.
    """
    prompt = render_messages(messages)
    started = time.perf_counter()
    try:
        completion, attention = _complete(chat, messages, settings, role, segments)
        text = completion.text if isinstance(completion.text, str) else ""
    except ServerUnreachable:
        raise  # every later call would fail the same way: the run stops here and says so once (issue 22)
    except Exception as exc:  # backends should raise BackendError, but a tool must never crash a run
        latency = (time.perf_counter() - started) * 1000
        label = f"{getattr(chat, 'backend', '?')}: {getattr(chat, 'model', '?')}"
        call = LlmCallStep(title=f"{role} call failed", role=role, prompt=prompt, output="",
                           latency_ms=latency, elapsed_ms=latency, backend=label)
        reason = str(exc) or type(exc).__name__
        return ModelReply("", (call, error_step(role, f"{role} model failed: {shorten(reason)}")), failed=True)
    call = LlmCallStep(
        title=f"{role} call", role=role, prompt=prompt, output=text, tokens_in=completion.tokens_in,
        tokens_out=completion.tokens_out, latency_ms=completion.latency_ms, elapsed_ms=completion.latency_ms,
        backend=f"{completion.backend}: {completion.model}", logprobs=completion.logprobs,
    )
    return ModelReply(text, (call, *attention))


def _complete(
    chat: ChatModel, messages: Sequence[Message], settings: GenerationSettings, role: str,
    segments: Sequence[PromptSegment] | None,
) -> tuple[Completion, tuple[AttentionStep, ...]]:
    if segments is not None and isinstance(chat, AttentiveChatModel) and getattr(chat, "captures_attention", True):
        completion, steps = chat.complete_with_attention(messages, segments, settings)
        return completion, tuple(s for s in steps if isinstance(s, AttentionStep))
    sink = reply_sink(role)  # first: a run nobody watches skips the protocol check too
    if sink is not None and isinstance(chat, StreamingChatModel):
        return chat.complete_streaming(messages, settings, sink), ()
    return chat.complete(messages, settings), ()


def locate_segments(message: str, pieces: Sequence[tuple[str, str, str]]) -> tuple[PromptSegment, ...]:
    """Where each (label, kind, text) piece sits in `message`, the last user message as sent.

    Pieces are looked for in order, each after the previous one's end (a document quoted twice is
    attributed where the prompt lists it); a piece not found is left out, so a tool may pass the
    pieces it put in its prompt without tracking offsets while filling the template.
    """
    found, cursor = [], 0
    for label, kind, text in pieces:
        text = text.strip()
        if not text:
            continue
        start = message.find(text, cursor)
        if start < 0:
            start = message.find(text)
        if start < 0:
            continue
        found.append(PromptSegment(label, kind, start, start + len(text)))
        cursor = start + len(text)
    return tuple(found)


def fill_with_segments(template: str, pieces: Mapping[str, Sequence[tuple[str, str, str]]], **values: object,
                       ) -> tuple[str, tuple[PromptSegment, ...]]:
    """The filled template and the segments of `pieces[name]`, each looked for only inside the span
    where the value of `name` was placed: the demonstrations above it may quote similar text."""
    prompt, spans = fill_spans(template, **values)
    segments: list[PromptSegment] = []
    for name, value_pieces in pieces.items():
        if name not in spans:
            continue
        start, end = spans[name]
        segments += [replace(s, start=s.start + start, end=s.end + start)
                     for s in locate_segments(prompt[start:end], value_pieces)]
    return prompt, tuple(sorted(segments, key=lambda s: s.start))


def render_messages(messages: Sequence[Message]) -> str:
    """The prompt as sent, readable in the UI: each message under its role."""
    return "\n\n".join(f"[{m.role}]\n{m.content}" for m in messages)


def shorten(text: str, limit: int = MAX_SHOWN) -> str:
    """One line, at most `limit` characters, quoted: for error messages that show model output."""
    flat = one_line(text)
    return repr(flat if len(flat) <= limit else flat[: limit - 1] + "…")


def error_step(role: str, message: str) -> ErrorStep:
    """A recoverable `error` step: the tool fell back and the run goes on."""
    return ErrorStep(title=f"{role} fell back", message=message, recoverable=True)


def one_line(text: str) -> str:
    return " ".join(str(text or "").split())
