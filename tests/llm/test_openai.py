"""The OpenAI-compatible backend against a scripted loopback server: replies, streams and every failure."""

from __future__ import annotations

import logging
import os
import re
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import replace
from types import SimpleNamespace
from typing import Any
from urllib.parse import urlsplit

import httpx2
import openai
import pytest

from engine.errors import BackendError, ServerUnreachable
from engine.llm.chat import ChatModel, GenerationSettings, Message, StreamingChatModel
from engine.llm.openai import OpenAIChatModel, check_connection, check_model, normalise_base_url
from engine.llm.openai_client import unreachable
from engine.trace import TokenLogprob
from fake_chat_server import MODEL, Answerer, ChatServer, Reply, completion, sse
from paths import ROOT

QUESTION = [Message("system", "Answer briefly."), Message("user", "Who wrote Hamlet?")]
NOT_A_COMPLETION = "answered something that is not an OpenAI chat completion"


@pytest.fixture
def waits(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The client's retry delays, recorded instead of slept (the server thread keeps real time)."""
    delays: list[float] = []
    monkeypatch.setattr(openai._base_client, "time", SimpleNamespace(sleep=delays.append, time=time.time))
    return delays


def streamed(model: OpenAIChatModel, settings: GenerationSettings = GenerationSettings()) -> list[str]:
    """The pieces `complete_streaming` hands its sink, checked to join to the completion's text."""
    pieces: list[str] = []
    done = model.complete_streaming(QUESTION, settings, pieces.append)
    assert "".join(pieces) == done.text
    return pieces


def failure(call: Any, kind: type[BackendError] = BackendError) -> str:
    """The message of the engine error `call` raises, checked to be a `kind` (ServerUnreachable ends a run)."""
    with pytest.raises(kind) as caught:
        call()
    assert type(caught.value).__module__ == "engine.errors"  # nothing from openai or httpx2 escapes
    return str(caught.value)


# ---------------------------------------------------------------- base URL and settings


@pytest.mark.parametrize("given, root", [
    *((given, "http://127.0.0.1:8000/v1") for given in (
        "http://127.0.0.1:8000", "http://127.0.0.1:8000/", "http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1/",
        " 127.0.0.1:8000 ", "http://127.0.0.1:8000/v1/chat/completions")),
    ("https://gateway.example/openai/v1/", "https://gateway.example/openai/v1"),  # a path prefix is kept
])
def test_base_url_forms_normalise_to_the_v1_root(given: str, root: str) -> None:
    assert normalise_base_url(given) == root


@pytest.mark.parametrize("given", ["", "ftp://host/v1", "http://", "http://host:port/v1"])
def test_bad_base_url_is_rejected_with_an_example(given: str) -> None:
    with pytest.raises(BackendError, match=r"http://127\.0\.0\.1:8000/v1"):
        OpenAIChatModel(given, MODEL)


@pytest.mark.parametrize("options, named", [
    ({"timeout_s": 0}, "timeout_s must be more than 0 (got 0)"),
    ({"max_retries": -1}, "max_retries must be 0 to 10 (got -1)"),
])
def test_bad_settings_are_named_in_a_backend_error(options: dict[str, Any], named: str) -> None:
    with pytest.raises(BackendError, match=re.escape(f"invalid openai backend settings: {named}")):
        OpenAIChatModel("http://127.0.0.1:8000", MODEL, **options)


def test_other_backends_never_import_the_openai_package() -> None:
    """`import openai` costs about half a second, and open_chat imports this backend for every backend."""
    code = "import sys; from engine.llm.base import open_chat; open_chat('offline'); sys.exit('openai' in sys.modules)"
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


# ---------------------------------------------------------------- completions


def test_complete_returns_text_usage_latency_and_labels(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body=completion("Shakespeare.", {"prompt_tokens": 12, "completion_tokens": 4}))]
    model = OpenAIChatModel(chat_server.url, MODEL)
    assert isinstance(model, ChatModel) and model.base_url == chat_server.url + "/v1"
    done = model.complete(QUESTION)
    assert (done.text, done.tokens_in, done.tokens_out, done.backend, done.model) == (
        "Shakespeare.", 12, 4, "openai", MODEL)
    assert done.latency_ms > 0


def test_complete_approximates_tokens_by_words_when_usage_is_missing(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body=completion("William Shakespeare wrote it"))]
    done = OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION)
    assert (done.tokens_in, done.tokens_out) == (2 + 3, 4)  # "Answer briefly." + "Who wrote Hamlet?"


def test_messages_are_sent_in_order_with_roles_and_settings(chat_server: ChatServer) -> None:
    messages = [*QUESTION, Message("assistant", "Shakespeare."), Message("developer", "Be terse."),
                Message("user", "When?")]
    OpenAIChatModel(chat_server.url, MODEL).complete(messages, GenerationSettings(max_new_tokens=20, stop=("\n",)))
    [request] = chat_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["body"] == {  # max_tokens: the name every compatible server knows
        "model": MODEL, "temperature": 0.0, "max_tokens": 20, "stop": ["\n"], "logprobs": True,
        "messages": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Who wrote Hamlet?"},
                     {"role": "assistant", "content": "Shakespeare."}, {"role": "developer", "content": "Be terse."},
                     {"role": "user", "content": "When?"}],
    }


def test_stop_strings_cut_a_reply_that_ran_past_them(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body=completion("Shakespeare.\nQuestion: next"))]
    done = OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION, GenerationSettings(stop=("\nQuestion:",)))
    assert done.text == "Shakespeare."


class Echo(list):
    """A request log whose replies echo each request's question, sent only once `parties` requests are
    in flight together: calls serialised anywhere on the way would break the barrier instead."""

    def __init__(self, parties: int):
        super().__init__()
        self.barrier, self.mine = threading.Barrier(parties, timeout=5), threading.local()

    def append(self, request: dict[str, Any]) -> None:
        super().append(request)
        self.mine.request = request

    def reply(self) -> Reply:
        self.barrier.wait()
        return Reply(body=completion(self.mine.request["body"]["messages"][-1]["content"]))


def test_threads_asking_at_once_are_answered_in_parallel_each_with_its_own_reply(chat_server: ChatServer) -> None:
    questions = [f"question {i}" for i in range(8)]
    chat_server.requests = echo = Echo(len(questions))
    chat_server.next_reply = echo.reply  # type: ignore[method-assign]
    model = OpenAIChatModel(chat_server.url, MODEL, max_retries=0)  # one model, as `eval --workers N` shares it
    with ThreadPoolExecutor(len(questions)) as pool:
        answers = list(pool.map(lambda q: model.complete([Message("user", q)]).text, questions))
    assert answers == questions


# ---------------------------------------------------------------- what is sent, and where


def test_api_key_is_sent_as_a_bearer_header_and_omitted_when_empty(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body=completion("ok")), Reply(body=completion("ok")), Reply(body={"data": []})]
    OpenAIChatModel(chat_server.url, MODEL, api_key="sk-local").complete(QUESTION)
    OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION)
    check_connection(chat_server.url)
    first, *others = ({k.lower(): v for k, v in r["headers"].items()} for r in chat_server.requests)
    assert first["authorization"] == "Bearer sk-local"
    assert [h.get("authorization") for h in others] == [None, None]


def test_only_the_configured_server_is_contacted_and_openai_account_settings_stay_home(
    chat_server: ChatServer, monkeypatch: pytest.MonkeyPatch,
) -> None:
    account = {"OPENAI_API_KEY": "sk-account", "OPENAI_ORG_ID": "org-account", "OPENAI_PROJECT_ID": "proj-account",
               "OPENAI_BASE_URL": "http://127.0.0.2:9/v1", "OPENAI_CUSTOM_HEADERS": "Authorization: Bearer sk-custom"}
    for name, value in account.items():
        monkeypatch.setenv(name, value)
    contacted: list[tuple[str, int]] = []
    connect = socket.socket.connect

    def noted(sock: socket.socket, address: Any) -> None:
        contacted.append(address[:2])
        connect(sock, address)

    monkeypatch.setattr(socket.socket, "connect", noted)
    chat_server.replies = [Reply(body=completion("ok")), Reply(events=sse(["ok"])),
                           Reply(body={"data": [{"id": MODEL}]})]
    model = OpenAIChatModel(chat_server.url, MODEL, api_key="sk-typed")
    model.complete(QUESTION)
    streamed(model)
    check_model(chat_server.url, MODEL)  # with no key
    server = urlsplit(chat_server.url)
    assert set(contacted) == {(server.hostname, server.port)}
    sent = [{k.lower(): v for k, v in r["headers"].items()} for r in chat_server.requests]
    assert [h.get("authorization") for h in sent] == ["Bearer sk-typed", "Bearer sk-typed", None]
    assert not [value for value in account.values() if value.split()[-1] in repr(sent)]


def test_the_api_key_shows_in_no_log_record_error_or_repr(chat_server: ChatServer, caplog: pytest.LogCaptureFixture,
                                                          waits: list[float]) -> None:
    caplog.set_level(logging.DEBUG)
    chat_server.replies = [Reply(body=completion("ok")), Reply(status=401, body={"error": {"message": "bad key"}})]
    model = OpenAIChatModel(chat_server.url, MODEL, api_key="sk-secret")
    model.complete(QUESTION)
    error = failure(lambda: model.complete(QUESTION))
    assert "sk-secret" not in caplog.text + error + repr(model)


# ---------------------------------------------------------------- streaming


def test_stream_yields_the_text_piece_by_piece(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(events=sse(["Sha", "kes", "peare."], {"prompt_tokens": 5, "completion_tokens": 3}))]
    assert streamed(OpenAIChatModel(chat_server.url, MODEL)) == ["Sha", "kes", "peare."]
    assert chat_server.requests[0]["body"]["stream"] is True


@pytest.mark.parametrize("tokens, text", [
    (["Shakespeare.", "\nQue", "stion: more", " text"], "Shakespeare."),  # a stop string split across pieces
    (["a\nQue", "en"], "a\nQueen"),  # a held-back tail that did not become a stop string is released
])
def test_stream_ends_before_a_stop_string(chat_server: ChatServer, tokens: list[str], text: str) -> None:
    chat_server.replies = [Reply(events=sse(tokens))]
    settings = GenerationSettings(stop=("\nQuestion:",))
    assert "".join(streamed(OpenAIChatModel(chat_server.url, MODEL), settings)) == text


def test_a_stream_is_read_to_the_end_past_a_stop_string_the_server_ignored(chat_server: ChatServer) -> None:
    """The usage and logprobs come last: hanging up at the stop string would lose them."""
    chat_server.answerer = Answerer(("Shakespeare", ".", "\nQuestion:", " next"), logprobs=(-0.5, -0.1, -2.0, -3.0))
    pieces: list[str] = []
    done = OpenAIChatModel(chat_server.url, MODEL).complete_streaming(
        QUESTION, GenerationSettings(stop=("\nQuestion:",)), pieces.append)
    assert (pieces, done.text, done.tokens_out) == (["Shakespeare", "."], "Shakespeare.", 4)
    assert done.logprobs == (TokenLogprob("Shakespeare", -0.5), TokenLogprob(".", -0.1))


@pytest.mark.parametrize("stop", [(), ("\nQuestion:",)])
def test_a_streamed_completion_is_the_plain_one_field_for_field(chat_server: ChatServer, stop: tuple[str, ...]) -> None:
    chat_server.answerer = Answerer(("Sha", "kes", "peare", ".", "\nQuestion:", " more"),
                                    logprobs=(-0.01, -0.2, -0.03, -0.5, -1.5, -2.5))
    model = OpenAIChatModel(chat_server.url, MODEL)
    assert isinstance(model, StreamingChatModel)
    settings = GenerationSettings(stop=stop)
    plain = model.complete(QUESTION, settings)
    pieces: list[str] = []
    streamed_ = model.complete_streaming(QUESTION, settings, pieces.append)
    assert replace(streamed_, latency_ms=0) == replace(plain, latency_ms=0)
    assert "".join(pieces) == plain.text and len(pieces) > 1
    assert plain.tokens_in == 7 and plain.logprobs  # the server's usage and logprobs, not stand-ins
    stream_request = chat_server.requests[-1]["body"]
    assert stream_request["stream_options"] == {"include_usage": True} and stream_request["logprobs"] is True


# ---------------------------------------------------------------- timeouts


@pytest.mark.parametrize("reply, call, path", [
    (Reply(body=completion("late"), delay_s=0.5),
     lambda url: OpenAIChatModel(url, MODEL, timeout_s=0.2).complete(QUESTION), "/v1/chat/completions"),
    (Reply(events=sse(["a", "b", "c"]), event_delay_s=0.5),  # stalls mid-answer
     lambda url: streamed(OpenAIChatModel(url, MODEL, timeout_s=0.2)), "/v1/chat/completions"),
    (Reply(body={"data": []}, delay_s=0.5), lambda url: check_connection(url, timeout_s=0.2), "/v1/models"),
])
def test_a_slow_server_times_out_once_with_the_limit_in_the_message(
    chat_server: ChatServer, reply: Reply, call: Any, path: str,
) -> None:
    chat_server.replies = [reply]
    message = failure(lambda: call(chat_server.url), ServerUnreachable)  # a run stops asking a server this slow
    assert f"{chat_server.url}{path} did not answer within 0.2 s — " in message
    assert len(chat_server.requests) == 1  # not retried: each retry would cost another full timeout


# ---------------------------------------------------------------- nonsense answers


@pytest.mark.parametrize("reply, excerpt", [
    (Reply(body="<html><body>Welcome to nginx!</body></html>", content_type="text/html"), "Welcome to nginx"),
    (Reply(body={"object": "list", "data": []}), '"object": "list"'),
    (Reply(body={"choices": [{"message": {"role": "assistant", "content": None}}]}), '"content": null'),
    (Reply(body={"choices": []}), '"choices": []'),
    (Reply(body='{"choices": [', content_type="application/json"), '{"choices": ['),
    (Reply(body=[1, 2]), "[1, 2]"),
])
def test_a_reply_that_is_not_a_chat_completion_is_named_with_an_excerpt(
    chat_server: ChatServer, reply: Reply, excerpt: str,
) -> None:
    chat_server.replies = [reply]
    message = failure(lambda: OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION))
    assert f"{chat_server.url}/v1/chat/completions {NOT_A_COMPLETION}: " in message and excerpt in message


@pytest.mark.parametrize("reply, excerpt", [
    (Reply(events=("data: {not json",)), "{not json"),
    (Reply(events=("<html>oops</html>",)), "(no events)"),
    (Reply(events=()), "(no events)"),
    (Reply(body="<html>login</html>", content_type="text/html"), "<html>login</html>"),
    (Reply(events=('data: {"object": "chat.completion.chunk"}',)), "chat.completion.chunk"),
    (Reply(events=('data: {"choices": [{"index": 0}]}',)), '"index":0'),
    (Reply(events=('data: {"choices": [{"delta": {"content": 5}}]}',)), '"content":5'),
])
def test_a_broken_event_stream_is_named_with_an_excerpt(chat_server: ChatServer, reply: Reply, excerpt: str) -> None:
    chat_server.replies = [reply]
    message = failure(lambda: streamed(OpenAIChatModel(chat_server.url, MODEL)))
    assert f"{NOT_A_COMPLETION} stream: " in message and excerpt in message


def test_an_error_event_mid_stream_surfaces_the_server_message(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(events=(*sse(["Sha"])[:2], 'data: {"error": {"message": "CUDA out of memory"}}'))]
    pieces: list[str] = []
    model = OpenAIChatModel(chat_server.url, MODEL)
    message = failure(lambda: model.complete_streaming(QUESTION, GenerationSettings(), pieces.append))
    assert message.endswith("/v1/chat/completions failed mid-answer: CUDA out of memory")
    assert pieces == ["Sha"]


# ---------------------------------------------------------------- HTTP errors and retries


def test_a_server_error_is_retried_and_the_retry_can_succeed(chat_server: ChatServer, waits: list[float]) -> None:
    chat_server.replies = [Reply(status=500, body={"error": {"message": "engine restarting"}}),
                           Reply(body=completion("fine"))]
    assert OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION).text == "fine"
    assert (len(chat_server.requests), len(waits)) == (2, 1)


def test_server_errors_give_up_after_max_retries_within_seconds(chat_server: ChatServer, waits: list[float]) -> None:
    chat_server.replies = [Reply(status=503, body={"error": {"message": "overloaded"}})]
    message = failure(lambda: OpenAIChatModel(chat_server.url, MODEL, max_retries=3).complete(QUESTION))
    assert message == f"{chat_server.url}/v1/chat/completions answered HTTP 503: overloaded"
    assert len(chat_server.requests) == 4 and sum(waits) <= 0.5 + 1 + 2


def test_a_streamed_request_is_retried_before_any_text(chat_server: ChatServer, waits: list[float]) -> None:
    chat_server.replies = [Reply(status=502, body="bad gateway", content_type="text/plain"), Reply(events=sse(["ok"]))]
    assert streamed(OpenAIChatModel(chat_server.url, MODEL)) == ["ok"]
    assert len(chat_server.requests) == 2


def test_http_401_surfaces_the_server_message_without_retry(chat_server: ChatServer, waits: list[float]) -> None:
    chat_server.replies = [Reply(status=401, body={"error": {"message": "Invalid API key", "type": "auth"}})]
    message = failure(lambda: OpenAIChatModel(chat_server.url, MODEL, api_key="wrong").complete(QUESTION))
    assert message == f"{chat_server.url}/v1/chat/completions answered HTTP 401: Invalid API key — check the API key"
    assert (len(chat_server.requests), waits) == (1, [])


def test_an_http_error_on_a_stream_surfaces_the_server_message(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(status=429, body={"error": {"message": "slow down"}})]
    message = failure(lambda: streamed(OpenAIChatModel(chat_server.url, MODEL, max_retries=0)))
    assert message.endswith("HTTP 429: slow down — the server is busy; try again shortly")


@pytest.mark.parametrize("body, shown", [
    ({"object": "error", "message": "The model `x` does not exist.", "code": 404}, "The model `x` does not exist."),
    ({"error": "Model not loaded"}, "Model not loaded"),
    ({"detail": "Not Found"}, "Not Found"),
])
def test_http_error_messages_are_found_where_each_server_puts_them(
    chat_server: ChatServer, body: dict[str, Any], shown: str,
) -> None:
    chat_server.replies = [Reply(status=404, body=body)]
    message = failure(lambda: OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION))
    assert message.endswith(f"HTTP 404: {shown} — check the base URL and the model name")


def test_an_http_error_without_json_shows_the_start_of_the_body(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(status=400, body="x" * 1000, content_type="text/plain")]
    message = failure(lambda: OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION))
    assert message.endswith("HTTP 400: " + "x" * 300)


# ---------------------------------------------------------------- logprobs


def test_logprobs_are_asked_for_and_come_with_the_completion(chat_server: ChatServer) -> None:
    chat_server.answerer = Answerer(("Sha", "kes", "peare."), logprobs=(-0.5, -0.25, -0.125))
    done = OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION)
    assert done.text == "Shakespeare."
    assert done.logprobs == (TokenLogprob("Sha", -0.5), TokenLogprob("kes", -0.25), TokenLogprob("peare.", -0.125))
    assert chat_server.requests[0]["body"]["logprobs"] is True


def test_logprobs_past_a_stop_string_are_left_out_with_the_text(chat_server: ChatServer) -> None:
    chat_server.answerer = Answerer(("Sha", "kes", "peare.\nQue", "stion: x"), logprobs=(-1.0, -2.0, -3.0, -4.0))
    done = OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION, GenerationSettings(stop=("\nQuestion:",)))
    assert done.text == "Shakespeare." and [t.logprob for t in done.logprobs] == [-1.0, -2.0, -3.0]


@pytest.mark.parametrize("logprobs", [
    {"content": [{"token": "ok", "logprob": None}]},
    {"content": [{"token": "ok", "logprob": "-0.1"}]},
    {"content": [{"token": 5, "logprob": -0.1}]},
    {"content": "ok"},
    "yes",
    {"content": [{"token": "ok", "logprob": -0.1}, {"token": "!", "logprob": float("-inf")}]},
])
def test_malformed_logprobs_are_dropped_and_never_fail_the_call(chat_server: ChatServer, logprobs: Any) -> None:
    body = completion("ok!", {"prompt_tokens": 3, "completion_tokens": 2})
    body["choices"][0]["logprobs"] = logprobs
    chat_server.replies = [Reply(body=body)]
    done = OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION)
    assert (done.text, done.logprobs) == ("ok!", ())


def test_a_server_that_refuses_logprobs_still_answers_and_is_not_asked_for_them_again(
    chat_server: ChatServer, caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.INFO)
    chat_server.answerer = Answerer(("Shake", "speare."), rejects_logprobs=True)
    model = OpenAIChatModel(chat_server.url, MODEL)
    first = model.complete(QUESTION)
    second = model.complete(QUESTION)
    pieces: list[str] = []
    third = model.complete_streaming(QUESTION, GenerationSettings(), pieces.append)
    assert [d.text for d in (first, second, third)] == ["Shakespeare."] * 3 and pieces == ["Shake", "speare."]
    assert all(d.logprobs == () and d.tokens_out == 2 for d in (first, second, third))
    asked = [("logprobs" in r["body"], "stream_options" in r["body"]) for r in chat_server.requests]
    assert asked == [(True, False), (False, False), (False, False), (False, True)]  # once refused, left out
    assert "refused logprobs (logprobs is not supported by this server)" in caplog.text


def test_a_refusal_naming_one_optional_parameter_drops_only_that_one(chat_server: ChatServer) -> None:
    refusal = Reply(status=400, body={"error": {"message": "Unrecognized request argument supplied: stream_options"}})
    chat_server.replies = [refusal, Reply(events=sse(["ok"])), Reply(events=sse(["ok"]))]
    model = OpenAIChatModel(chat_server.url, MODEL)
    assert streamed(model) == streamed(model) == ["ok"]
    asked = [("logprobs" in r["body"], "stream_options" in r["body"]) for r in chat_server.requests]
    assert asked == [(True, True), (False, False), (True, False)]  # the retry is sure to be plain


def test_a_request_refused_with_and_without_logprobs_fails_and_leaves_logprobs_asked_for(
    chat_server: ChatServer,
) -> None:
    chat_server.replies = [Reply(status=400, body={"error": {"message": "prompt is too long"}})]
    model = OpenAIChatModel(chat_server.url, MODEL)
    assert failure(lambda: model.complete(QUESTION)).endswith("answered HTTP 400: prompt is too long")
    chat_server.replies = [Reply(body=completion("ok"))]
    model.complete(QUESTION)
    assert ["logprobs" in r["body"] for r in chat_server.requests] == [True, False, True]


# ---------------------------------------------------------------- unreachable servers


def test_an_unreachable_port_says_connection_refused_and_how_to_start_a_server(
    closed_port_url: str, waits: list[float],
) -> None:
    message = failure(lambda: OpenAIChatModel(closed_port_url, MODEL).complete(QUESTION), ServerUnreachable)
    assert message == (f"cannot reach {closed_port_url}/v1: connection refused — is the server running? "
                       "(vLLM: `vllm serve MODEL`, Ollama: `ollama serve`)")
    assert len(waits) == 2 and sum(waits) <= 0.5 + 1  # a restarting server gets two quick retries, no more


def test_an_unknown_host_is_named_in_the_message() -> None:
    request = httpx2.Request("POST", "http://no-such-host:8000/v1/chat/completions")
    error = openai.APIConnectionError(request=request)
    error.__cause__ = httpx2.ConnectError("[Errno -2] Name or service not known")
    assert str(unreachable("http://no-such-host:8000/v1", error)).startswith(
        "cannot reach http://no-such-host:8000/v1: host 'no-such-host' not found — ")


# ---------------------------------------------------------------- check_connection and check_model


@pytest.mark.parametrize("call", [
    check_connection, lambda url: check_model(url, "llama3"),  # the Models page asks once and says so
    lambda url: streamed(OpenAIChatModel(url, MODEL, max_retries=0)),
])
def test_an_unreachable_server_is_reported_without_retry(closed_port_url: str, call: Any, waits: list[float]) -> None:
    assert f"cannot reach {closed_port_url}/v1: connection refused — is the" in failure(lambda: call(closed_port_url))
    assert waits == []


@pytest.mark.parametrize("body", ["<html>router login</html>", {"data": [{"name": "x"}]}, {"models": []}])
def test_check_connection_reports_something_that_is_not_a_model_list(chat_server: ChatServer, body: Any) -> None:
    chat_server.replies = [Reply(body=body, content_type="text/html" if isinstance(body, str) else "application/json")]
    assert "answered something that is not an OpenAI model list: " in failure(lambda: check_connection(chat_server.url))


def test_check_model_accepts_a_model_the_server_offers_and_lists_its_ids(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body={"object": "list", "data": [{"id": "qwen2.5-7b"}, {"id": "llama3"}]})]
    assert check_model(chat_server.url + "/v1/", "llama3", api_key="k") == ["qwen2.5-7b", "llama3"]
    [request] = chat_server.requests  # nothing is generated to check
    assert (request["path"], request["headers"]["authorization"]) == ("/v1/models", "Bearer k")


def test_check_model_names_the_models_the_server_offers_instead(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body={"data": [{"id": f"m{i}"} for i in range(12)]})]
    assert failure(lambda: check_model(chat_server.url, "llama-9000")) == (
        f"{chat_server.url}/v1 answers but does not offer model 'llama-9000'; it offers: m0, m1, m2, m3, m4, m5, m6, "
        "m7, m8, m9 and 2 more — use one of these ids as the model name")


def test_check_model_passes_on_an_http_error_with_its_status(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(status=401, body={"error": {"message": "invalid api key"}})]
    message = failure(lambda: check_model(chat_server.url, "llama3", api_key="wrong"))
    assert message.endswith("/v1/models answered HTTP 401: invalid api key — check the API key")
