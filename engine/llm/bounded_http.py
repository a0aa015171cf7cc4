"""The HTTP client under every `openai` client of ours: it reads a reply's body within its bounds and never
follows a redirect (issue 26).

A body is read through `_BoundedBody`: at most `ReplyBounds.body_bytes` (derived from the `max_tokens` the
request asked for) and nothing after the deadline; past either, or once the server falls silent for the read
timeout, the body simply ends there and the response's extensions say why (`CUT`), so the caller keeps what
came. Replies are asked for uncompressed: a compressed body's size says nothing about its size unpacked.
A redirect is handed back as it came (the caller reports it): following one would send the whole prompt to
a server the user never named. `import openai` happens in the modules that import this one.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import httpx2
import openai

from engine.errors import BackendError
from engine.llm.bounds import DEFAULT_MAX_TOKENS, ReplyBounds

CUT = "ragscope.cut"  # response extension: the `Cut` that ended the body early, absent when the server ended it
_IDENTITY = ("", "identity")


class BoundedClient(openai.DefaultHttpxClient):
    """An httpx client for one model server with a `timeout_s` setting: the read timeout of each wait and
    the deadline of each whole reply. A timed-out request is not retried: a server too slow once is too
    slow again, and each retry would hide the failure for another full timeout."""

    def __init__(self, timeout_s: float):
        super().__init__(follow_redirects=False, headers={"Accept-Encoding": "identity"})
        self.timeout_s = timeout_s

    def send(self, request: httpx2.Request, *, stream: bool = False, **kwargs: Any) -> httpx2.Response:
        bounds = ReplyBounds(self.timeout_s, asked_tokens(request))
        deadline = time.monotonic() + bounds.seconds
        try:
            response = super().send(request, **{**kwargs, "stream": True, "follow_redirects": False})
        except httpx2.TimeoutException as exc:
            raise openai.APITimeoutError(request=request) from exc  # an OpenAIError: raised at once
        try:
            encoding = response.headers.get("content-encoding", "").strip().lower()
            if encoding not in _IDENTITY:
                raise BackendError(f"{request.url} sent a {encoding}-compressed reply though asked for none; "
                                   "ragscope reads model replies uncompressed to keep their size bounded")
            response.stream = _BoundedBody(response, bounds, deadline)
            if not stream:
                response.read()
        except BaseException:
            response.close()
            raise
        return response


class _BoundedBody(httpx2.SyncByteStream):
    """A response body that ends at the byte bound, the deadline or a read timeout, noting which on the response."""

    def __init__(self, response: httpx2.Response, bounds: ReplyBounds, deadline: float):
        self.response, self.inner, self.bounds, self.deadline = response, response.stream, bounds, deadline

    def __iter__(self) -> Iterator[bytes]:
        read = 0
        try:
            for chunk in self.inner:
                room = self.bounds.body_bytes - read
                if len(chunk) > room:
                    yield chunk[:room]
                    self.response.extensions[CUT] = self.bounds.at_body()
                    return
                read += len(chunk)
                yield chunk
                if time.monotonic() > self.deadline:
                    self.response.extensions[CUT] = self.bounds.after_time()
                    return
        except httpx2.ReadTimeout:  # silent for the whole timeout: the deadline has passed as well
            self.response.extensions[CUT] = self.bounds.after_time()

    def close(self) -> None:
        self.inner.close()


def redirected(response: httpx2.Response) -> BackendError:
    """What a redirect answer means to the user: nothing was sent on, and the way to go there on purpose."""
    target = response.url.join(response.headers["location"])
    return BackendError(f"the server at {response.url} redirected to {target} (HTTP {response.status_code}); "
                        "ragscope does not follow redirects, so nothing was sent there — if you trust that server, "
                        "point the backend at it yourself")


def asked_tokens(request: httpx2.Request) -> int:
    """The `max_tokens` (or `max_completion_tokens`) the request's JSON body asks for; a default without one."""
    try:
        body = json.loads(request.content) if request.content else None
    except (ValueError, httpx2.RequestNotRead):
        body = None
    asked = next((body[k] for k in ("max_tokens", "max_completion_tokens") if isinstance(body, dict)
                  and isinstance(body.get(k), int) and not isinstance(body.get(k), bool)), None)
    return asked if asked is not None and asked > 0 else DEFAULT_MAX_TOKENS
