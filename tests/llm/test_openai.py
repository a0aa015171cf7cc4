"""The OpenAI-compatible backend against a scripted loopback server: replies, streams and every failure."""

from __future__ import annotations

import re
import time
from types import SimpleNamespace
from typing import Any

import httpx
import pytest
from langchain_core.messages import AIMessage, AIMessageChunk, HumanMessage, SystemMessage

import engine.llm.openai as openai_backend
from engine.errors import BackendError
from engine.llm.chat import ChatModel, GenerationSettings, Message
from engine.llm.openai import (
    OpenAIChatModel,
    OpenAICompatibleChat,
    check_connection,
    check_model,
    normalise_base_url,
)

from fake_chat_server import MODEL, ChatServer, Reply, completion, sse


@pytest.fixture
def no_sleep(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Record the backend's backoff delays instead of waiting them out (the server thread keeps real time)."""
    delays: list[float] = []
    monkeypatch.setattr(openai_backend, "time", SimpleNamespace(sleep=delays.append, perf_counter=time.perf_counter))
    return delays


def chat_model(server: ChatServer, **options: Any) -> OpenAICompatibleChat:
    return OpenAICompatibleChat(base_url=server.url, model=MODEL, **{"retry_backoff_s": 0.01, **options})


QUESTION = [Message("system", "Answer briefly."), Message("user", "Who wrote Hamlet?")]


# ---------------------------------------------------------------- base URL


@pytest.mark.parametrize("given", [
    "http://127.0.0.1:8000", "http://127.0.0.1:8000/", "http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1/",
    " 127.0.0.1:8000 ", "http://127.0.0.1:8000/v1/chat/completions",
])
def test_base_url_forms_normalise_to_the_v1_root(given: str) -> None:
    assert normalise_base_url(given) == "http://127.0.0.1:8000/v1"


def test_base_url_keeps_a_path_prefix_before_v1() -> None:
    assert normalise_base_url("https://gateway.example/openai/v1/") == "https://gateway.example/openai/v1"


@pytest.mark.parametrize("given", ["", "ftp://host/v1", "http://"])
def test_bad_base_url_is_rejected_with_an_example(given: str) -> None:
    with pytest.raises(BackendError, match=r"http://127\.0\.0\.1:8000/v1"):
        OpenAIChatModel(given, MODEL)


# ---------------------------------------------------------------- the ChatModel adapter


@pytest.mark.parametrize("options, named", [
    ({"timeout_s": 0}, "timeout_s input should be greater than 0 (got 0)"),
    ({"max_retries": -1}, "max_retries input should be greater than or equal to 0 (got -1)"),
])
def test_bad_settings_are_named_in_a_backend_error(options: dict[str, Any], named: str) -> None:
    with pytest.raises(BackendError, match=re.escape(named)):
        OpenAIChatModel("http://127.0.0.1:8000", MODEL, **options)



def test_adapter_satisfies_the_chat_model_protocol(chat_server: ChatServer) -> None:
    model = OpenAIChatModel(chat_server.url, MODEL)
    assert isinstance(model, ChatModel)
    assert (model.backend, model.model, model.base_url) == ("openai", MODEL, chat_server.url + "/v1")


def test_complete_returns_text_usage_latency_and_labels(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body=completion("Shakespeare.", {"prompt_tokens": 12, "completion_tokens": 4}))]
    done = OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION)
    assert (done.text, done.tokens_in, done.tokens_out) == ("Shakespeare.", 12, 4)
    assert (done.backend, done.model) == ("openai", MODEL)
    assert done.latency_ms > 0


def test_complete_approximates_tokens_by_words_when_usage_is_missing(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body=completion("William Shakespeare wrote it"))]
    done = OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION)
    assert (done.tokens_in, done.tokens_out) == (2 + 3, 4)  # "Answer briefly." + "Who wrote Hamlet?"


def test_messages_are_sent_in_order_with_roles_and_settings(chat_server: ChatServer) -> None:
    messages = [*QUESTION, Message("assistant", "Shakespeare."), Message("user", "When?")]
    OpenAIChatModel(chat_server.url, MODEL).complete(messages, GenerationSettings(max_new_tokens=20, stop=("\n",)))
    [request] = chat_server.requests
    assert request["path"] == "/v1/chat/completions"
    assert request["body"] == {
        "model": MODEL, "stream": False, "temperature": 0.0, "max_tokens": 20, "stop": ["\n"],
        "messages": [{"role": "system", "content": "Answer briefly."}, {"role": "user", "content": "Who wrote Hamlet?"},
                     {"role": "assistant", "content": "Shakespeare."}, {"role": "user", "content": "When?"}],
    }


def test_api_key_is_sent_as_a_bearer_header_and_omitted_when_empty(chat_server: ChatServer) -> None:
    OpenAIChatModel(chat_server.url, MODEL, api_key="sk-local").complete(QUESTION)
    OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION)
    first, second = (r["headers"] for r in chat_server.requests)
    assert first["Authorization"] == "Bearer sk-local"
    assert "Authorization" not in second


def test_api_key_does_not_show_in_the_model_repr() -> None:
    assert "sk-secret" not in repr(OpenAICompatibleChat(base_url="http://h:1", model=MODEL, api_key="sk-secret"))


def test_stop_strings_cut_a_reply_that_ran_past_them(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body=completion("Shakespeare.\nQuestion: next"))]
    done = OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION, GenerationSettings(stop=("\nQuestion:",)))
    assert done.text == "Shakespeare."


def test_stream_yields_the_text_piece_by_piece(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(events=sse(["Sha", "kes", "peare."]))]
    pieces = list(OpenAIChatModel(chat_server.url, MODEL).stream(QUESTION))
    assert pieces == ["Sha", "kes", "peare."]
    assert chat_server.requests[0]["body"]["stream"] is True


def test_stream_ends_before_a_stop_string_split_across_pieces(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(events=sse(["Shakespeare.", "\nQue", "stion: more", " text"]))]
    settings = GenerationSettings(stop=("\nQuestion:",))
    assert "".join(OpenAIChatModel(chat_server.url, MODEL).stream(QUESTION, settings)) == "Shakespeare."


def test_stream_releases_a_held_back_tail_that_did_not_become_a_stop(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(events=sse(["a\nQue", "en"]))]
    settings = GenerationSettings(stop=("\nQuestion:",))
    assert "".join(OpenAIChatModel(chat_server.url, MODEL).stream(QUESTION, settings)) == "a\nQueen"


# ---------------------------------------------------------------- the LangChain model directly


def test_langchain_invoke_returns_an_ai_message_with_usage_metadata(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body=completion("Paris", {"prompt_tokens": 7, "completion_tokens": 1}))]
    reply = chat_model(chat_server).invoke([SystemMessage("Be brief."), HumanMessage("Capital of France?"),
                                            AIMessage("Paris"), HumanMessage("Again?")])
    assert isinstance(reply, AIMessage) and reply.content == "Paris"
    assert reply.usage_metadata == {"input_tokens": 7, "output_tokens": 1, "total_tokens": 8}
    roles = [m["role"] for m in chat_server.requests[0]["body"]["messages"]]
    assert roles == ["system", "user", "assistant", "user"]


def test_a_message_with_another_role_keeps_it(chat_server: ChatServer) -> None:
    OpenAIChatModel(chat_server.url, MODEL).complete([Message("developer", "Be terse."), Message("user", "hi")])
    assert [m["role"] for m in chat_server.requests[0]["body"]["messages"]] == ["developer", "user"]


def test_langchain_invoke_accepts_a_plain_string(chat_server: ChatServer) -> None:
    assert chat_model(chat_server, temperature=0.3, max_tokens=5).invoke("hi").content == "ok"
    body = chat_server.requests[0]["body"]
    assert (body["messages"], body["temperature"], body["max_tokens"]) == ([{"role": "user", "content": "hi"}], 0.3, 5)


def test_langchain_stream_yields_chunks_token_by_token_then_usage(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(events=sse(["Pa", "ris"], {"prompt_tokens": 5, "completion_tokens": 2}))]
    chunks = list(chat_model(chat_server).stream("Capital of France?"))
    assert all(isinstance(c, AIMessageChunk) for c in chunks)
    assert [c.content for c in chunks] == ["Pa", "ris", ""]
    merged = chunks[0] + chunks[1] + chunks[2]
    assert merged.content == "Paris"
    assert merged.usage_metadata == {"input_tokens": 5, "output_tokens": 2, "total_tokens": 7}
    assert merged.response_metadata["finish_reason"] == "stop"


def test_llm_type_names_the_protocol() -> None:
    assert OpenAICompatibleChat(base_url="http://h:1", model=MODEL)._llm_type == "openai-compatible"


# ---------------------------------------------------------------- timeouts


def test_a_slow_server_times_out_quickly_with_the_limit_in_the_message(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body=completion("late"), delay_s=0.5)]
    started = time.perf_counter()
    with pytest.raises(BackendError, match=r"/v1/chat/completions did not answer within 0\.2 s"):
        OpenAIChatModel(chat_server.url, MODEL, timeout_s=0.2).complete(QUESTION)
    assert time.perf_counter() - started < 0.45  # no retry on a timeout
    assert len(chat_server.requests) == 1


def test_a_stream_that_stalls_mid_answer_times_out(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(events=sse(["a", "b", "c"]), event_delay_s=0.5)]
    started = time.perf_counter()
    with pytest.raises(BackendError, match=r"did not answer within 0\.2 s"):
        list(OpenAIChatModel(chat_server.url, MODEL, timeout_s=0.2).stream(QUESTION))
    assert time.perf_counter() - started < 0.45


# ---------------------------------------------------------------- nonsense answers

NOT_A_COMPLETION = "answered something that is not an OpenAI chat completion"


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
    with pytest.raises(BackendError) as caught:
        OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION)
    assert type(caught.value) is BackendError
    assert f"{chat_server.url}/v1/chat/completions {NOT_A_COMPLETION}" in str(caught.value)
    assert excerpt in str(caught.value)


@pytest.mark.parametrize("events, excerpt", [
    (("data: {not json",), "{not json"),
    (("<html>oops</html>",), "<html>oops</html>"),
    (('data: {"object": "chat.completion.chunk"}',), "chat.completion.chunk"),
    (('data: {"choices": [{"index": 0}]}',), '"index": 0'),
    (('data: {"choices": [{"delta": {"content": 5}}]}',), '"content": 5'),
    ((), "(empty body)"),
])
def test_a_broken_event_stream_is_named_with_an_excerpt(
    chat_server: ChatServer, events: tuple[str, ...], excerpt: str,
) -> None:
    chat_server.replies = [Reply(events=events)]
    with pytest.raises(BackendError) as caught:
        list(OpenAIChatModel(chat_server.url, MODEL).stream(QUESTION))
    assert type(caught.value) is BackendError
    assert "answered something that is not an OpenAI chat completion stream" in str(caught.value)
    assert excerpt in str(caught.value)


def test_an_error_event_mid_stream_surfaces_the_server_message(chat_server: ChatServer) -> None:
    events = (*sse(["Sha"])[:2], 'data: {"error": {"message": "CUDA out of memory"}}')
    chat_server.replies = [Reply(events=events)]
    pieces: list[str] = []
    with pytest.raises(BackendError, match="failed mid-answer: CUDA out of memory"):
        pieces.extend(OpenAIChatModel(chat_server.url, MODEL).stream(QUESTION))
    assert pieces == ["Sha"]


# ---------------------------------------------------------------- HTTP errors and retries


def test_http_500_then_success_is_retried(chat_server: ChatServer, no_sleep: list[float]) -> None:
    chat_server.replies = [Reply(status=500, body={"error": {"message": "engine restarting"}}),
                           Reply(body=completion("fine"))]
    assert OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION).text == "fine"
    assert len(chat_server.requests) == 2
    assert no_sleep == [0.5]


def test_http_500_gives_up_after_max_retries_with_exponential_backoff(
    chat_server: ChatServer, no_sleep: list[float],
) -> None:
    chat_server.replies = [Reply(status=503, body={"error": {"message": "overloaded"}})]
    with pytest.raises(BackendError, match=r"/v1/chat/completions answered HTTP 503: overloaded"):
        OpenAIChatModel(chat_server.url, MODEL, max_retries=3).complete(QUESTION)
    assert len(chat_server.requests) == 4
    assert no_sleep == [0.5, 1.0, 2.0]


def test_backoff_is_capped(chat_server: ChatServer, no_sleep: list[float]) -> None:
    chat_server.replies = [Reply(status=429, body={"error": {"message": "slow down"}})]
    with pytest.raises(BackendError, match="HTTP 429: slow down — the server is busy"):
        chat_model(chat_server, max_retries=6, retry_backoff_s=1.0).invoke("hi")
    assert no_sleep == [1.0, 2.0, 4.0, 8.0, 8.0, 8.0]


def test_a_streamed_request_is_retried_before_any_text(chat_server: ChatServer, no_sleep: list[float]) -> None:
    chat_server.replies = [Reply(status=502, body="bad gateway", content_type="text/plain"),
                           Reply(events=sse(["ok"]))]
    assert list(OpenAIChatModel(chat_server.url, MODEL).stream(QUESTION)) == ["ok"]
    assert len(chat_server.requests) == 2


def test_http_401_surfaces_the_server_message_without_retry(chat_server: ChatServer, no_sleep: list[float]) -> None:
    chat_server.replies = [Reply(status=401, body={"error": {"message": "Invalid API key", "type": "auth"}})]
    with pytest.raises(BackendError) as caught:
        OpenAIChatModel(chat_server.url, MODEL, api_key="wrong").complete(QUESTION)
    assert str(caught.value) == (f"{chat_server.url}/v1/chat/completions answered HTTP 401: Invalid API key"
                                 " — check the API key")
    assert len(chat_server.requests) == 1 and no_sleep == []


def test_http_401_on_a_stream_surfaces_the_server_message(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(status=401, body={"error": {"message": "Invalid API key"}})]
    with pytest.raises(BackendError, match="HTTP 401: Invalid API key"):
        list(OpenAIChatModel(chat_server.url, MODEL).stream(QUESTION))


@pytest.mark.parametrize("body, shown", [
    ({"object": "error", "message": "The model `x` does not exist.", "code": 404}, "The model `x` does not exist."),
    ({"error": "Model not loaded"}, "Model not loaded"),
    ({"detail": "Not Found"}, "Not Found"),
])
def test_http_error_messages_are_found_where_each_server_puts_them(
    chat_server: ChatServer, body: dict[str, Any], shown: str,
) -> None:
    chat_server.replies = [Reply(status=404, body=body)]
    with pytest.raises(BackendError) as caught:
        OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION)
    assert str(caught.value).endswith(f"HTTP 404: {shown} — check the base URL and the model name")


def test_an_http_error_without_json_shows_the_start_of_the_body(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(status=400, body="x" * 1000, content_type="text/plain")]
    with pytest.raises(BackendError) as caught:
        OpenAIChatModel(chat_server.url, MODEL).complete(QUESTION)
    assert str(caught.value).endswith("HTTP 400: " + "x" * 300)


# ---------------------------------------------------------------- unreachable servers


def test_an_unreachable_port_says_connection_refused_and_how_to_start_a_server(
    closed_port_url: str, no_sleep: list[float],
) -> None:
    with pytest.raises(BackendError) as caught:
        OpenAIChatModel(closed_port_url, MODEL).complete(QUESTION)
    assert str(caught.value) == (f"cannot reach {closed_port_url}/v1: connection refused — is the server running? "
                                 "(vLLM: `vllm serve MODEL`, Ollama: `ollama serve`)")
    assert no_sleep == [0.5, 1.0]  # connection errors are retried, a bounded number of times


def test_an_unreachable_port_fails_the_same_way_when_streaming(closed_port_url: str) -> None:
    with pytest.raises(BackendError, match="connection refused — is the server running"):
        list(OpenAIChatModel(closed_port_url, MODEL, max_retries=0).stream(QUESTION))


def test_an_unknown_host_is_named_in_the_message() -> None:
    error = openai_backend._unreachable("http://no-such-host:8000/v1",
                                        httpx.ConnectError("[Errno -2] Name or service not known"))
    assert str(error).startswith("cannot reach http://no-such-host:8000/v1: host 'no-such-host' not found — ")


# ---------------------------------------------------------------- check_connection


def test_check_connection_lists_the_model_ids(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body={"object": "list", "data": [{"id": "qwen2.5-7b"}, {"id": "llama3"}]})]
    assert check_connection(chat_server.url + "/v1/", api_key="k") == ["qwen2.5-7b", "llama3"]
    [request] = chat_server.requests
    assert (request["path"], request["headers"]["Authorization"]) == ("/v1/models", "Bearer k")


def test_check_connection_reports_an_unreachable_server(closed_port_url: str) -> None:
    with pytest.raises(BackendError, match=f"cannot reach {closed_port_url}/v1: connection refused"):
        check_connection(closed_port_url)


def test_check_connection_reports_something_that_is_not_a_model_list(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body="<html>router login</html>", content_type="text/html")]
    with pytest.raises(BackendError, match="answered something that is not an OpenAI model list: '<html>router login"):
        check_connection(chat_server.url)


def test_check_connection_times_out_quickly(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body={"data": []}, delay_s=0.5)]
    started = time.perf_counter()
    with pytest.raises(BackendError, match=r"/v1/models did not answer within 0\.2 s"):
        check_connection(chat_server.url, timeout_s=0.2)
    assert time.perf_counter() - started < 0.45


# ---------------------------------------------------------------- check_model


def test_check_model_accepts_a_model_the_server_offers(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body={"object": "list", "data": [{"id": "qwen2.5-7b"}, {"id": "llama3"}]})]
    assert check_model(chat_server.url, "llama3") == ["qwen2.5-7b", "llama3"]
    assert [r["path"] for r in chat_server.requests] == ["/v1/models"]  # nothing is generated to check


def test_check_model_names_the_models_the_server_offers_instead(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(body={"data": [{"id": f"m{i}"} for i in range(12)]})]
    with pytest.raises(BackendError) as caught:
        check_model(chat_server.url, "llama-9000")
    assert str(caught.value) == (f"{chat_server.url}/v1 answers but does not offer model 'llama-9000'; it offers: "
                                 "m0, m1, m2, m3, m4, m5, m6, m7, m8, m9 and 2 more — use one of these ids as the "
                                 "model name")


def test_check_model_passes_on_an_http_error_with_its_status(chat_server: ChatServer) -> None:
    chat_server.replies = [Reply(status=401, body={"error": {"message": "invalid api key"}})]
    with pytest.raises(BackendError, match=r"/v1/models answered HTTP 401: invalid api key — check the API key"):
        check_model(chat_server.url, "llama3", api_key="wrong")


def test_check_model_reports_an_unreachable_server(closed_port_url: str) -> None:
    with pytest.raises(BackendError, match=f"cannot reach {closed_port_url}/v1: connection refused"):
        check_model(closed_port_url, "llama3")
