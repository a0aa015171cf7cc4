"""The `openai` backend: any OpenAI-compatible chat server (vLLM, Ollama, llama.cpp, TGI) over httpx.

`OpenAICompatibleChat` is a LangChain chat model; `OpenAIChatModel` adapts it to our `ChatModel`
protocol; `check_connection` backs the UI's "Check connection" button and `check_model` its "Use this
server". Every failure — server down, too slow, HTTP error, an answer that is not a chat completion —
becomes a `BackendError` whose message names the URL and says what to do. No httpx or JSON exception
escapes this module.
"""

from __future__ import annotations

import functools
import json
import logging
import ssl
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import closing, contextmanager
from dataclasses import dataclass
from typing import Any

import httpx
from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models import BaseChatModel
from langchain_core.messages import (
    AIMessage,
    AIMessageChunk,
    BaseMessage,
    ChatMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langchain_core.messages.ai import UsageMetadata
from langchain_core.outputs import ChatGeneration, ChatGenerationChunk, ChatResult
from pydantic import Field, SecretStr, ValidationError, field_validator

from engine.errors import BackendError
from engine.llm.base import register_backend, required_option
from engine.llm.chat import Completion, GenerationSettings, Message, cut_at_stop

log = logging.getLogger(__name__)

_START_HINT = "is the server running? (vLLM: `vllm serve MODEL`, Ollama: `ollama serve`)"
_MAX_BACKOFF_S = 8.0  # retries are for a server that is restarting, not for waiting out an outage
_ERROR_BODY_CHARS = 300
_EXCERPT_CHARS = 120
_MODELS_NAMED = 10  # a server with hundreds of models must not turn an error into a wall of ids
_STATUS_HINTS = {
    401: " — check the API key",
    403: " — check the API key",
    404: " — check the base URL and the model name",
    429: " — the server is busy; try again shortly",
}


# ---------------------------------------------------------------- URLs and error messages


def normalise_base_url(base_url: str) -> str:
    """`host:port`, `http://host:port`, `…/v1`, `…/v1/` and `…/v1/chat/completions` name the same API root."""
    url = base_url.strip()
    if not url:
        raise BackendError("the server URL is empty; give one like http://127.0.0.1:8000/v1")
    if "://" not in url:
        url = "http://" + url  # users paste `localhost:11434` from server logs
    url = url.rstrip("/").removesuffix("/chat/completions").removesuffix("/models").rstrip("/")
    try:
        parsed = httpx.URL(url)
    except (httpx.InvalidURL, ValueError) as exc:
        raise BackendError(f"server URL {base_url!r} is not a URL ({exc}); "
                           "give one like http://127.0.0.1:8000/v1") from exc
    if parsed.scheme not in ("http", "https") or not parsed.host:
        raise BackendError(f"server URL {base_url!r} must start with http:// or https:// and name a host, "
                           "e.g. http://127.0.0.1:8000/v1")
    return url if url.endswith("/v1") else url + "/v1"


def _excerpt(text: str, limit: int = _EXCERPT_CHARS) -> str:
    flat = " ".join(text.split())
    return repr(flat if len(flat) <= limit else flat[:limit] + "…")


def _nonsense(url: str, what: str, text: str) -> BackendError:
    return BackendError(f"{url} answered something that is not {what}: {_excerpt(text)}")


def _unreachable(base_url: str, exc: httpx.HTTPError) -> BackendError:
    text = str(exc)
    lowered = text.lower()
    if "refused" in lowered:
        reason = "connection refused"
    elif any(s in lowered for s in ("name or service", "name resolution", "nodename", "getaddrinfo", "errno -2")):
        reason = f"host {httpx.URL(base_url).host!r} not found"
    elif isinstance(exc, httpx.RemoteProtocolError):
        reason = "the server closed the connection without answering"
    else:
        reason = text or type(exc).__name__
    return BackendError(f"cannot reach {base_url}: {reason} — {_START_HINT}")


def _server_message(response: httpx.Response) -> str:
    """The server's own words: OpenAI puts them in error.message, vLLM/TGI/FastAPI elsewhere."""
    text = response.text
    try:
        data = json.loads(text)
    except ValueError:
        return text[:_ERROR_BODY_CHARS].strip() or response.reason_phrase
    if isinstance(data, dict):
        error = data.get("error")
        nested = error.get("message") if isinstance(error, dict) else error
        for found in (nested, data.get("message"), data.get("detail")):
            if isinstance(found, str) and found.strip():
                return found.strip()[:_ERROR_BODY_CHARS]
    return text[:_ERROR_BODY_CHARS].strip()


def _http_error(response: httpx.Response) -> BackendError:
    response.read()  # a streamed response has not read its error body yet
    status = response.status_code
    return BackendError(f"{response.request.url} answered HTTP {status}: {_server_message(response)}"
                        f"{_STATUS_HINTS.get(status, '')}")


# ---------------------------------------------------------------- transport with bounded retries


@dataclass(frozen=True)
class _Endpoint:
    """Where and how to talk to one server; shared by the LangChain model and `check_connection`."""

    base_url: str
    api_key: str = ""
    timeout_s: float = 60.0
    max_retries: int = 0
    backoff_s: float = 0.5

    def request(self, method: str, path: str, payload: dict[str, Any] | None = None) -> httpx.Request:
        headers = {"Accept": "application/json"}
        if self.api_key:
            headers["Authorization"] = f"Bearer {self.api_key}"
        return httpx.Request(method, self.base_url + path, headers=headers, json=payload)

    def client(self) -> httpx.Client:
        return httpx.Client(timeout=httpx.Timeout(self.timeout_s), verify=_ssl_context())


@functools.cache
def _ssl_context() -> ssl.SSLContext:
    """Loading the CA bundle costs ~30 ms; a client per request must not pay it every time."""
    return httpx.create_ssl_context()


@contextmanager
def _translated(endpoint: _Endpoint, url: str) -> Iterator[None]:
    """Turn whatever httpx raises into a BackendError the user can act on."""
    try:
        yield
    except httpx.TimeoutException as exc:
        raise BackendError(f"{url} did not answer within {endpoint.timeout_s:g} s — the server may be overloaded "
                           "or the model still loading; raise the timeout or try again") from exc
    except httpx.ConnectError as exc:
        raise _unreachable(endpoint.base_url, exc) from exc
    except (httpx.HTTPError, httpx.InvalidURL) as exc:
        raise BackendError(f"talking to {url} failed: {exc or type(exc).__name__}") from exc


def _retryable_status(status: int) -> bool:
    return status == 429 or status >= 500


def _send(endpoint: _Endpoint, client: httpx.Client, request: httpx.Request, *, stream: bool = False) -> httpx.Response:
    """A 2xx response, retrying with exponential backoff only when another try can help:
    the server is not (yet) listening, is rate-limiting (429) or failed internally (5xx)."""
    for attempt in range(endpoint.max_retries + 1):
        last = attempt == endpoint.max_retries
        with _translated(endpoint, str(request.url)):
            try:
                response = client.send(request, stream=stream)
            except (httpx.ConnectError, httpx.RemoteProtocolError) as exc:
                if last:
                    raise _unreachable(endpoint.base_url, exc) from exc
                problem = str(exc) or type(exc).__name__
            else:
                if response.is_success:
                    return response
                if last or not _retryable_status(response.status_code):
                    raise _http_error(response)
                response.close()
                problem = f"HTTP {response.status_code}"
        delay = min(_MAX_BACKOFF_S, endpoint.backoff_s * 2**attempt)
        log.warning("%s: %s; retry %d/%d in %.2g s", request.url, problem, attempt + 1, endpoint.max_retries, delay)
        time.sleep(delay)
    raise AssertionError("the loop above returns or raises")  # pragma: no cover


def _get_json(endpoint: _Endpoint, request: httpx.Request, what: str) -> Any:
    with endpoint.client() as client:
        response = _send(endpoint, client, request)
        with _translated(endpoint, str(request.url)):
            text = response.text
    try:
        return json.loads(text)
    except ValueError:
        raise _nonsense(str(request.url), what, text) from None


# ---------------------------------------------------------------- OpenAI chat wire format

_ROLES = {"system": "system", "human": "user", "ai": "assistant", "tool": "tool"}
_COMPLETION = "an OpenAI chat completion"


def _wire_message(message: BaseMessage) -> dict[str, Any]:
    if isinstance(message, ChatMessage):
        role = message.role
    elif message.type in _ROLES:
        role = _ROLES[message.type]
    else:
        raise BackendError(f"cannot send a {message.type!r} message to an OpenAI-compatible server; "
                           f"known: {', '.join(_ROLES)}, chat")
    wire: dict[str, Any] = {"role": role, "content": message.content}
    if isinstance(message, ToolMessage):
        wire["tool_call_id"] = message.tool_call_id
    return wire


def _usage(data: dict[str, Any]) -> UsageMetadata | None:
    usage = data.get("usage")
    if not isinstance(usage, dict):
        return None
    tokens_in, tokens_out = usage.get("prompt_tokens"), usage.get("completion_tokens")
    if not (isinstance(tokens_in, int) and isinstance(tokens_out, int)):
        return None
    return UsageMetadata(input_tokens=tokens_in, output_tokens=tokens_out, total_tokens=tokens_in + tokens_out)


def _first_choice(data: Any) -> dict[str, Any] | None:
    choices = data.get("choices") if isinstance(data, dict) else None
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def _reply_text(data: Any) -> str | None:
    """The assistant's text, or None when `data` is not a chat completion with text in it."""
    choice = _first_choice(data)
    message = choice.get("message") if choice else None
    content = message.get("content") if isinstance(message, dict) else None
    return content if isinstance(content, str) else None


def _cut_stream(pieces: Iterable[str], stop: Sequence[str]) -> Iterator[str]:
    """Stream `pieces` but end before the first stop string, even one split across pieces:
    hold back any tail that could still become a stop string."""
    stop = [s for s in stop if s]
    pending = ""
    for piece in pieces:
        pending += piece
        cut = cut_at_stop(pending, stop)
        if len(cut) < len(pending):
            if cut:
                yield cut
            return
        hold = max((k for s in stop for k in range(1, len(s)) if pending.endswith(s[:k])), default=0)
        ready, pending = pending[: len(pending) - hold], pending[len(pending) - hold:]
        if ready:
            yield ready
    if pending:
        yield pending


def _sse_lines(lines: Iterable[str]) -> Iterator[tuple[str, str]]:
    """("data", payload) per server-sent event and ("junk", line) for lines SSE does not allow.
    Per the WHATWG SSE spec, data lines join with newlines and a blank line ends the event;
    comments and the event/id/retry fields carry nothing an OpenAI stream needs."""
    data: list[str] = []
    for line in lines:
        if not line:
            if data:
                yield "data", "\n".join(data)
            data = []
        elif line.startswith("data:"):
            data.append(line[5:].removeprefix(" "))
        elif not line.startswith((":", "event:", "id:", "retry:")):
            yield "junk", line
    if data:
        yield "data", "\n".join(data)


_STREAM = "an OpenAI chat completion stream"


def _stream_chunks(endpoint: _Endpoint, request: httpx.Request) -> Iterator[dict[str, Any]]:
    """The `chat.completion.chunk` objects of an SSE stream, up to `data: [DONE]`."""
    url = str(request.url)
    with endpoint.client() as client, _translated(endpoint, url):
        response = _send(endpoint, client, request, stream=True)
        try:
            events, junk = 0, ""
            for kind, payload in _sse_lines(response.iter_lines()):
                if kind == "junk":  # kept only to show the user what came instead of events
                    junk = (junk + " " + payload)[:_ERROR_BODY_CHARS]
                elif payload.strip() == "[DONE]":
                    return
                else:
                    events += 1
                    yield _parse_chunk(url, payload)
            if not events:
                raise _nonsense(url, _STREAM, junk or "(empty body)")
        finally:
            response.close()


def _parse_chunk(url: str, payload: str) -> dict[str, Any]:
    try:
        data = json.loads(payload)
    except ValueError:
        raise _nonsense(url, _STREAM, payload) from None
    if isinstance(data, dict) and data.get("error"):  # vLLM reports failures mid-stream this way
        error = data["error"]
        message = error.get("message") if isinstance(error, dict) else error
        raise BackendError(f"{url} failed mid-answer: {str(message)[:_ERROR_BODY_CHARS]}")
    if not isinstance(data, dict) or not isinstance(data.get("choices"), list):
        raise _nonsense(url, _STREAM, payload)
    return data


def _delta_text(url: str, chunk: dict[str, Any]) -> str | None:
    """The text a chunk adds; None for role-only, finish and usage-only chunks."""
    choice = _first_choice(chunk)
    if choice is None:  # with stream_options.include_usage the last chunk has no choices
        return None
    delta = choice.get("delta")
    if not isinstance(delta, dict) or not isinstance(delta.get("content"), (str, type(None))):
        raise _nonsense(url, _STREAM, json.dumps(chunk, ensure_ascii=False))
    return delta.get("content")


def _chunk_metadata(chunk: dict[str, Any]) -> dict[str, Any]:
    choice = _first_choice(chunk) or {}
    found = {"usage": _usage(chunk), "model": chunk.get("model"), "finish_reason": choice.get("finish_reason")}
    return {key: value for key, value in found.items() if value}


# ---------------------------------------------------------------- the LangChain chat model


class OpenAICompatibleChat(BaseChatModel):
    """A LangChain chat model for any server that speaks OpenAI's `/v1/chat/completions`."""

    base_url: str
    model: str
    api_key: SecretStr | None = Field(default=None, description="sent as a Bearer token when not empty")
    timeout_s: float = Field(default=60.0, gt=0)
    max_retries: int = Field(default=2, ge=0, le=10)
    retry_backoff_s: float = Field(default=0.5, ge=0, description="first retry delay; doubles each retry")
    temperature: float | None = None
    max_tokens: int | None = None
    stop: list[str] | None = None

    @field_validator("base_url")
    @classmethod
    def _normalise(cls, base_url: str) -> str:
        return normalise_base_url(base_url)

    @property
    def _llm_type(self) -> str:
        return "openai-compatible"

    @property
    def _identifying_params(self) -> dict[str, Any]:
        return {"model": self.model, "base_url": self.base_url}

    def _endpoint(self) -> _Endpoint:
        api_key = self.api_key.get_secret_value() if self.api_key else ""
        return _Endpoint(self.base_url, api_key, self.timeout_s, self.max_retries, self.retry_backoff_s)

    def _payload(
        self, messages: list[BaseMessage], stop: list[str] | None, stream: bool, **kwargs: Any,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {"model": self.model, "messages": [_wire_message(m) for m in messages],
                                   "stream": stream}
        for key in ("temperature", "max_tokens"):
            value = kwargs.get(key, getattr(self, key))
            if value is not None:
                payload[key] = value
        if stop:
            payload["stop"] = list(stop)
        return payload

    def _generate(
        self, messages: list[BaseMessage], stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any,
    ) -> ChatResult:
        stop = stop if stop is not None else self.stop
        endpoint = self._endpoint()
        request = endpoint.request("POST", "/chat/completions", self._payload(messages, stop, False, **kwargs))
        data = _get_json(endpoint, request, _COMPLETION)
        text = _reply_text(data)
        if text is None:
            raise _nonsense(str(request.url), _COMPLETION, json.dumps(data, ensure_ascii=False))
        model = data.get("model") or self.model
        # servers stop a few tokens late or ignore `stop`; the contract is "ends before the stop string"
        message = AIMessage(content=cut_at_stop(text, stop or ()), usage_metadata=_usage(data),
                            response_metadata={"model_name": model,
                                               "finish_reason": _first_choice(data).get("finish_reason")})
        return ChatResult(generations=[ChatGeneration(message=message)],
                          llm_output={"model_name": model, "token_usage": data.get("usage")})

    def _stream(
        self, messages: list[BaseMessage], stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None, **kwargs: Any,
    ) -> Iterator[ChatGenerationChunk]:
        stop = stop if stop is not None else self.stop
        endpoint = self._endpoint()
        request = endpoint.request("POST", "/chat/completions", self._payload(messages, stop, True, **kwargs))
        final: dict[str, Any] = {"model": self.model}

        def texts() -> Iterator[str]:
            # usage, model and finish reason arrive on the last events, after the text
            for chunk in _stream_chunks(endpoint, request):
                final.update(_chunk_metadata(chunk))
                text = _delta_text(str(request.url), chunk)
                if text:
                    yield text

        # closing(): a stop string ends the stream early, and the connection must not wait for the GC
        with closing(texts()) as pieces:
            for text in _cut_stream(pieces, stop or ()):
                chunk = ChatGenerationChunk(message=AIMessageChunk(content=text))
                if run_manager:
                    run_manager.on_llm_new_token(text, chunk=chunk)
                yield chunk
        yield ChatGenerationChunk(message=AIMessageChunk(
            content="", usage_metadata=final.get("usage"), chunk_position="last",
            response_metadata={"model_name": final["model"], "finish_reason": final.get("finish_reason")}))


# ---------------------------------------------------------------- our ChatModel protocol

_LANGCHAIN_TYPES = {"system": SystemMessage, "user": HumanMessage, "assistant": AIMessage}


def _to_langchain(messages: Sequence[Message]) -> list[BaseMessage]:
    return [_LANGCHAIN_TYPES[m.role](content=m.content) if m.role in _LANGCHAIN_TYPES
            else ChatMessage(role=m.role, content=m.content) for m in messages]


def _call_options(settings: GenerationSettings) -> dict[str, Any]:
    return {"temperature": settings.temperature, "max_tokens": settings.max_new_tokens, "stop": list(settings.stop)}


def _approx_tokens(texts: Iterable[str]) -> int:
    return sum(len(text.split()) for text in texts)


class OpenAIChatModel:
    """`ChatModel` over an OpenAI-compatible server, through `OpenAICompatibleChat` (kept as `.chat`)."""

    backend = "openai"

    def __init__(self, base_url: str, model: str, api_key: str = "", timeout_s: float = 60, max_retries: int = 2):
        try:
            self.chat = OpenAICompatibleChat(base_url=base_url, model=model, api_key=api_key,
                                             timeout_s=timeout_s, max_retries=max_retries)
        except ValidationError as exc:  # settings typed into the UI: say which one and why
            problems = "; ".join(f"{'.'.join(map(str, e['loc']))} {e['msg'].lower()} (got {e['input']!r})"
                                 for e in exc.errors())
            raise BackendError(f"invalid openai backend settings: {problems}") from exc
        self.model = model
        self.base_url = self.chat.base_url

    def complete(self, messages: Sequence[Message], settings: GenerationSettings = GenerationSettings()) -> Completion:
        chat = _to_langchain(messages)
        started = time.perf_counter()
        reply = self.chat.invoke(chat, **_call_options(settings))
        latency_ms = (time.perf_counter() - started) * 1000
        text = cut_at_stop(reply.text, settings.stop)
        usage = reply.usage_metadata
        if usage:
            tokens_in, tokens_out = usage["input_tokens"], usage["output_tokens"]
        else:  # some servers omit `usage`; whitespace words stand in as a rough count
            tokens_in, tokens_out = _approx_tokens(m.content for m in messages), _approx_tokens([text])
        return Completion(text=text, tokens_in=tokens_in, tokens_out=tokens_out, latency_ms=latency_ms,
                          backend=self.backend, model=self.model)

    def stream(self, messages: Sequence[Message], settings: GenerationSettings = GenerationSettings()) -> Iterator[str]:
        """The reply's text piece by piece as the server produces it, ending before any stop string."""
        for chunk in self.chat.stream(_to_langchain(messages), **_call_options(settings)):
            if chunk.text:
                yield chunk.text


def check_connection(base_url: str, api_key: str = "", timeout_s: float = 5) -> list[str]:
    """The ids of the models the server offers (GET /v1/models); raises BackendError when it cannot say."""
    endpoint = _Endpoint(normalise_base_url(base_url), api_key, timeout_s)
    request = endpoint.request("GET", "/models")
    what = "an OpenAI model list"
    data = _get_json(endpoint, request, what)
    models = data.get("data") if isinstance(data, dict) else None
    if not isinstance(models, list) or not all(isinstance(m, dict) and isinstance(m.get("id"), str) for m in models):
        raise _nonsense(str(request.url), what, json.dumps(data, ensure_ascii=False))
    return [m["id"] for m in models]


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
