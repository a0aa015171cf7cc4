"""The langchain backend: langchain-core's fake chat models through a user's factory, and `init_chat_model`
against the loopback OpenAI-compatible server (no key from the environment, nothing beyond loopback)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from langchain_core.language_models.fake_chat_models import FakeListChatModel, GenericFakeChatModel
from langchain_core.messages import AIMessage

from engine.cli import main
from engine.errors import BackendError, ServerUnreachable
from engine.llm.base import open_chat
from engine.llm.chat import GenerationSettings, Message, StreamingChatModel
from engine.llm.langchain_chat import LangChainChatModel, is_factory
from engine.methods.base import method_ids
from engine.runner import Workbench
from engine.trace import AnswerStep, AttentionStep, ErrorStep, LlmCallStep
from fake_chat_server import MODEL, Answerer, ChatServer, closed_port
from paths import MINI_PACK, ROOT

QUESTION = "When was Grace Hopper born?"
CHAT = [Message("system", "Answer briefly."), Message("user", "Who wrote Hamlet?")]
SENTINEL = "sk-from-the-environment-must-not-be-sent"


@pytest.fixture
def factories(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A user's module `my_chats` on sys.path, with factories good and bad."""
    (tmp_path / "my_chats.py").write_text(textwrap.dedent("""
        import os
        from langchain_core.language_models.fake_chat_models import FakeListChatModel
        from langchain_openai import ChatOpenAI

        def reader():
            return FakeListChatModel(responses=["Answer: 1906\\nEvidence: 1"])

        def broken():
            raise RuntimeError("no credentials for the cluster")

        def not_a_model():
            return "gpt-4o"

        def scored():
            return ChatOpenAI(model="tiny-chat", base_url=os.environ["MY_SERVER"], api_key="k", logprobs=True)
    """))
    monkeypatch.syspath_prepend(str(tmp_path))
    return tmp_path


def workbench(mini_pack, settings, model: str, **options: str) -> Workbench:
    return Workbench(mini_pack, settings, backend="langchain", backend_options={"model": model, **options})


@pytest.mark.parametrize("method", method_ids())
def test_every_method_answers_through_a_users_langchain_factory(mini_pack, settings, factories, method):
    trace = workbench(mini_pack, settings, "my_chats:reader").ask(QUESTION, method)
    assert isinstance(trace.steps[-1], AnswerStep)
    assert trace.answer.backend == "langchain" and trace.totals.llm_calls >= 1
    looked = [s.title for s in trace.steps if isinstance(s, AttentionStep)]
    assert all(t.startswith("R2-Former") for t in looked), looked  # the LLM's attention is never invented


def test_vanilla_answer_comes_from_the_fake_model(mini_pack, settings, factories):
    trace = workbench(mini_pack, settings, "my_chats:reader").ask(QUESTION, "vanilla")
    assert trace.answer.text == "1906"
    call = next(s for s in trace.steps if isinstance(s, LlmCallStep))
    assert call.backend == "langchain: my_chats:reader" and call.logprobs == ()


def test_r2ag_says_nothing_was_injected_on_the_langchain_backend(mini_pack, settings, factories):
    trace = workbench(mini_pack, settings, "my_chats:reader").ask(QUESTION, "r2ag")
    assert any("langchain backend takes text only" in getattr(s, "detail", "") for s in trace.steps)


@pytest.mark.parametrize("spec, message", [
    ("no_such_module_h7:make", "cannot load chat model factory"),
    ("my_chats:missing", "cannot load chat model factory"),
    ("my_chats:broken", "failed: RuntimeError: no credentials for the cluster"),
    ("my_chats:not_a_model", "returned str, not a LangChain BaseChatModel"),
    ("nosuchprovider:model-1", "langchain cannot open"),
])
def test_a_bad_model_spec_is_a_backend_error_naming_it(factories, spec, message):
    with pytest.raises(BackendError, match=message):
        open_chat("langchain", {"model": spec})


def test_the_cli_names_what_the_langchain_backend_needs(ragscope_home, capsys):
    assert main(["ask", "--pack", str(MINI_PACK), "--backend", "langchain", QUESTION]) == 2
    assert "needs 'model'" in capsys.readouterr().err


@pytest.mark.parametrize("spec, factory", [
    ("openai:gpt-4o-mini", False), ("ollama:llama3", False), ("gpt-4o", False), ("anthropic:claude-x", False),
    ("my_chats:reader", True), ("lab.models:make_chat", True),
])
def test_provider_model_and_module_factory_are_told_apart(spec, factory):
    assert is_factory(spec) is factory


def test_other_backends_and_the_models_page_service_never_import_langchain():
    """The LangChain graph stays out of app start-up: open_chat imports this backend for every backend."""
    code = ("import sys; import engine.app.models; from engine.llm.base import open_chat; open_chat('offline'); "
            "sys.exit(sorted(m for m in sys.modules if m.split('.')[0] in ('langchain', 'langchain_core', "
            "'langgraph', 'langsmith', 'openai')) or 0)")
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]


# ---------------------------------------------------------------- calls: streaming, stop, bound, failure


def generic(*texts: str) -> LangChainChatModel:
    return LangChainChatModel(GenericFakeChatModel(messages=iter([AIMessage(content=t) for t in texts])), "fake")


def test_streamed_pieces_join_to_the_completion_and_end_before_the_stop_string():
    chat = generic("Paris is the capital\nQuestion: and Rome?")
    assert isinstance(chat, StreamingChatModel)
    pieces: list[str] = []
    done = chat.complete_streaming(CHAT, GenerationSettings(max_new_tokens=50, stop=("\nQuestion:",)), pieces.append)
    assert done.text == "Paris is the capital" == "".join(pieces)
    assert done.backend == "langchain" and done.tokens_out == 4


def test_a_model_without_a_max_tokens_field_is_cut_at_that_many_words():
    chat = generic("one two three four five six seven eight")
    assert not chat.bounded
    assert chat.complete(CHAT, GenerationSettings(max_new_tokens=3)).text == "one two three"


def test_a_reply_that_outlasts_the_deadline_keeps_what_came_and_says_it_was_cut():
    slow = LangChainChatModel(FakeListChatModel(responses=["a slow reply"], sleep=0.1), "slow", timeout_s=0.25)
    done = slow.complete(CHAT)
    assert done.text.strip() and "a slow reply".startswith(done.text) and done.text != "a slow reply"
    assert done.cut == "reply cut after 0.25 s (the backend's timeout)"


def test_a_deadline_passed_before_any_text_ends_the_run():
    late = LangChainChatModel(FakeListChatModel(responses=["  late"], sleep=0.3), "late", timeout_s=0.25)
    with pytest.raises(ServerUnreachable, match=r"more than 0.25 s"):
        late.complete(CHAT)


def test_a_failing_provider_becomes_an_error_step_not_a_crash(mini_pack, settings, factories, monkeypatch):
    import my_chats  # the fixture's module

    monkeypatch.setattr(my_chats, "reader", lambda: FakeListChatModel(responses=["never"], error_on_chunk_number=0))
    trace = workbench(mini_pack, settings, "my_chats:reader").ask(QUESTION, "vanilla")
    assert trace.answer.refused
    assert any(isinstance(s, ErrorStep) and "langchain model my_chats:reader failed" in s.message
               for s in trace.steps)


# ---------------------------------------------------------------- init_chat_model against the loopback server


@pytest.fixture
def environment_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    """An OpenAI account in the environment: none of it may be used."""
    for name, value in {"OPENAI_API_KEY": SENTINEL, "OPENAI_ORG_ID": "org-sentinel",
                        "OPENAI_PROJECT_ID": "proj-sentinel", "OPENAI_API_BASE": closed_port() + "/v1"}.items():
        monkeypatch.setenv(name, value)


def sent_headers(server: ChatServer) -> list[str]:
    return [f"{k.lower()}: {v}" for r in server.requests for k, v in r["headers"].items()]


def test_init_chat_model_openai_asks_the_loopback_server_with_no_key_from_the_environment(
        chat_server, environment_keys, tracing_asked):
    chat_server.answerer = Answerer(tokens=("Shake", "speare"), prompt_tokens=11)
    chat = open_chat("langchain", {"model": f"openai:{MODEL}", "base_url": chat_server.url + "/v1"})
    done = chat.complete(CHAT, GenerationSettings(max_new_tokens=7, temperature=0.0))
    assert done.text == "Shakespeare" and (done.tokens_in, done.tokens_out) == (11, 2)
    assert [r["path"] for r in chat_server.requests] == ["/v1/chat/completions"]
    body = chat_server.requests[0]["body"]
    assert body.get("max_completion_tokens", body.get("max_tokens")) == 7  # the bound is sent
    assert body["temperature"] == 0.0 and body["model"] == MODEL
    headers = " ".join(sent_headers(chat_server)).lower()
    assert "sentinel" not in headers and SENTINEL.lower() not in headers and "authorization" not in headers
    assert tracing_asked == []  # LANGSMITH_TRACING in the environment does not switch tracing on


def test_the_tracing_spy_sees_a_model_called_outside_the_backend(tracing_asked):
    """The check above can fail: the same fake model, invoked directly, is traced."""
    FakeListChatModel(responses=["x"]).invoke("hi")
    assert [kind for kind, _name in tracing_asked] == ["llm"]


def test_a_key_the_user_gives_is_sent(chat_server, environment_keys):
    chat_server.answerer = Answerer(tokens=("ok",))
    chat = open_chat("langchain", {"model": f"openai:{MODEL}", "base_url": chat_server.url + "/v1",
                                   "api_key": "sk-user"})
    assert chat.complete(CHAT).text == "ok"
    assert "authorization: Bearer sk-user" in sent_headers(chat_server)


def test_logprobs_are_read_where_the_provider_gives_them(chat_server, factories, monkeypatch):
    monkeypatch.setenv("MY_SERVER", chat_server.url + "/v1")
    chat_server.answerer = Answerer(tokens=("Paris", "."), logprobs=(-0.25, -0.5))
    done = open_chat("langchain", {"model": "my_chats:scored"}).complete(CHAT)
    assert done.text == "Paris." and [(t.token, t.logprob) for t in done.logprobs] == [("Paris", -0.25), (".", -0.5)]


def test_an_unreachable_server_ends_the_run_with_a_message():
    chat = open_chat("langchain", {"model": f"openai:{MODEL}", "base_url": closed_port() + "/v1", "timeout_s": "2"})
    with pytest.raises(ServerUnreachable, match="no answer"):
        chat.complete(CHAT)


# ---------------------------------------------------------------- the Models page's service


def test_a_configured_langchain_model_is_saved_without_its_key_and_opens_again(factories, tmp_path):
    from engine.app import models

    config = models.use_langchain("my_chats:reader", api_key="sk-user")
    assert config.label == "langchain: my_chats:reader"
    models.write_backends(tmp_path / "backends.json", {"langchain": config})
    saved = models.read_backends(tmp_path / "backends.json")["langchain"]
    assert dict(saved.options) == {"model": "my_chats:reader"}
    assert models.langchain_model(saved).complete(CHAT).text.startswith("Answer: 1906")
    broken = models.BackendConfig("langchain", "langchain: x", (("model", "my_chats:broken"),))
    assert models.langchain_model(broken) is None


def test_cli_ask_through_init_chat_model_on_the_loopback_server(ragscope_home, chat_server, environment_keys, capsys):
    chat_server.answerer = Answerer(tokens=("Answer: 1906\n", "Evidence: 1"))
    argv = ["ask", "--pack", str(MINI_PACK), "--backend", "langchain", "--model", f"openai:{MODEL}",
            "--base-url", chat_server.url + "/v1", QUESTION]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert "answer: 1906" in out and f"langchain: openai:{MODEL}" in out
    assert {r["path"] for r in chat_server.requests} == {"/v1/chat/completions"}
