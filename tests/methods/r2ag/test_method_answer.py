"""R2AG's answer on both paths never hands the prompt back: an echo is a recoverable error after the call that
holds the raw text, and the answer is "I don't know"; a usable first line is the answer, labels removed."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.methods.base import RunContext, get_method
from engine.methods.r2ag.method import R2agParams
from engine.methods.r2ag.offline import RERANK_ONLY
from engine.params import build_params
from engine.tools.base import IDK, Reader, Reading
from engine.trace import AnswerStep, ErrorStep, LlmCallStep

QUESTION = "Who was born first, Ada Lovelace or Charles Babbage?"


def run(workbench, tools, **params) -> list:
    ctx = RunContext(pack=workbench.pack, retrieval=workbench.retrieval, tools=tools,
                     params=build_params(R2agParams, params), question=workbench.pack.questions_by_id["mq3"])
    return list(get_method("r2ag").run(QUESTION, ctx))


class EchoingReader(Reader):
    """An LLM reader whose model handed back the first chunk it was given (SmolLM2 did, issue 23)."""

    def __init__(self, answer=None):
        self.answer = answer

    def read(self, question, evidence, facts=()):
        answer = self.answer or evidence[0].text
        call = LlmCallStep(role="reader", prompt=f"Answer from the evidence.\n[1] {evidence[0].text}\n{question}",
                           output=answer, backend="fake")
        return Reading(answer=answer, citations=(evidence[0].doc_id,), confidence=0.9, steps=(call,))


def test_re_rank_only_refuses_a_reading_that_echoes_a_chunk(mini_workbench):
    steps = run(mini_workbench, replace(mini_workbench.tools, reader=EchoingReader()))
    call = next(i for i, s in enumerate(steps) if isinstance(s, LlmCallStep))
    error = steps[call + 1]
    assert isinstance(error, ErrorStep) and error.recoverable and "the reader echoed evidence 1" in error.message
    answer = steps[-1]
    assert isinstance(answer, AnswerStep) and answer.text == IDK and answer.refused and not answer.citations
    assert answer.title == RERANK_ONLY + " (refused: evidence 1)"


def test_re_rank_only_keeps_a_short_answer_from_the_chunks(mini_workbench):
    steps = run(mini_workbench, replace(mini_workbench.tools, reader=EchoingReader("Charles Babbage")))
    assert not any(isinstance(s, ErrorStep) for s in steps)
    assert steps[-1].text == "Charles Babbage" and not steps[-1].refused and steps[-1].title == RERANK_ONLY


@pytest.fixture(scope="module")
def tiny_tools(tiny_llama, mini_pack):
    pytest.importorskip("torch")
    from engine.llm import hf
    from engine.tools.bundle import llm_bundle

    return llm_bundle(hf._load(hf.HfModelConfig(str(tiny_llama), quantization="none", device="cpu")), mini_pack)


@pytest.fixture(scope="module")
def tiny_checkpoint(tiny_tools, mini_workbench, tmp_path_factory):
    from engine.methods.r2ag.training import TrainConfig, train_r2ag

    out = tmp_path_factory.mktemp("r2ag") / "tiny.pt"
    train_r2ag(mini_workbench.pack, mini_workbench.retrieval, TrainConfig(epochs=1, lm_max_steps=1),
               chat=tiny_tools.chat, out=out)
    return out


def scripted(monkeypatch, text: str) -> None:
    """The injected generation writes `text` (the tiny random Llama writes noise)."""
    from engine.methods.r2ag import injection

    def decode(model, tokenizer, embeds, max_new_tokens, capture):
        return injection.Generation(text=text, tokens=(1, 2), pieces=("a", "b"), prompt_last=None, per_token=None,
                                    latency_ms=1.0)

    monkeypatch.setattr(injection, "greedy_decode", decode)


def test_an_injected_generation_that_echoes_the_question_is_an_error_and_no_answer(mini_workbench, tiny_tools,
                                                                                   tiny_checkpoint, monkeypatch):
    scripted(monkeypatch, QUESTION + "\nAnswer:")
    steps = run(mini_workbench, tiny_tools, checkpoint=str(tiny_checkpoint))
    calls = [i for i, s in enumerate(steps) if isinstance(s, LlmCallStep)]
    assert [steps[i].role for i in calls] == ["r2ag", "plain rag"] and steps[calls[0]].output.startswith(QUESTION)
    error = steps[calls[0] + 1]
    assert isinstance(error, ErrorStep) and error.recoverable and "echoed the question" in error.message
    assert not any(isinstance(s, ErrorStep) for s in steps[calls[1]:])  # the comparison run is shown, not judged
    answer = steps[-1]
    assert isinstance(answer, AnswerStep) and answer.text == IDK and answer.refused


def test_an_injected_generation_answers_with_its_first_line_without_the_label(mini_workbench, tiny_tools,
                                                                              tiny_checkpoint, monkeypatch):
    scripted(monkeypatch, "Answer: Charles Babbage\nQuestion: who else?")
    steps = run(mini_workbench, tiny_tools, checkpoint=str(tiny_checkpoint), compare_plain=False)
    assert not any(isinstance(s, ErrorStep) for s in steps)
    call = next(s for s in steps if isinstance(s, LlmCallStep))
    assert call.output == "Answer: Charles Babbage\nQuestion: who else?"  # the raw output stays in the trace
    assert steps[-1].text == "Charles Babbage" and not steps[-1].refused and steps[-1].title == "Answer (R2AG)"
