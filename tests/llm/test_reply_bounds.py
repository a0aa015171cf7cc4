"""Every model reply is bounded by time, tokens and bytes (issue 26 item 2), and no model request follows a
redirect (item 8): loopback servers that stream for ever, trickle, stall, send 50 MB, or point elsewhere.

Bounds are checked by counting (pieces, bytes read, requests), never by timing; a server that would go on
for ever stops after a fixed number of chunks, so the code before the bounds fails these tests, and soon."""

from __future__ import annotations

import gzip
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from langchain_core.language_models.fake_chat_models import GenericFakeChatModel
from langchain_core.messages import AIMessage, AIMessageChunk
from langchain_core.outputs import ChatGenerationChunk

from engine.errors import BackendError, ServerUnreachable
from engine.llm.base import open_chat
from engine.llm.bounds import MAX_TEXT_BYTES, ReplyBounds
from engine.llm.chat import GenerationSettings, Message
from engine.llm.langchain_chat import LangChainChatModel
from engine.llm.openai import OpenAIChatModel, check_connection
from engine.llm.openai_client import partial_content
from engine.runner import Workbench
from engine.trace import LlmCallStep
from fake_chat_server import (
    MODEL,
    ChatServer,
    Reply,
    completion,
    endless,
    endless_completion,
    endless_events,
    serving,
    sse,
)

QUESTION = [Message("system", "Answer briefly."), Message("user", "Who wrote Hamlet?")]
TOKENS = 64
SETTINGS = GenerationSettings(max_new_tokens=TOKENS)


def events(*lines: str) -> list[bytes]:
    return [f"{line}\n\n".encode() for line in lines]


def streamed(model: Any, settings: GenerationSettings = SETTINGS) -> Any:
    pieces: list[str] = []
    done = model.complete_streaming(QUESTION, settings, pieces.append)
    assert "".join(pieces) == done.text
    return done


@pytest.fixture
def bytes_read(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """The body bytes the client took off its connections, counted where httpx2 reads them."""
    from httpx2._transports.default import ResponseStream

    counted = [0]
    inner = ResponseStream.__iter__

    def counting(self: Any) -> Iterator[bytes]:
        for chunk in inner(self):
            counted[0] += len(chunk)
            yield chunk

    monkeypatch.setattr(ResponseStream, "__iter__", counting)
    return counted


# ---------------------------------------------------------------- tokens and bytes


def test_a_stream_without_end_is_cut_at_max_tokens_times_the_margin(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(pieces=endless_events("tok "), content_type="text/event-stream")]
    done = streamed(OpenAIChatModel(chat_server.url, MODEL, timeout_s=5))
    bounds = ReplyBounds(5, TOKENS)
    assert done.text == "tok " * bounds.pieces
    assert done.cut == "reply cut at 256 tokens (max_tokens 64 × 4)" == bounds.at_pieces().reason
    assert chat_server.pieces_sent < 100_000  # the client hung up long before the server ran out


def test_a_plain_reply_without_end_is_read_only_to_the_byte_bound(chat_server: ChatServer,
                                                                    bytes_read: list[int]) -> None:
    chat_server.replies = [Reply(pieces=endless_completion(limit=20_000))]  # 100 MB, were it read to its end
    done = OpenAIChatModel(chat_server.url, MODEL, timeout_s=5).complete(QUESTION, SETTINGS)
    bounds = ReplyBounds(5, TOKENS)
    assert bytes_read[0] <= bounds.body_bytes + 64 * 1024  # at most one network read past the bound
    assert done.text.startswith("word word") and len(done.text.encode()) <= bounds.text_bytes
    assert done.cut == "reply cut at 197 KB read from the server (max_tokens 64)" == bounds.at_body().reason


def test_a_long_reply_within_the_body_bound_is_cut_to_the_text_bound(chat_server: ChatServer) -> None:
    text = "é" * 10_000  # 20 KB of UTF-8, sent escaped: 60 KB of JSON
    chat_server.replies = [Reply(body=completion(text))]
    done = OpenAIChatModel(chat_server.url, MODEL, timeout_s=5).complete(QUESTION, GenerationSettings(200))
    bounds = ReplyBounds(5, 200)
    assert done.text == "é" * (bounds.text_bytes // 2)  # whole characters only
    assert done.cut == bounds.at_text().reason == "reply cut at 10 KB of text (max_tokens 200)"


def test_a_50_mb_reply_keeps_the_saved_trace_small(chat_server: ChatServer, mini_pack: Any, settings: Any,
                                                    bytes_read: list[int]) -> None:
    head, words = endless_completion(chunk_words=200_000)().__next__(), b"word " * 200_000  # 1 MB a chunk
    chat_server.replies = [Reply(pieces=lambda: [head, *[words] * 50, b'"}, "finish_reason": "stop"}]}'])]
    bench = Workbench(mini_pack, settings, backend="openai",
                      backend_options={"base_url": chat_server.url, "model": MODEL, "timeout_s": 5})
    trace = bench.ask("When was Grace Hopper born?", "vanilla")
    assert bytes_read[0] <= 8 * 1024 * 1024  # never more than the body's ceiling, whatever max_tokens
    [call] = [s for s in trace.steps if isinstance(s, LlmCallStep)]
    assert call.output.startswith("word word") and len(call.output) <= MAX_TEXT_BYTES
    assert len(trace.to_json()) < 200_000  # was 50 MB for one call


def test_a_compressed_reply_is_refused_unread(chat_server: ChatServer) -> None:
    """A compressed body's size says nothing of its size unpacked: 1 MB of zeros gzips to 1 KB."""
    packed = gzip.compress(b"0" * 1_000_000)
    chat_server.replies = [Reply(pieces=lambda: [packed], headers=(("Content-Encoding", "gzip"),))]
    with pytest.raises(BackendError, match=r"sent a gzip-compressed reply though asked for none"):
        OpenAIChatModel(chat_server.url, MODEL, timeout_s=5).complete(QUESTION, SETTINGS)
    assert chat_server.requests[0]["headers"].get("Accept-Encoding") == "identity"


# ---------------------------------------------------------------- time


def trickle(first: list[bytes], then: bytes, gap_s: float, limit: int) -> Any:
    """A body of `first`, then `then` every `gap_s`, `limit` times: always sending, never ending in time."""
    import time

    def pieces() -> Iterator[bytes]:
        yield from first
        for _ in range(limit):
            time.sleep(gap_s)
            yield then

    return pieces


@pytest.mark.parametrize("stream", [True, False])
def test_a_reply_that_trickles_for_ever_is_cut_at_the_deadline(chat_server: ChatServer, stream: bool) -> None:
    role, token = events(*sse(["tok "])[:2])
    head = endless_completion()().__next__()  # the first chunk holds text: a slow start cannot leave none
    body = trickle([role + token], token, 0.02, 250) if stream else trickle([head + b"word "], b"word ", 0.02, 250)
    chat_server.replies = [Reply(pieces=body, content_type="text/event-stream" if stream else "application/json")]
    model, many = OpenAIChatModel(chat_server.url, MODEL, timeout_s=1), GenerationSettings(10_000)
    done = streamed(model, many) if stream else model.complete(QUESTION, many)
    assert done.cut == "reply cut after 1 s (the backend's timeout)"
    assert done.text.startswith(("tok ", "word ")[not stream])
    assert chat_server.pieces_sent < 250  # at 50 pieces a second, 5 s would have run out


def stalling(first: list[bytes], release: threading.Event) -> Any:
    def pieces() -> Iterator[bytes]:
        yield from first
        release.wait(5)  # the stall; a safety net only: the client gives up after its timeout

    return pieces


def test_a_stream_that_stalls_keeps_what_came_and_says_it_was_cut(chat_server: ChatServer) -> None:
    release = threading.Event()
    chat_server.replies = [Reply(pieces=stalling([b"".join(events(*sse(["Shake", "speare"])[:3]))], release),
                                 content_type="text/event-stream")]  # one chunk: a slow start cannot split it
    done = streamed(OpenAIChatModel(chat_server.url, MODEL, timeout_s=1))
    assert not release.is_set()
    release.set()
    assert done.text == "Shakespeare" and done.cut == "reply cut after 1 s (the backend's timeout)"


@pytest.mark.parametrize("call, path", [
    (lambda url: OpenAIChatModel(url, MODEL, timeout_s=0.2).complete(QUESTION, SETTINGS), "/v1/chat/completions"),
    (lambda url: check_connection(url, timeout_s=0.2), "/v1/models"),
])
def test_a_plain_reply_that_stalls_before_its_text_is_a_server_that_did_not_answer(chat_server: ChatServer,
                                                                                   call: Any, path: str) -> None:
    release = threading.Event()
    chat_server.replies = [Reply(pieces=stalling([b'{"id": "c1", "choices": [{"message": {"role": '], release))]
    with pytest.raises(ServerUnreachable, match=rf"{path} did not answer within 0.2 s — "):
        call(chat_server.url)
    release.set()


def test_a_model_list_beyond_the_byte_bound_is_named_as_such(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(pieces=endless(b'{"object": "list", "data": [', b'{"id": "m"}, ' * 1000, limit=2000))]
    with pytest.raises(BackendError, match=r"/v1/models sent nothing usable within the reply's bounds: reply cut at "
                                           r"2.2 MB read from the server"):
        check_connection(chat_server.url, timeout_s=5)


# ---------------------------------------------------------------- what a body cut short holds


@pytest.mark.parametrize("body, text", [
    (b'{"choices": [{"message": {"role": "assistant", "content": "Paris is', "Paris is"),
    (b'{"choices": [{"message": {"content": "a\\"b\\u00e9\\u00', 'a"bé'),  # cut inside an escape
    (b'{"choices": [{"message": {"content": "smile \\ud83d', "smile "),  # half a surrogate pair
    (b'{"choices": [{"message": {"content": "caf\xc3', "caf"),  # half a UTF-8 character
    (b'{"choices": [{"message": {"content": "done"}, "logprobs": {"content": [{"token": "do', "done"),
    (b'{"choices": [{"message": {"role": "assist', None),
])
def test_a_body_cut_short_gives_the_text_it_holds(body: bytes, text: str | None) -> None:
    assert partial_content(body) == text


# ---------------------------------------------------------------- redirects


@pytest.fixture
def elsewhere() -> Iterator[ChatServer]:
    """The server a redirect points to: it must never be asked anything."""
    with serving() as other:
        yield other


@pytest.mark.parametrize("call", [
    lambda url: OpenAIChatModel(url, MODEL, timeout_s=5).complete(QUESTION, SETTINGS),
    lambda url: streamed(OpenAIChatModel(url, MODEL, timeout_s=5)),
    lambda url: check_connection(url, timeout_s=5),
])
@pytest.mark.parametrize("status", [307, 301])
def test_a_redirect_to_another_server_is_not_followed(chat_server: ChatServer, elsewhere: ChatServer, call: Any,
                                                      status: int) -> None:
    target = elsewhere.url + "/v1/chat/completions"
    chat_server.replies = [Reply(status=status, body="", headers=(("Location", target),))]
    with pytest.raises(BackendError) as caught:
        call(chat_server.url)
    assert elsewhere.requests == []
    assert f"redirected to {target} (HTTP {status}); ragscope does not follow redirects" in str(caught.value)
    assert str(caught.value).startswith(f"the server at {chat_server.url}/v1/")


def test_a_langchain_openai_model_does_not_follow_a_redirect(chat_server: ChatServer, elsewhere: ChatServer) -> None:
    chat_server.replies = [Reply(status=307, body="", headers=(("Location", elsewhere.url + "/v1/chat/completions"),))]
    chat = open_chat("langchain", {"model": f"openai:{MODEL}", "base_url": chat_server.url + "/v1", "timeout_s": 5})
    with pytest.raises(BackendError, match=r"redirected to .* ragscope does not follow redirects"):
        chat.complete(QUESTION, SETTINGS)
    assert elsewhere.requests == []


# ---------------------------------------------------------------- the langchain backend


class _EndlessChat(GenericFakeChatModel):
    """A chat model with a max-tokens field it ignores: it streams 'x' for ever (100,000 pieces at most)."""

    max_tokens: int | None = None

    def _stream(self, *args: Any, **kwargs: Any) -> Iterator[ChatGenerationChunk]:
        for _ in range(100_000):
            yield ChatGenerationChunk(message=AIMessageChunk(content="x"))


def test_a_langchain_model_that_ignores_its_max_tokens_is_cut_at_the_piece_bound() -> None:
    chat = LangChainChatModel(_EndlessChat(messages=iter(())), "endless", timeout_s=5)
    assert chat.bounded
    done = streamed(chat)
    assert done.text == "x" * 256 and done.cut == "reply cut at 256 tokens (max_tokens 64 × 4)"


def test_a_langchain_model_without_a_max_tokens_field_says_it_was_cut_at_that_many_words() -> None:
    chat = LangChainChatModel(GenericFakeChatModel(messages=iter([AIMessage(content="one two three four")])), "f")
    done = chat.complete(QUESTION, GenerationSettings(max_new_tokens=3))
    assert done.text == "one two three" and done.cut == "reply cut at 3 words (max_tokens 3)"


def test_a_langchain_openai_model_streaming_for_ever_is_cut_at_the_piece_bound(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(pieces=endless_events("x", limit=20_000), content_type="text/event-stream")]
    chat = open_chat("langchain", {"model": f"openai:{MODEL}", "base_url": chat_server.url + "/v1", "timeout_s": 5})
    done = streamed(chat)  # one endless word: the word bound never comes into it
    assert done.text == "x" * 256 and done.cut == "reply cut at 256 tokens (max_tokens 64 × 4)"
