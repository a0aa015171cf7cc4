"""A scripted OpenAI-compatible chat server on loopback, for backend tests (never a real network)."""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "tiny-chat"


# ---------------------------------------------------------------- the scripted server


@dataclass(frozen=True)
class Reply:
    """One scripted answer: a status and body, or SSE events, or a body made piece by piece (`pieces`, sent
    chunked: a reply of any size, or one without end); `delay_s` before the headers, `event_delay_s`
    between events (to starve the client's read timeout mid-stream); `headers` added (e.g. Location)."""

    status: int = 200
    body: Any = None  # dict/list → JSON, str → sent as is
    content_type: str = "application/json"
    events: tuple[str, ...] | None = None  # raw SSE lines, each sent followed by a blank line
    delay_s: float = 0.0
    event_delay_s: float = 0.0
    pieces: Callable[[], Iterable[bytes]] | None = None  # the body's chunks, made afresh for each request
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Answerer:
    """A server that answers every chat request with `tokens`, the way the request asks: one JSON
    completion, or an SSE stream (`token_delay_s` between tokens; usage last when
    `stream_options.include_usage` asks for it); token logprobs when `logprobs` asks for them, unless
    `rejects_logprobs`: then a request carrying `logprobs` gets HTTP 400, as from servers without them."""

    tokens: tuple[str, ...]
    logprobs: tuple[float, ...] = ()  # one per token; -0.1 each when not given
    rejects_logprobs: bool = False
    token_delay_s: float = 0.0
    prompt_tokens: int = 7

    def reply(self, body: Any) -> Reply:
        if body is None:  # GET /v1/models
            return Reply(body={"object": "list", "data": [{"id": MODEL}]})
        if self.rejects_logprobs and "logprobs" in body:
            return Reply(status=400, body={"error": {"message": "logprobs is not supported by this server"}})
        scored = list(zip(self.tokens, self.logprobs or [-0.1] * len(self.tokens), strict=True))
        usage = {"prompt_tokens": self.prompt_tokens, "completion_tokens": len(self.tokens)}
        if not body.get("stream"):
            return Reply(body=completion("".join(self.tokens), usage, scored if body.get("logprobs") else None))
        counted = usage if (body.get("stream_options") or {}).get("include_usage") else None
        return Reply(events=sse(list(self.tokens), counted, scored if body.get("logprobs") else None),
                     event_delay_s=self.token_delay_s)


@dataclass
class ChatServer:
    """Answers with `replies` in order, repeating the last, or by `answerer`; records each request it saw."""

    url: str
    replies: list[Reply] = field(default_factory=list)
    requests: list[dict[str, Any]] = field(default_factory=list)
    answerer: Answerer | None = None
    in_flight: int = 0
    pieces_sent: int = 0  # chunks of `Reply.pieces` bodies written
    hung_up: bool = False  # whether a client closed a chunked body before its end
    peak_in_flight: int = 0  # the most requests being answered at once (counted, not inferred from times)
    _counting: threading.Lock = field(default_factory=threading.Lock, repr=False)

    @contextmanager
    def answering(self) -> Iterator[None]:
        with self._counting:
            self.in_flight += 1
            self.peak_in_flight = max(self.peak_in_flight, self.in_flight)
        try:
            yield
        finally:
            with self._counting:
                self.in_flight -= 1

    def next_reply(self) -> Reply:
        return self.replies.pop(0) if len(self.replies) > 1 else self.replies[0]

    def reply_to(self, body: Any) -> Reply:
        return self.answerer.reply(body) if self.answerer is not None else self.next_reply()


Scored = list[tuple[str, float]]  # tokens with their logprobs


def _logprobs(scored: Scored) -> dict[str, Any]:
    return {"content": [{"token": t, "logprob": lp, "bytes": list(t.encode()), "top_logprobs": []}
                        for t, lp in scored]}


def completion(text: str, usage: dict[str, int] | None = None, logprobs: Scored | None = None) -> dict[str, Any]:
    choice: dict[str, Any] = {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
    if logprobs is not None:
        choice["logprobs"] = _logprobs(logprobs)
    data: dict[str, Any] = {"id": "c1", "object": "chat.completion", "model": MODEL, "choices": [choice]}
    if usage:
        data["usage"] = usage
    return data


def sse(tokens: list[str], usage: dict[str, int] | None = None, logprobs: Scored | None = None) -> tuple[str, ...]:
    def chunk(delta: dict[str, Any], finish: str | None = None, scored: Scored | None = None) -> str:
        choice: dict[str, Any] = {"index": 0, "delta": delta, "finish_reason": finish}
        if scored is not None:
            choice["logprobs"] = _logprobs(scored)
        return "data: " + json.dumps({"object": "chat.completion.chunk", "model": MODEL, "choices": [choice]})

    pieces = [chunk({"content": t}, scored=[logprobs[i]] if logprobs else None) for i, t in enumerate(tokens)]
    events = [chunk({"role": "assistant"}), *pieces, chunk({}, "stop")]
    if usage:
        events.append("data: " + json.dumps({"object": "chat.completion.chunk", "choices": [], "usage": usage}))
    return (*events, "data: [DONE]")


class _Handler(BaseHTTPRequestHandler):
    server: ThreadingHTTPServer

    def do_GET(self) -> None:
        self._answer(None)

    def do_POST(self) -> None:
        length = int(self.headers.get("Content-Length", 0))
        self._answer(json.loads(self.rfile.read(length)))

    def _answer(self, body: Any) -> None:
        script: ChatServer = self.server.script  # type: ignore[attr-defined]
        script.requests.append({"path": self.path, "headers": dict(self.headers), "body": body})
        with script.answering():
            reply = script.reply_to(body)
            time.sleep(reply.delay_s)
            if reply.pieces is not None:
                self._send_chunked(reply)
            elif reply.events is None:
                self._send_body(reply)
            else:
                self._send_events(reply)

    def _send_body(self, reply: Reply) -> None:
        raw = reply.body if isinstance(reply.body, str) else json.dumps(reply.body)
        data = raw.encode()
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Content-Length", str(len(data)))
        self._send_headers(reply)
        self.wfile.write(data)

    def _send_headers(self, reply: Reply) -> None:
        for name, value in reply.headers:
            self.send_header(name, value)
        self.end_headers()

    def _send_chunked(self, reply: Reply) -> None:
        """HTTP/1.1 chunked transfer: the client cannot know the size, nor whether it ends."""
        script: ChatServer = self.server.script  # type: ignore[attr-defined]
        self.protocol_version = "HTTP/1.1"
        self.send_response(reply.status)
        self.send_header("Content-Type", reply.content_type)
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self._send_headers(reply)
        try:
            for piece in (reply.pieces or tuple)():
                self.wfile.write(b"%x\r\n%s\r\n" % (len(piece), piece))
                self.wfile.flush()
                script.pieces_sent += 1
            self.wfile.write(b"0\r\n\r\n")
        except OSError:
            script.hung_up = True  # the client stopped reading and closed the connection

    def _send_events(self, reply: Reply) -> None:
        # HTTP/1.0 without Content-Length: the body ends when the connection closes, as SSE allows
        self.send_response(reply.status)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for line in reply.events or ():
            self.wfile.write((line + "\n\n").encode())
            self.wfile.flush()
            time.sleep(reply.event_delay_s)

    def log_message(self, format: str, *args: Any) -> None:  # keep pytest output clean
        pass


class _QuietServer(ThreadingHTTPServer):
    daemon_threads = True  # a handler still sleeping for a timeout test must not block shutdown

    def handle_error(self, request: Any, client_address: Any) -> None:
        pass  # the client hung up on a slow reply on purpose


@contextmanager
def serving(*replies: Reply) -> Iterator[ChatServer]:
    """Run the scripted server in a daemon thread for the duration of the block."""
    server = _QuietServer(("127.0.0.1", 0), _Handler)
    default = Reply(body=completion("ok", {"prompt_tokens": 3, "completion_tokens": 1}))
    script = ChatServer(url=f"http://127.0.0.1:{server.server_address[1]}", replies=list(replies) or [default])
    server.script = script  # type: ignore[attr-defined]
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True)
    thread.start()
    try:
        yield script
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=2)


def endless(*chunks: bytes, limit: int = 100_000) -> Callable[[], Iterator[bytes]]:
    """A body of `chunks` then the last chunk again and again: without end as far as a client can tell (`limit`
    chunks in all, so a client that never stops reading still lets a test end)."""
    def pieces() -> Iterator[bytes]:
        for n in range(limit):
            yield chunks[min(n, len(chunks) - 1)]

    return pieces


def endless_completion(word: str = "word ", chunk_words: int = 1000,
                       limit: int = 100_000) -> Callable[[], Iterator[bytes]]:
    """A plain chat completion whose text never ends (see `endless`)."""
    head = b'{"id": "c1", "object": "chat.completion", "model": "%s", "choices": [{"index": 0, "message": ' \
           b'{"role": "assistant", "content": "' % MODEL.encode()
    return endless(head, word.encode() * chunk_words, limit=limit)


def endless_events(token: str = "tok ", limit: int = 100_000) -> Callable[[], Iterator[bytes]]:
    """An SSE chat stream writing `token` for ever (see `endless`)."""
    first, piece = (f"{line}\n\n".encode() for line in sse([token])[:2])
    return endless(first, piece, limit=limit)


def closed_port() -> str:
    """A loopback port nobody listens on: bind, note the port, close."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}"
