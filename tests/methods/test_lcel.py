"""LCEL pipelines as methods (issue 25): the README's example as a plugin, and chains run with a fake model."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import pytest
from langchain_core.language_models import FakeListChatModel
from langchain_core.runnables import RunnableLambda
from langchain_core.tools import tool

from engine.cli import main
from engine.errors import BackendError, MethodError, RunCancelled, ServerUnreachable
from engine.lcel import LcelParams, lcel_method
from engine.lcel.method import run_chain
from engine.lcel.steps import MAX_OUTPUT_CHARS
from engine.live import Partial, listening
from engine.methods import RunContext, method_ids
from engine.params import AnswerPolicy
from engine.tools.bundle import llm_bundle
from engine.trace import AnswerStep, DecisionStep, LlmCallStep, RetrievalStep
from fake_chat import FailingChat, ScriptedChat
from paths import MINI_PACK, ROOT
from plugin_home import write_plugin
from tools.test_llm_call_streaming import SCORED, StreamingChat

EXAMPLE = ROOT / "examples" / "lcel" / "lcel_stuff.py"  # the README's example, loaded as it is
QUESTION = "When was Grace Hopper born?"


def kinds(steps) -> list[tuple[str, int]]:
    return [(step.kind, step.iteration) for step in steps]


def context(workbench, chat=None, **params) -> RunContext:
    """A run's context on the workbench's pack: its offline tools, or LLM tools over `chat`."""
    tools = llm_bundle(chat, workbench.pack) if chat is not None else workbench.tools
    return RunContext(pack=workbench.pack, retrieval=workbench.retrieval, tools=tools, params=LcelParams(**params))


def stuffed(tools):
    """retriever | prompt text | chat model: the example's shape, written here to vary it."""
    join = RunnableLambda(lambda docs: "Context: " + " ".join(d.page_content for d in docs) + f"\nQuestion: {QUESTION}")
    return tools.retriever | join | tools.chat_model


# ---- the README's example as a plugin, offline ---------------------------------------------------------------


def test_the_readme_example_is_a_plugin_that_answers_offline_on_the_mini_pack_step_by_step(plugin_home,
                                                                                         mini_workbench):
    write_plugin(plugin_home, EXAMPLE.name, EXAMPLE.read_text())
    assert method_ids()[-1] == "lcel_stuff"
    trace = mini_workbench.ask(QUESTION, "lcel_stuff", {"k": 2}, policy=AnswerPolicy(0.0))
    assert kinds(trace.steps) == [("retrieval", 1), ("llm_call", 1), ("answer", 1)]
    retrieval, call, answer = trace.steps
    assert [hit.chunk_id for hit in retrieval.hits] == ["m07#0", "m01#0"] and retrieval.retriever == "hybrid"
    assert retrieval.query == QUESTION
    assert "Question: When was Grace Hopper born?" in call.prompt and "American computer scientist" in call.prompt
    assert call.prompt.startswith("system: Answer the question from the context") and call.output == "1906"
    assert call.backend.startswith("offline: reader")
    assert (answer.text, answer.citations, answer.evidence, answer.refused) == ("1906", ("m07",), ("m07", "m01"), False)
    assert 0 < answer.confidence <= 1  # the run's calibration settled it, as every offline answer


def test_the_readme_example_answers_through_cli_ask(plugin_home, capsys):
    write_plugin(plugin_home, EXAMPLE.name, EXAMPLE.read_text())
    assert main(["ask", "--pack", str(MINI_PACK), "--method", "lcel_stuff", "-p", "k=2", "-p", "min_confidence=0",
                 QUESTION]) == 0
    out = capsys.readouterr().out
    assert "[1] retrieval     Retrieved 2 chunks (hybrid)" in out and "answer: 1906" in out


def test_the_readme_example_fits_in_25_lines():
    assert len(EXAMPLE.read_text().splitlines()) <= 25


def test_the_readme_shows_the_lcel_example_exactly_as_the_tests_load_it():
    assert f"```python\n{EXAMPLE.read_text()}```" in (ROOT / "README.md").read_text()


# ---- on a language model ----------------------------------------------------------------------------------------


def test_a_chain_on_the_chosen_model_records_its_prompt_reply_and_token_counts(mini_workbench):
    chat = ScriptedChat(reply=lambda prompt: "1906" if "Grace Hopper" in prompt else "no")
    steps = list(run_chain(stuffed, QUESTION, QUESTION, context(mini_workbench, chat, k=2)))
    assert kinds(steps) == [("retrieval", 1), ("llm_call", 1), ("answer", 1)]
    call, answer = steps[1], steps[2]
    assert chat.sent and chat.sent[0].startswith("Context: Grace Hopper was") and call.prompt.startswith("human: ")
    assert (call.output, call.backend, call.tokens_in, call.tokens_out) == ("1906", "fake: scripted",
                                                                           len(chat.sent[0].split()), 1)
    assert chat.settings_sent[0].max_new_tokens == 128
    assert isinstance(answer, AnswerStep)
    assert (answer.text, answer.backend, answer.evidence, answer.refused) == ("1906", "fake", ("m07", "m01"), False)


def test_a_model_that_fails_is_one_error_step_and_a_refusal(mini_workbench):
    chat = FailingChat(BackendError("server said 500"))
    steps = list(run_chain(stuffed, QUESTION, QUESTION, context(mini_workbench, chat, k=2)))
    assert kinds(steps) == [("retrieval", 1), ("error", 1), ("answer", 1)]
    assert steps[1].title == "The model call failed" and "server said 500" in steps[1].message
    assert steps[2].refused and steps[2].title == "Refused: the chain failed (BackendError)"


def test_a_chain_that_raises_is_one_error_step_where_it_happened_and_a_refusal(mini_workbench):
    def broken(docs):
        raise ValueError("no context today")

    steps = list(run_chain(lambda tools: tools.retriever | RunnableLambda(broken) | tools.chat_model,
                           QUESTION, QUESTION, context(mini_workbench, k=2)))
    assert kinds(steps) == [("retrieval", 1), ("error", 1), ("answer", 1)]
    assert steps[1].message == "ValueError: no context today" and steps[1].title == "The chain failed"
    assert steps[2].refused and steps[2].text == "I don't know"


def test_a_tool_call_is_a_decision_step_with_its_input_and_output(mini_workbench):
    @tool
    def add(a: int, b: int) -> int:
        """Add two numbers."""
        return a + b

    steps = list(run_chain(lambda tools: RunnableLambda(lambda q: {"a": 1815, "b": 91}) | add,
                           QUESTION, QUESTION, context(mini_workbench)))
    assert kinds(steps) == [("decision", 1), ("answer", 1)]
    assert isinstance(steps[0], DecisionStep) and (steps[0].title, steps[0].action) == ("Tool add", "tool:add")
    assert "1815" in steps[0].detail and steps[0].detail.endswith("output: 1906")
    assert steps[1].text == "1906" and steps[1].evidence == ()


def test_what_a_users_own_model_writes_is_recorded_up_to_the_cap(mini_workbench):
    huge = "word " * 40_000
    steps = list(run_chain(lambda tools: FakeListChatModel(responses=[huge]), "x" * 50_000, QUESTION,
                           context(mini_workbench)))
    call, answer = steps
    assert isinstance(call, LlmCallStep) and call.backend.startswith("fake-list-chat-model")
    assert len(call.output) < MAX_OUTPUT_CHARS + 60 and call.output.endswith("more characters not recorded]")
    assert len(call.prompt) < 20_060 and len(answer.text) < MAX_OUTPUT_CHARS + 60


def test_a_dict_input_and_a_dict_output_as_create_retrieval_chain_uses_them(plugin_home, mini_workbench):
    method = lcel_method("dict_chain", "Dict chain", lambda tools: RunnableLambda(
        lambda given: {"context": [], "answer": f"asked: {given['input']}"}), description="dicts", input_key="input")
    steps = list(method().run(QUESTION, context(mini_workbench)))
    assert steps[-1].text == f"asked: {QUESTION}"


# ---- streaming, Stop, LangSmith ---------------------------------------------------------------------------------


def test_steps_arrive_while_the_chain_is_still_working(mini_workbench):
    gate = threading.Event()
    chat = ScriptedChat(reply=lambda prompt: "1906")

    def waits(docs):
        assert gate.wait(30), "the run waited for the whole chain before yielding its first step"
        return "Context: " + docs[0].page_content

    steps = run_chain(lambda tools: tools.retriever | RunnableLambda(waits) | tools.chat_model, QUESTION, QUESTION,
                      context(mini_workbench, chat, k=2))
    first = next(steps)  # the chain is held in `waits`: its retrieval is already here
    assert isinstance(first, RetrievalStep) and not chat.sent
    gate.set()
    assert kinds(rest := list(steps)) == [("llm_call", 1), ("answer", 1)] and rest[-1].text == "1906"


def test_stop_ends_the_run_at_once_and_the_chain_at_its_next_event(mini_workbench):
    gate, chain_ended = threading.Event(), threading.Event()  # set when the chain ends, however it ends
    chat = ScriptedChat(reply=lambda prompt: "1906")
    ctx, errors = context(mini_workbench, chat, k=2), []

    def waits(docs):
        gate.wait(30)
        return "Context"

    def ended(tools):
        chain = tools.retriever | RunnableLambda(waits) | tools.chat_model
        return chain.with_listeners(on_end=lambda run: chain_ended.set(),
                                    on_error=lambda run: (errors.append(run.error), chain_ended.set()))

    steps = run_chain(ended, QUESTION, QUESTION, ctx)
    assert isinstance(next(steps), RetrievalStep)
    ctx.cancel.set()
    with pytest.raises(RunCancelled):
        next(steps)
    gate.set()
    assert chain_ended.wait(30) and chat.sent == []  # the model call after the Stop was never made
    assert "RunCancelled" in errors[0]


def test_a_watching_page_hears_the_chains_model_reply_as_it_is_written_with_its_logprobs(mini_workbench):
    heard = []
    with listening(heard.append):  # what Run.live() sets for the thread that runs the method
        steps = list(run_chain(stuffed, QUESTION, QUESTION, context(mini_workbench, StreamingChat(), k=2)))
    assert heard == [Partial("chat model", "Shakes"), Partial("chat model", "Shakespeare")]
    assert steps[-1].text == "Shakespeare" and steps[1].logprobs == SCORED  # the backend's logprobs reach the step


@pytest.fixture()
def tracing_asked(monkeypatch):
    """LangSmith tracing switched on by the environment; langsmith caches what it read there, so the cache is
    emptied before and after (else every later LangChain call in this process would try to send traces)."""
    from langsmith.utils import get_env_var

    get_env_var.cache_clear()
    monkeypatch.setenv("LANGSMITH_TRACING", "true")
    monkeypatch.setenv("LANGCHAIN_TRACING_V2", "true")
    yield
    monkeypatch.undo()
    get_env_var.cache_clear()


def test_langsmith_tracing_stays_off_though_the_environment_asks_for_it(mini_workbench, tracing_asked):
    from langsmith.utils import tracing_is_enabled

    assert tracing_is_enabled()  # what a plain invoke would do here
    seen = []
    list(run_chain(lambda tools: RunnableLambda(lambda q: seen.append(tracing_is_enabled()) or "ok"),
                   QUESTION, QUESTION, context(mini_workbench)))
    assert seen == [False]


# ---- errors the author can act on -------------------------------------------------------------------------------


def test_a_build_that_returns_no_runnable_is_a_method_error_naming_it(mini_workbench):
    def build(tools):
        return "retriever | prompt"

    with pytest.raises(MethodError, match=r"build' returned str, not a LangChain runnable; return the chain"):
        list(run_chain(build, QUESTION, QUESTION, context(mini_workbench)))


def test_a_build_that_raises_is_a_method_error_naming_it_and_its_reason(mini_workbench):
    def build(tools):
        return tools.retriever | {}["prompt"]

    with pytest.raises(MethodError, match=r"build' failed to build the chain: KeyError: 'prompt'"):
        list(run_chain(build, QUESTION, QUESTION, context(mini_workbench)))


def test_a_model_server_that_cannot_be_reached_ends_the_run_as_the_runner_says_it(mini_workbench):
    chat = FailingChat(ServerUnreachable("nothing answers at http://127.0.0.1:9"))
    steps = run_chain(stuffed, QUESTION, QUESTION, context(mini_workbench, chat, k=2))
    assert isinstance(next(steps), RetrievalStep)
    with pytest.raises(ServerUnreachable, match="nothing answers"):
        next(steps)  # no error step of ours: the runner's "Model server unreachable" says it once


def test_lcel_method_refuses_a_build_that_is_not_a_function_and_a_taken_id(plugin_home):
    with pytest.raises(MethodError, match=r"lcel_method\('mine'\) needs build, a function from LcelTools"):
        lcel_method("mine", "Mine", None, description="d")
    with pytest.raises(MethodError, match="method id 'vanilla' is already taken"):
        lcel_method("vanilla", "Mine", stuffed, description="d")


def test_import_engine_leaves_lcel_out_and_lcel_leaves_out_the_langchain_graph_and_torch():
    code = ("import sys, engine\nassert 'engine.lcel' not in sys.modules\nimport engine.lcel\n"
            "heavy = [m for m in ('langchain', 'langchain_community', 'langgraph', 'torch') if m in sys.modules]\n"
            "print(heavy); sys.exit(1 if heavy else 0)")
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr[-3000:]
