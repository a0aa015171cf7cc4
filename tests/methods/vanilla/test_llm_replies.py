"""Vanilla RAG on an LLM backend whose replies bend the format the way a real small model's do: the run
finishes, what was not taken as written is an `error` step with the raw reply, and the answer is never the
prompt echoed."""

from __future__ import annotations

from collections.abc import Callable

from engine.methods import RunContext, get_method
from engine.methods.vanilla.method import VanillaParams
from engine.params import build_params
from engine.retrieval.suite import open_retrieval
from engine.tools.base import IDK
from engine.tools.bundle import llm_bundle
from engine.trace import AnswerStep, ErrorStep, Step
from fake_chat import ScriptedChat

QUESTION = "When was Grace Hopper born?"


def run(reply: Callable[[str], str], mini_pack, settings) -> list[Step]:
    ctx = RunContext(pack=mini_pack, retrieval=open_retrieval(mini_pack, settings),
                     tools=llm_bundle(ScriptedChat(reply), mini_pack), params=build_params(VanillaParams, {"k": 3}))
    return list(get_method("vanilla").run(QUESTION, ctx))


def test_an_evidence_block_handed_back_is_an_error_step_and_a_refusal(mini_pack, settings) -> None:
    def echo_first_block(prompt: str) -> str:
        return "1\n\n" + next(line for line in prompt.splitlines() if line.startswith("[1] "))

    steps = run(echo_first_block, mini_pack, settings)
    assert [s.kind for s in steps] == ["retrieval", "llm_call", "error", "error", "answer"]
    echo = steps[3]
    assert isinstance(echo, ErrorStep) and echo.recoverable and "the answer echoes evidence 1" in echo.message
    assert echo.message.endswith(steps[1].output.strip())  # the raw reply, whole
    answer = steps[-1]
    assert isinstance(answer, AnswerStep) and (answer.text, answer.refused) == (IDK, True)


def test_a_sentence_answer_is_cut_to_the_date_the_question_asks_for(mini_pack, settings) -> None:
    steps = run(lambda _prompt: "The answer is: Grace Hopper was born on December 9, 1906 in New York City.\n"
                                "Evidence: 1", mini_pack, settings)
    assert [s.kind for s in steps] == ["retrieval", "llm_call", "error", "answer"]
    assert "took its short answer 'December 9, 1906'" in steps[2].message
    assert (steps[-1].text, steps[-1].refused) == ("December 9, 1906", False)
