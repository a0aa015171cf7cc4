"""One model call as every LLM tool makes it: never raises, always leaves an `llm_call` step, fits the
prompt and its reply into the model's context window (cutting evidence, never instructions or the
question), and streams its reply to a page that is watching the run (engine/live.py) when the backend can."""

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
    SizedChatModel,
    StreamingChatModel,
)
from engine.tools.prompts import fill_spans
from engine.trace import AttentionStep, ErrorStep, LlmCallStep, Step

MAX_SHOWN = 120  # characters of model output quoted in an error message
# segment kinds that are retrieved evidence, shortened when a prompt is too long for the model; every
# other kind (question, rule, clue, entity, relation, calculation, sub-query) and the text between
# segments (the instructions) is never cut
EVIDENCE_KINDS = frozenset({"document", "table", "triples", "triple"})
CUT_MARK = "…"


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

    A failed call still gets an `llm_call` step, so the prompt that was sent stays inspectable. A prompt
    too long for the model's context is sent with its evidence cut (the step's title says so), or not
    sent at all when cutting every evidence segment would not make it fit (a failed call).
    """
    label = f"{getattr(chat, 'backend', '?')}: {getattr(chat, 'model', '?')}"
    try:
        fit = fit_context(chat, messages, settings, segments)
    except Exception:  # noqa: BLE001 — a prompt the tokenizer cannot count fails in the call below, with its reason
        fit = Fit(tuple(messages), None if segments is None else tuple(segments))
    messages, segments = fit.messages, fit.segments
    prompt = render_messages(messages)
    if fit.problem:
        call = LlmCallStep(title=f"{role} call not made", role=role, prompt=prompt, output="", tokens_in=fit.tokens,
                           backend=label)
        return ModelReply("", (call, error_step(role, f"{role} model not called: {fit.problem}")), failed=True)
    started = time.perf_counter()
    try:
        completion, attention = _complete(chat, messages, settings, role, segments)
        text = completion.text if isinstance(completion.text, str) else ""
    except ServerUnreachable:
        raise  # every later call would fail the same way: the run stops here and says so once (issue 22)
    except Exception as exc:  # noqa: BLE001 — backends should raise BackendError; a tool never crashes a run
        latency = (time.perf_counter() - started) * 1000
        call = LlmCallStep(title=f"{role} call failed", role=role, prompt=prompt, output="",
                           latency_ms=latency, elapsed_ms=latency, backend=label)
        reason = str(exc) or type(exc).__name__
        # the answer now rests on a failed backend: evaluations count it, `ask`/`eval` exit 3 (issue 26)
        failed = replace(error_step(role, f"{role} model failed: {shorten(reason)}"), backend_failure=True)
        return ModelReply("", (call, failed), failed=True)
    call = LlmCallStep(
        title=f"{role} call" + (f" — {fit.note}" if fit.note else ""), role=role, prompt=prompt, output=text,
        tokens_in=completion.tokens_in, tokens_out=completion.tokens_out, latency_ms=completion.latency_ms,
        elapsed_ms=completion.latency_ms,
        backend=f"{completion.backend}: {completion.model}", logprobs=completion.logprobs, cut=completion.cut,
    )
    return ModelReply(text, (call, *attention))


def _complete(
    chat: ChatModel, messages: Sequence[Message], settings: GenerationSettings, role: str,
    segments: Sequence[PromptSegment] | None,
) -> tuple[Completion, tuple[AttentionStep, ...]]:
    sink = reply_sink(role)  # a run nobody watches streams nothing
    if segments is not None and isinstance(chat, AttentiveChatModel) and getattr(chat, "captures_attention", True):
        streaming = {"on_text": sink} if sink is not None else {}  # the hf model streams while it captures
        completion, steps = chat.complete_with_attention(messages, segments, settings, **streaming)
        return completion, tuple(s for s in steps if isinstance(s, AttentionStep))
    if sink is not None and isinstance(chat, StreamingChatModel):
        return chat.complete_streaming(messages, settings, sink), ()
    return chat.complete(messages, settings), ()


@dataclass(frozen=True)
class Fit:
    """A call as it will be sent: its messages and segments, what was cut to fit the model's context
    (`note`), or why it cannot be sent (`problem`); `tokens` is the prompt's length as counted."""

    messages: tuple[Message, ...]
    segments: tuple[PromptSegment, ...] | None
    tokens: int = 0
    note: str = ""
    problem: str = ""


def fit_context(chat: ChatModel, messages: Sequence[Message], settings: GenerationSettings,
                segments: Sequence[PromptSegment] | None) -> Fit:
    """The messages with the prompt and `settings.max_new_tokens` fitting the model's context window.

    Evidence segments of the last user message are shortened, the longest first (all cut to the largest
    common length that fits, at a word boundary, marked with '…'), so every block keeps its start; the
    segments' offsets follow the cut text, so attention still maps. A backend that does not know its
    window (the openai backend, a scripted fake) gets the call unchanged.
    """
    messages, segments = tuple(messages), None if segments is None else tuple(segments)
    window = getattr(chat, "context_tokens", None)
    if not isinstance(chat, SizedChatModel) or not isinstance(window, int) or window <= 0:
        return Fit(messages, segments)
    room = window - settings.max_new_tokens
    tokens = chat.count_tokens(messages)
    if tokens <= room:
        return Fit(messages, segments, tokens)
    cut = _EvidenceCut(messages, segments or ())
    problem = (f"the prompt does not fit the model's {window:,}-token context: {tokens:,} prompt tokens + "
               f"{settings.max_new_tokens:,} to write")
    if not cut.blocks:
        return Fit(messages, segments, tokens, problem=f"{problem}, and it has no evidence to cut")
    floor = chat.count_tokens(cut.messages(0))
    if floor > room:
        return Fit(messages, segments, tokens, problem=f"{problem}; {floor:,} with all evidence cut")
    fits, lo, hi = floor, 0, cut.longest  # cap lo fits, cap hi (nothing cut) does not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        counted = chat.count_tokens(cut.messages(mid))
        fits, lo, hi = (counted, mid, hi) if counted <= room else (fits, lo, mid)
    shortened = cut.shortened(lo)
    note = (f"evidence cut to fit the model's {window:,}-token context: {shortened} of {len(cut.blocks)} blocks "
            f"shortened, {tokens - fits:,} tokens dropped")
    return Fit(cut.messages(lo), None if segments is None else cut.segments(lo), fits, note=note)


class _EvidenceCut:
    """The last user message with every evidence segment cut to at most `cap` characters."""

    def __init__(self, messages: tuple[Message, ...], segments: Sequence[PromptSegment]):
        users = [i for i, m in enumerate(messages) if m.role == "user"]
        self.original, self.index = messages, (users[-1] if users else -1)
        self.content = messages[self.index].content if users else ""
        self.all = tuple(segments) if users else ()  # in the caller's order: attention labels follow it
        overlaps = lambda s: any(o is not s and o.start < s.end and s.start < o.end for o in self.all)  # noqa: E731
        self.blocks = tuple(sorted((i for i, s in enumerate(self.all) if s.kind in EVIDENCE_KINDS
                                    and 0 <= s.start < s.end <= len(self.content) and not overlaps(s)),
                                   key=lambda i: self.all[i].start))

    @property
    def longest(self) -> int:
        return max(self.all[i].end - self.all[i].start for i in self.blocks)

    def shortened(self, cap: int) -> int:
        return sum(self.all[i].end - self.all[i].start > cap for i in self.blocks)

    def messages(self, cap: int) -> tuple[Message, ...]:
        text, at = [], 0
        for i, cut in self._cuts(cap).items():
            text += [self.content[at:self.all[i].start], cut]
            at = self.all[i].end
        user = replace(self.original[self.index], content="".join(text) + self.content[at:])
        return self.original[: self.index] + (user,) + self.original[self.index + 1:]

    def segments(self, cap: int) -> tuple[PromptSegment, ...]:
        """Every segment moved by the cuts before it; a cut block ends where its cut text does."""
        cuts = self._cuts(cap)
        growth = {i: len(cut) - (self.all[i].end - self.all[i].start) for i, cut in cuts.items()}
        moved = lambda pos: pos + sum(d for i, d in growth.items() if self.all[i].end <= pos)  # noqa: E731
        return tuple(replace(s, start=moved(s.start), end=moved(s.start) + len(cuts[n])) if n in cuts
                     else replace(s, start=moved(s.start), end=moved(s.end)) for n, s in enumerate(self.all))

    def _cuts(self, cap: int) -> dict[int, str]:
        """Each block's cut text by its index in `all`, in prompt order."""
        return {i: _cut_words(self.content[self.all[i].start:self.all[i].end], cap) for i in self.blocks}


def _cut_words(text: str, cap: int) -> str:
    """`text` if it has at most `cap` characters, else its longest run of whole words within `cap`, marked."""
    if len(text) <= cap:
        return text
    head = text[:cap]
    if not text[cap].isspace() and len(text.split()) > 1:  # unspaced text (Chinese, Japanese) is cut mid-run
        head = head[: max(head.rfind(" "), head.rfind("\n"), 0)]
    return f"{head.rstrip()} {CUT_MARK}" if head.strip() else CUT_MARK


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
