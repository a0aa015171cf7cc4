"""Talking to an OpenAI-compatible server through the `openai` client, every failure a `BackendError`.

Apart from engine/llm/openai.py because `import openai` costs about half a second, which runs on the
offline and hf backends must not pay. The client does the wire format, connection pooling and bounded
retries (refused connections, 429 and 5xx, with backoff); this module adds what a third-party server
needs: only what the user typed is sent, a timeout is not retried, no redirect is followed, every reply is
bounded by time, tokens and bytes (engine/llm/bounded_http.py, bounds.py) and checked before use, a
server that refuses an optional parameter (logprobs) is asked again without it, and each error names
the URL and says what to do. No openai or httpx2 exception escapes it.
"""

from __future__ import annotations

import json
import logging
import math
import re
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, TypeVar
from urllib.parse import urlsplit

import httpx2
import openai

from engine.errors import BackendError, ServerUnreachable
from engine.llm.bounded_http import CUT, BoundedClient, redirected
from engine.llm.bounds import DEFAULT_MAX_TOKENS, Cut, ReplyBounds, ReplyMeter
from engine.llm.chat import logprobs_within
from engine.trace import TokenLogprob

T = TypeVar("T")
log = logging.getLogger(__name__)

_START_HINT = "is the server running? (vLLM: `vllm serve MODEL`, Ollama: `ollama serve`)"
_ERROR_BODY_CHARS = 300
_EXCERPT_CHARS = 120
_STATUS_HINTS = {
    401: " — check the API key",
    403: " — check the API key",
    404: " — check the base URL and the model name",
    429: " — the server is busy; try again shortly",
}
_COMPLETION, _MODEL_LIST = "an OpenAI chat completion", "an OpenAI model list"
_STREAM = _COMPLETION + " stream"
# The client fills these from OPENAI_ORG_ID, OPENAI_PROJECT_ID and OPENAI_CUSTOM_HEADERS: an OpenAI
# account's ids and credentials are no business of a self-hosted server.
_NOT_FROM_THE_ENVIRONMENT = ("OpenAI-Organization", "OpenAI-Project", "Authorization")
_NO_KEY = "no-key"  # never sent: the client refuses an empty key, and None would read OPENAI_API_KEY
# Request parameters the answer does without: many servers refuse one they do not implement (HTTP 400/422).
OPTIONAL_PARAMETERS = ("logprobs", "stream_options")
# a completion's message text in its JSON body, and a JSON string's body up to its closing quote, a cut
# escape or the end: what `partial_content` reads of a body cut short
_CONTENT = re.compile(r'"content"\s*:\s*"')
_STRING_PART = re.compile(r'(?:[^"\\]+|\\["\\/bfnrt]|\\u[0-9a-fA-F]{4})*')


@dataclass(frozen=True)
class Reply:
    """What ragscope reads of a chat completion, or of one stream event (a piece of each)."""

    text: str
    logprobs: tuple[TokenLogprob, ...] = ()
    usage: tuple[int, int] | None = None  # prompt and completion tokens, when the server counted them
    cut: str = ""  # why the reply was cut short at one of its bounds, "" when the server ended it


class Server:
    """One server: a pooled client, safe to share between threads (evaluation asks with --workers N)."""

    def __init__(self, base_url: str, api_key: str, timeout_s: float, max_retries: int):
        self.base_url, self.timeout_s = base_url, timeout_s
        headers: dict[str, Any] = dict.fromkeys(_NOT_FROM_THE_ENVIRONMENT, openai.Omit())
        if api_key:
            headers["Authorization"] = f"Bearer {api_key}"
        self.client = openai.OpenAI(base_url=base_url, api_key=api_key or _NO_KEY, timeout=timeout_s,
                                    max_retries=max_retries, default_headers=headers,
                                    http_client=BoundedClient(timeout_s))
        # again per request: the client takes a missing key only from a header left out in the call itself
        self.headers = {} if api_key else {"Authorization": openai.Omit()}
        self._refused: frozenset[str] = frozenset()  # optional parameters this server said no to

    @contextmanager
    def translated(self) -> Iterator[None]:
        """Turn whatever the client raises into a BackendError the user can act on."""
        try:
            yield
        except openai.APITimeoutError as exc:
            raise self._too_slow(exc.request.url) from exc
        except openai.APIConnectionError as exc:
            raise unreachable(self.base_url, exc) from exc
        except openai.APIStatusError as exc:
            status = exc.response.status_code
            if exc.response.has_redirect_location:
                raise redirected(exc.response) from exc
            raise BackendError(f"{exc.request.url} answered HTTP {status}: {_server_message(exc.response)}"
                               f"{_STATUS_HINTS.get(status, '')}") from exc
        except openai.APIError as exc:  # vLLM reports a failure mid-stream as an error event
            raise BackendError(f"{exc.request.url} failed mid-answer: {exc.message[:_ERROR_BODY_CHARS]}") from exc

    def completion(self, request: dict[str, Any]) -> Reply:
        """The chat completion for `request`, checked to carry the assistant's text; a body cut at its
        bounds (bounded_http) gives the text it holds so far, itself cut at the text bound."""
        with self.translated():
            raw = self._create(self.client.chat.completions.with_raw_response.create, request)
        response = raw.http_response
        cut: Cut | None = response.extensions.get(CUT)
        if cut is None:
            reply = _parsed(raw, _COMPLETION, _reply)
        elif (text := partial_content(response.content)) and text.strip():
            reply = Reply(text)
        else:
            raise self._nothing_usable(str(response.url), cut)
        meter = ReplyMeter(self._bounds(request))
        kept = meter.take(reply.text)
        cut = cut or meter.cut
        logprobs = reply.logprobs if kept == reply.text else logprobs_within(reply.logprobs, kept, reply.text)
        return Reply(kept, logprobs, reply.usage, cut.reason if cut else "")

    def streamed(self, request: dict[str, Any], on_text: Callable[[str], None]) -> Reply:
        """The chat completion for `request` read as a stream, `on_text` getting each piece of text as it
        arrives; the whole reply is the pieces joined, with the usage the last event carries. Reading ends
        at the first bound the reply reaches (engine/llm/bounds.py); the reply then says which."""
        pieces: list[Reply] = []
        meter = ReplyMeter(self._bounds(request))
        with self.translated():
            with self._create(self.client.chat.completions.create, {**request, "stream": True}) as chunks:
                for piece in _pieces(chunks):
                    kept = meter.take(piece.text)
                    pieces.append(piece if kept == piece.text else Reply(kept, usage=piece.usage))
                    if kept:
                        on_text(kept)
                    if meter.cut:
                        break
                cut = meter.cut or chunks.response.extensions.get(CUT)
                url = str(chunks.response.url)
        text = "".join(p.text for p in pieces)
        if cut is not None and not text.strip():
            raise self._nothing_usable(url, cut)
        counted = [p.usage for p in pieces if p.usage is not None]
        return Reply(text, tuple(t for p in pieces for t in p.logprobs), counted[-1] if counted else None,
                     cut.reason if cut else "")

    def _bounds(self, request: dict[str, Any]) -> ReplyBounds:
        return ReplyBounds(self.timeout_s, int(request.get("max_tokens") or DEFAULT_MAX_TOKENS))

    def _too_slow(self, url: object) -> ServerUnreachable:
        return ServerUnreachable(f"{url} did not answer within {self.timeout_s:g} s — the server may be overloaded "
                                 "or the model still loading; raise the timeout or try again")

    def _nothing_usable(self, url: str, cut: Cut) -> BackendError:
        """A reply cut at a bound before anything usable came: a time cut is a server too slow to use."""
        if cut.timed_out:
            return self._too_slow(url)
        return BackendError(f"{url} sent nothing usable within the reply's bounds: {cut.reason}")

    def _create(self, create: Callable[..., T], request: dict[str, Any]) -> T:
        """`create(**request)` without the optional parameters this server refused; one it refuses now
        (HTTP 400/422) is asked once more without them, and they are left out from then on if that works.
        A request the server refuses either way fails with the second refusal, and nothing is remembered."""
        wanted = {k: v for k, v in request.items() if k not in self._refused}
        try:
            return create(**wanted, extra_headers=self.headers)
        except (openai.BadRequestError, openai.UnprocessableEntityError) as exc:
            optional = [k for k in OPTIONAL_PARAMETERS if k in wanted]
            if not optional:
                raise
            answer = create(**{k: v for k, v in wanted.items() if k not in optional}, extra_headers=self.headers)
            said = _server_message(exc.response)
            dropped = [k for k in optional if k in said] or optional  # the one it named, or all
            self._refused |= frozenset(dropped)
            log.info("%s refused %s (%s); asking without from now on", self.base_url, ", ".join(dropped), said)
            return answer

    def model_ids(self) -> list[str]:
        with self.translated():
            raw = self.client.models.with_raw_response.list(extra_headers=self.headers)
        if (cut := raw.http_response.extensions.get(CUT)) is not None:
            raise self._nothing_usable(str(raw.http_response.url), cut)
        return _parsed(raw, _MODEL_LIST, _ids)

    def close(self) -> None:
        self.client.close()


def _parsed(raw: Any, what: str, pick: Callable[[Any], T | None]) -> T:
    """What `pick` finds in a raw response. The client builds its reply models without validating them,
    so a reply of another shape is caught here and quoted, not met later as an AttributeError."""
    try:
        found = pick(raw.parse())
    except (ValueError, TypeError, AttributeError, LookupError):  # JSONDecodeError is a ValueError
        found = None
    if found is None:
        raise _nonsense(str(raw.http_response.url), what, raw.http_response.text)
    return found


def _reply(completion: Any) -> Reply | None:
    choice = completion.choices[0]
    text = choice.message.content
    return Reply(text, _logprobs(choice), _usage(completion)) if isinstance(text, str) else None


def _logprobs(choice: Any) -> tuple[TokenLogprob, ...]:
    """The choice's token logprobs; none when the server sent none, or sent any that is not a token with
    a finite number (a mean over the rest would pass for the whole answer's). Never fails a reply."""
    tokens = getattr(getattr(choice, "logprobs", None), "content", None)
    if not isinstance(tokens, list):
        return ()
    found = tuple(TokenLogprob(t.token, float(t.logprob)) for t in tokens
                  if isinstance(getattr(t, "token", None), str) and _finite_number(getattr(t, "logprob", None)))
    return found if len(found) == len(tokens) else ()


def _usage(reply: Any) -> tuple[int, int] | None:
    usage = getattr(reply, "usage", None)
    prompt, written = getattr(usage, "prompt_tokens", None), getattr(usage, "completion_tokens", None)
    return (prompt, written) if isinstance(prompt, int) and isinstance(written, int) else None


def _finite_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def _ids(page: Any) -> list[str] | None:
    ids = [model.id for model in page.data]
    return ids if all(isinstance(i, str) for i in ids) else None


def _pieces(chunks: openai.Stream[Any]) -> Iterator[Reply]:
    response = chunks.response
    url = str(response.url)
    if not response.headers.get("content-type", "").startswith("text/event-stream"):
        raise _nonsense(url, _STREAM, response.read().decode(errors="replace"))
    events = 0
    try:
        for chunk in chunks:
            events += 1
            piece = _piece(chunk)
            if piece is None:
                raise _nonsense(url, _STREAM, chunk.to_json(indent=None, warnings=False))
            yield piece
    except json.JSONDecodeError as exc:
        if CUT in response.extensions:
            return  # the event the body was cut in
        raise _nonsense(url, _STREAM, exc.doc) from None
    if not events and CUT not in response.extensions:
        raise _nonsense(url, _STREAM, "(no events)")


def _piece(chunk: Any) -> Reply | None:
    """What a chunk adds (no text for role-only, finish and usage-only chunks); None when it is no chunk."""
    choices = getattr(chunk, "choices", None)
    if not isinstance(choices, list):
        return None
    if not choices:  # the usage-only chunk a stream ends with when asked (stream_options.include_usage)
        return Reply("", usage=_usage(chunk))
    delta = getattr(choices[0], "delta", None)
    content = getattr(delta, "content", None)
    if delta is None or not isinstance(content, (str, type(None))):
        return None
    return Reply(content or "", _logprobs(choices[0]), _usage(chunk))


def partial_content(body: bytes) -> str | None:
    """The assistant's text as far as a chat completion cut short holds it: the first `"content": "…"`
    string, up to its end or to the last whole character before the cut; None when the cut came before it."""
    text = body.decode("utf-8", "ignore")
    found = _CONTENT.search(text)
    if found is None:
        return None
    value = json.loads('"' + _STRING_PART.match(text, found.end()).group() + '"')
    return value[:-1] if value and "\ud800" <= value[-1] <= "\udbff" else value  # half a surrogate pair


def _nonsense(url: str, what: str, text: str) -> BackendError:
    flat = " ".join(text.split())
    excerpt = flat if len(flat) <= _EXCERPT_CHARS else flat[:_EXCERPT_CHARS] + "…"
    return BackendError(f"{url} answered something that is not {what}: {excerpt!r}")


def unreachable(base_url: str, exc: openai.APIConnectionError) -> ServerUnreachable:
    cause = exc.__cause__
    text = str(cause or exc.message)
    lowered = text.lower()
    if "refused" in lowered:
        reason = "connection refused"
    elif any(s in lowered for s in ("name or service", "name resolution", "nodename", "getaddrinfo", "errno -2")):
        reason = f"host {urlsplit(base_url).hostname!r} not found"
    elif isinstance(cause, httpx2.RemoteProtocolError):
        reason = "the server closed the connection without answering"
    else:
        reason = text or type(cause).__name__
    return ServerUnreachable(f"cannot reach {base_url}: {reason} — {_START_HINT}")


def _server_message(response: httpx2.Response) -> str:
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
