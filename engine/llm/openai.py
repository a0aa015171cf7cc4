"""The `openai` backend: any OpenAI-compatible chat server (vLLM, Ollama, llama.cpp, TGI).

`OpenAIChatModel` adapts the `openai` client (set up in engine/llm/openai_client.py) to our `ChatModel`
protocol, with token logprobs where the server gives them and streaming for the live view (issue 18);
`check_connection` backs the Models page's "Check connection" button and `check_model` its "Use this
server". Every failure is a `BackendError` whose message names the URL and says what to do.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Sequence
from contextlib import closing
from typing import TYPE_CHECKING, Any

from engine.errors import BackendError
from engine.llm.base import register_backend, required_option
from engine.llm.chat import (
    Completion,
    GenerationSettings,
    Message,
    StreamCut,
    TokenSink,
    cut_at_stop,
    logprobs_within,
)
from engine.urls import http_url

if TYPE_CHECKING:
    from engine.llm.openai_client import Reply

_MAX_RETRIES = 10
_MODELS_NAMED = 10  # a server with hundreds of models must not turn an error into a wall of ids


def normalise_base_url(base_url: str) -> str:
    """`host:port`, `http://host:port`, `…/v1`, `…/v1/` and `…/v1/chat/completions` name the same API root."""
    url = base_url.strip()
    if not url:
        raise BackendError("the server URL is empty; give one like http://127.0.0.1:8000/v1")
    if "://" not in url:
        url = "http://" + url  # users paste `localhost:11434` from server logs
    url = url.rstrip("/").removesuffix("/chat/completions").removesuffix("/models").rstrip("/")
    http_url(url, "server URL", "http://127.0.0.1:8000/v1", BackendError)
    return url if url.endswith("/v1") else url + "/v1"


def _approx_tokens(texts: Iterable[str]) -> int:
    return sum(len(text.split()) for text in texts)


class OpenAIChatModel:
    """`ChatModel` over an OpenAI-compatible server: one pooled client, shared by threads asking at once."""

    backend = "openai"

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout_s: float = 60, max_retries: int = 2):
        from engine.llm.openai_client import Server  # `import openai` only once this backend is used

        if not timeout_s > 0:
            raise BackendError(f"invalid openai backend settings: timeout_s must be more than 0 (got {timeout_s!r})")
        if not 0 <= max_retries <= _MAX_RETRIES:
            raise BackendError(f"invalid openai backend settings: max_retries must be 0 to {_MAX_RETRIES} "
                               f"(got {max_retries!r})")
        self.model = model
        self.base_url = normalise_base_url(base_url)
        self._server = Server(self.base_url, api_key, timeout_s, max_retries)

    def _request(self, messages: Sequence[Message], settings: GenerationSettings) -> dict[str, Any]:
        request: dict[str, Any] = {"model": self.model, "temperature": settings.temperature,
                                   "max_tokens": settings.max_new_tokens,
                                   "messages": [{"role": m.role, "content": m.content} for m in messages],
                                   "logprobs": True}  # left out once the server refuses it (openai_client)
        if settings.stop:
            request["stop"] = list(settings.stop)
        return request

    def complete(self, messages: Sequence[Message], settings: GenerationSettings = GenerationSettings()) -> Completion:
        started = time.perf_counter()
        reply = self._server.completion(self._request(messages, settings))
        return self._completion(reply, messages, settings, started)

    def complete_streaming(self, messages: Sequence[Message], settings: GenerationSettings,
                           on_text: TokenSink) -> Completion:
        """`complete` over a stream, handing `on_text` the text as it comes. A server that ignores `stop`
        is read to the end (or to the reply's bounds) all the same (usage and logprobs come last), so the
        completion is the one `complete` returns; only `on_text` ends before the stop string."""
        started = time.perf_counter()
        cut = StreamCut(settings.stop)

        def show(piece: str) -> None:
            if shown := cut.feed(piece):
                on_text(shown)

        request = {**self._request(messages, settings), "stream_options": {"include_usage": True}}
        reply = self._server.streamed(request, show)
        if rest := cut.flush():
            on_text(rest)
        return self._completion(reply, messages, settings, started)

    def _completion(self, reply: Reply, messages: Sequence[Message], settings: GenerationSettings,
                    started: float) -> Completion:
        latency_ms = (time.perf_counter() - started) * 1000
        # servers stop a few tokens late or ignore `stop`; the contract is "ends before the stop string"
        text = cut_at_stop(reply.text, settings.stop)
        # some servers omit `usage`; whitespace words stand in as a rough count
        tokens_in, tokens_out = reply.usage or (_approx_tokens(m.content for m in messages), _approx_tokens([text]))
        return Completion(text=text, tokens_in=tokens_in, tokens_out=tokens_out, latency_ms=latency_ms,
                          backend=self.backend, model=self.model,
                          logprobs=logprobs_within(reply.logprobs, text, reply.text), cut=reply.cut)


def check_connection(base_url: str, api_key: str = "", timeout_s: float = 5) -> list[str]:
    """The ids of the models the server offers (GET /v1/models, asked once); BackendError when it cannot say."""
    from engine.llm.openai_client import Server

    with closing(Server(normalise_base_url(base_url), api_key, timeout_s, max_retries=0)) as server:
        return server.model_ids()


def check_model(base_url: str, model: str, api_key: str = "", timeout_s: float = 5) -> list[str]:
    """`check_connection`, and the server must offer `model`: a server is accepted only once both hold."""
    ids = check_connection(base_url, api_key, timeout_s)
    if model not in ids:
        more = len(ids) - _MODELS_NAMED
        offered = ", ".join(ids[:_MODELS_NAMED]) + (f" and {more} more" if more > 0 else "")
        raise BackendError(f"{normalise_base_url(base_url)} answers but does not offer model {model!r}; "
                           f"it offers: {offered or 'no models'} — use one of these ids as the model name")
    return ids


@register_backend("openai")
def openai_chat(options: dict[str, Any]) -> OpenAIChatModel:
    """options: base_url, model, api_key, timeout_s. Attention capture needs local weights (hf)."""
    return OpenAIChatModel(
        base_url=required_option(options, "base_url", "openai", "--base-url http://127.0.0.1:8000/v1"),
        model=required_option(options, "model", "openai", "--model meta-llama/Meta-Llama-3-8B-Instruct"),
        api_key=str(options.get("api_key", "")), timeout_s=float(options.get("timeout_s", 60)),
    )
