"""The `langchain` backend: any LangChain chat model, as `provider:name` (through `init_chat_model`) or a user's
`module:factory` returning a `BaseChatModel`.

What such a model cannot give is said, not faked: no attention (no weights here), no R2AG injection (text only;
R2AG's decision step says so), token logprobs only where the provider puts them in `response_metadata`. Every
call is bounded (the model's own max-tokens field where it has one, else the kept text is cut at that many
words), has a deadline (the model's timeout field, and between streamed pieces), never traces to LangSmith,
and fails as a `BackendError`. No key is read from the environment: `api_key` is passed explicitly, a dummy
that is never sent when the user gives none. langchain is imported only once this backend is used.
"""

from __future__ import annotations

import importlib
import re
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from engine.errors import BackendError, ServerUnreachable
from engine.llm.base import register_backend, required_option
from engine.llm.bounds import ReplyBounds, ReplyMeter
from engine.llm.chat import (
    Completion,
    GenerationSettings,
    Message,
    StreamCut,
    TokenSink,
    cut_at_stop,
    logprobs_within,
)
from engine.trace import TokenLogprob
from engine.untraced import untraced

if TYPE_CHECKING:
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import BaseMessage

BACKEND = "langchain"
LOST = ("no attention heatmaps (a LangChain model gives no weights to look into); no R2AG injection (it takes "
        "text only, R2AG re-ranks and reads); token logprobs only where the provider reports them")
_NO_KEY = "no-key"  # never sent (see _KeyHeadersLeftOut): a missing key must not be looked up in OPENAI_API_KEY
_KEYLESS_PROVIDERS = frozenset({"ollama"})  # local servers whose models take no api_key
_MAX_TOKEN_FIELDS = ("max_tokens", "max_completion_tokens", "max_output_tokens", "num_predict", "max_new_tokens")
_TIMEOUT_FIELDS = ("request_timeout", "timeout")
_UNREACHABLE = ("APIConnectionError", "APITimeoutError", "ConnectError", "ConnectTimeout", "ReadTimeout",
                "TimeoutException", "ConnectionError", "TimeoutError")
_ROLES = {"system": "SystemMessage", "user": "HumanMessage", "assistant": "AIMessage"}
_SHOWN = 300


class LangChainChatModel:
    """`ChatModel` and `StreamingChatModel` over a LangChain `BaseChatModel`; each call streams, so the bound
    and the deadline hold even for a model that honours neither."""

    backend = BACKEND

    def __init__(self, chat: BaseChatModel, model: str, timeout_s: float = 60):
        if not timeout_s > 0:
            raise BackendError(f"invalid langchain backend settings: timeout_s must be more than 0 (got {timeout_s!r})")
        self.chat, self.model, self.timeout_s = chat, model, timeout_s
        self.bounded = _field(chat, _MAX_TOKEN_FIELDS) is not None  # else the text is cut here

    def complete(self, messages: Sequence[Message], settings: GenerationSettings = GenerationSettings()) -> Completion:
        return self.complete_streaming(messages, settings, lambda _piece: None)

    def complete_streaming(self, messages: Sequence[Message], settings: GenerationSettings,
                           on_text: TokenSink) -> Completion:
        """The reply as it streams, read until the model ends it or a bound of engine/llm/bounds.py is reached
        (then what came is kept and the completion says why); a deadline passed before any text is an error."""
        started = time.perf_counter()
        stop = StreamCut(settings.stop)
        meter = ReplyMeter(ReplyBounds(self.timeout_s, settings.max_new_tokens))
        written, reply, cut = "", None, ""
        with _translated(self.model, self.timeout_s):
            for chunk in self._stream(messages, settings):
                reply = chunk if reply is None else reply + chunk
                text = meter.take(_text(chunk))
                written, piece = _within_words(written, text, settings.max_new_tokens)
                if shown := stop.feed(piece):
                    on_text(shown)
                if len(piece) < len(text) or (len(written.split()) >= settings.max_new_tokens and not self.bounded):
                    cut = f"reply cut at {settings.max_new_tokens:,} words (max_tokens {settings.max_new_tokens:,})"
                    break  # no max-tokens field: a model that will not stop is stopped here
                if meter.cut is not None:
                    if meter.cut.timed_out and not written.strip():
                        raise TimeoutError(f"the reply took more than {self.timeout_s:g} s")
                    cut = meter.cut.reason
                    break
        if rest := stop.flush():
            on_text(rest)
        return replace(self._completion(reply, written, messages, settings, started), cut=cut)

    def _stream(self, messages: Sequence[Message], settings: GenerationSettings) -> Iterator[Any]:
        chat = self.chat.model_copy(update=_knobs(self.chat, settings, self.timeout_s))
        with untraced():  # LANGSMITH_TRACING in the environment must not switch it on
            yield from chat.stream(_lc_messages(messages), stop=list(settings.stop) or None)

    def _completion(self, reply: Any, written: str, messages: Sequence[Message], settings: GenerationSettings,
                    started: float) -> Completion:
        text = cut_at_stop(written, settings.stop)
        usage = getattr(reply, "usage_metadata", None) or {}
        tokens_in = usage.get("input_tokens") or sum(len(m.content.split()) for m in messages)
        tokens_out = usage.get("output_tokens") or len(text.split())
        logprobs = _logprobs(getattr(reply, "response_metadata", None) or {})
        return Completion(text=text, tokens_in=tokens_in, tokens_out=tokens_out,
                          latency_ms=(time.perf_counter() - started) * 1000, backend=self.backend, model=self.model,
                          logprobs=logprobs_within(logprobs, text, written))


def _field(chat: Any, names: Sequence[str]) -> str | None:
    """The first of `names` that is a field of the model (pydantic), or None."""
    fields = getattr(type(chat), "model_fields", {})
    return next((name for name in names if name in fields), None)


def _knobs(chat: Any, settings: GenerationSettings, timeout_s: float) -> dict[str, Any]:
    """This call's settings, written into the model's own fields (providers name them differently; an
    argument to `stream` a provider does not know would fail the call)."""
    knobs: dict[str, Any] = {}
    if limit := _field(chat, _MAX_TOKEN_FIELDS):
        knobs[limit] = settings.max_new_tokens
    if _field(chat, ("temperature",)):
        knobs["temperature"] = settings.temperature
    if (deadline := _field(chat, _TIMEOUT_FIELDS)) and getattr(chat, deadline, None) is None:
        knobs[deadline] = timeout_s
    return knobs


def _lc_messages(messages: Sequence[Message]) -> list[BaseMessage]:
    from langchain_core import messages as lc

    unknown = sorted({m.role for m in messages} - set(_ROLES))
    if unknown:
        raise BackendError(f"the langchain backend cannot send messages of role {', '.join(unknown)}")
    return [getattr(lc, _ROLES[m.role])(content=m.content) for m in messages]


def _text(chunk: Any) -> str:
    return str(getattr(chunk, "text", "") or "")


def _within_words(written: str, piece: str, limit: int) -> tuple[str, str]:
    """`written + piece` cut after its `limit`-th word, and what of `piece` survived the cut."""
    whole = written + piece
    ends = [m.end() for m in re.finditer(r"\S+", whole)]
    kept = whole[: ends[limit - 1]] if limit > 0 and len(ends) > limit else whole
    return kept, kept[len(written):]


def _logprobs(metadata: dict[str, Any]) -> tuple[TokenLogprob, ...]:
    """Token logprobs as OpenAI-style providers report them (`logprobs.content`); none when any is malformed."""
    content = (metadata.get("logprobs") or {}).get("content") if isinstance(metadata.get("logprobs"), dict) else None
    if not isinstance(content, list):
        return ()
    found = tuple(TokenLogprob(t["token"], float(t["logprob"])) for t in content if isinstance(t, dict)
                  and isinstance(t.get("token"), str) and isinstance(t.get("logprob"), (int, float)))
    return found if len(found) == len(content) else ()


@contextmanager
def _translated(model: str, timeout_s: float) -> Iterator[None]:
    """Whatever the provider raises becomes a BackendError naming the model; an unreachable server or a missed
    deadline a ServerUnreachable, which ends the run at the first failure."""
    try:
        yield
    except BackendError:
        raise
    except Exception as exc:  # providers raise their own types; none may crash a run
        if getattr(getattr(exc, "response", None), "has_redirect_location", False):  # an httpx response
            from engine.llm.bounded_http import redirected

            raise redirected(exc.response) from exc  # type: ignore[attr-defined]
        said = " ".join(str(exc).split())[:_SHOWN] or type(exc).__name__
        if any(k.__name__ in _UNREACHABLE for k in type(exc).__mro__):
            raise ServerUnreachable(f"langchain model {model}: no answer ({said}) — is the server running and "
                                    f"answering within {timeout_s:g} s?") from exc
        raise BackendError(f"langchain model {model} failed: {type(exc).__name__}: {said}") from exc


# ---- opening a model -------------------------------------------------------------------------------------


def is_factory(spec: str) -> bool:
    """`module:factory` (a dotted module and a name) rather than LangChain's `provider:model`."""
    from langchain.chat_models.base import _BUILTIN_PROVIDERS  # the list init_chat_model itself parses with

    head, sep, tail = spec.partition(":")
    return bool(sep) and head not in _BUILTIN_PROVIDERS and all(p.isidentifier() for p in (*head.split("."), tail))


def load_factory(spec: str) -> BaseChatModel:
    """Call the user's `module:factory` (no arguments) and check it returned a LangChain chat model."""
    from langchain_core.language_models import BaseChatModel

    module_name, _, name = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module_name), name)
    except (ImportError, AttributeError) as exc:
        raise BackendError(f"cannot load chat model factory {spec!r}: {exc} — give module:function, with the "
                           "module importable from the current folder or PYTHONPATH") from exc
    try:
        chat = factory()
    except Exception as exc:  # the user's code; its failure is theirs to read
        raise BackendError(f"chat model factory {spec!r} failed: {type(exc).__name__}: {exc}") from exc
    if not isinstance(chat, BaseChatModel):
        raise BackendError(f"chat model factory {spec!r} returned {type(chat).__name__}, not a LangChain "
                           "BaseChatModel (e.g. ChatOpenAI(...), ChatOllama(...))")
    return chat


def init_provider_model(spec: str, base_url: str, api_key: str, timeout_s: float) -> BaseChatModel:
    """`init_chat_model(spec)` with the key, URL and deadline passed explicitly, never looked up."""
    from langchain.chat_models import init_chat_model

    provider = spec.partition(":")[0] if ":" in spec else ""
    options: dict[str, Any] = {"timeout": timeout_s, "max_retries": 1}
    if base_url:
        options["base_url"] = base_url
    if provider not in _KEYLESS_PROVIDERS:
        options["api_key"] = api_key or _NO_KEY
    if provider == "openai":  # OPENAI_API_BASE, OPENAI_ORG_ID and OPENAI_PROJECT_ID are no business of ours
        options.setdefault("base_url", "https://api.openai.com/v1")
        options.update(http_client=_openai_http_client(bool(api_key), timeout_s), stream_usage=True)
    try:
        return init_chat_model(spec, **options)
    except Exception as exc:  # unknown provider, missing integration package, bad option
        raise BackendError(f"langchain cannot open {spec!r}: {type(exc).__name__}: {exc} — give provider:model "
                           "(e.g. openai:gpt-4o-mini with --base-url, ollama:llama3) or module:factory") from exc


def _openai_http_client(has_key: bool, timeout_s: float) -> Any:
    from engine.llm.bounded_http import BoundedClient  # imports openai

    class _KeyHeadersLeftOut(BoundedClient):
        """Sends no header the client filled from the environment, nor the dummy key; reads a bounded body
        and follows no redirect (engine/llm/bounded_http.py)."""

        def send(self, request: Any, **kwargs: Any) -> Any:
            for name in ("OpenAI-Organization", "OpenAI-Project", *(() if has_key else ("Authorization",))):
                request.headers.pop(name, None)
            return super().send(request, **kwargs)

    return _KeyHeadersLeftOut(timeout_s)


@register_backend(BACKEND)
def langchain_chat(options: dict[str, Any]) -> LangChainChatModel:
    """options: model (provider:name or module:factory), base_url, api_key, timeout_s."""
    spec = required_option(options, "model", BACKEND, "--model openai:gpt-4o-mini or --model mymodule:make_chat")
    timeout_s = float(options.get("timeout_s", 60))
    chat = (load_factory(spec) if is_factory(spec) else
            init_provider_model(spec, str(options.get("base_url") or ""), str(options.get("api_key") or ""), timeout_s))
    return LangChainChatModel(chat, spec, timeout_s)
