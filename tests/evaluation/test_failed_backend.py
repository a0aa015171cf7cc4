"""Runs whose answer rests on a failed backend (issue 26 item 4): one test of it (`backend_failure`), scored as a
miss whatever they answered, counted per method beside every metric, and readable in reports written before."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from engine.errors import BackendError, QuestionError
from engine.evaluation.compare import metric_rows
from engine.evaluation.metrics import backend_failure
from engine.evaluation.report import format_tables
from engine.evaluation.runner import aggregate, failed_trace, failure_summary, score_trace, summarise
from engine.knowledge.records import Question
from engine.methods.rulerag.method import RuleRagParams, _adapter_scope
from engine.trace import AnswerStep, ErrorStep, LlmCallStep, Step, Trace

QUESTION = Question(id="q1", question="When was Grace Hopper born?", answers=("1906",), type="factoid")
FELL_BACK = ErrorStep(title="reader fell back", message="reader model failed: HTTP 500: boom", backend_failure=True)
ORDINARY = ErrorStep(title="reader fell back", message="reader returned no answer")


def traced(*steps: Step, method: str = "vanilla", question: Question = QUESTION) -> Trace:
    head = Trace(id=f"t-{method}", question=question.question, method=method, backend="openai", model="m", pack="p",
                 question_id=question.id)
    return head.with_steps(steps, 1.0)


def test_backend_failure_is_the_first_step_saying_a_backend_failed_and_none_for_other_errors():
    ended = ErrorStep(title="Run failed", message="BackendError: the vector store is gone", recoverable=False,
                      backend_failure=True)
    assert backend_failure(traced(ORDINARY, FELL_BACK, ended, AnswerStep(text="I don't know", refused=True))) \
        is FELL_BACK
    assert backend_failure(traced(ORDINARY, AnswerStep(text="1906"))) is None


def test_a_run_that_rests_on_a_failed_backend_scores_a_miss_even_when_its_fallback_got_it_right():
    result = score_trace(traced(LlmCallStep(role="reader", prompt="p", output=""), FELL_BACK,
                                AnswerStep(text="1906", confidence=0.9)), QUESTION)
    assert (result.em, result.f1, result.acc, result.outcome) == (0.0, 0.0, 0.0, "missing")
    assert result.guess_correct is None and result.backend_failure == FELL_BACK.message
    working = score_trace(traced(ORDINARY, AnswerStep(text="1906")), QUESTION)
    assert (working.em, working.outcome, working.backend_failure) == (1.0, "correct", "")


def test_failed_runs_stay_in_every_mean_and_are_counted_beside_per_method_and_type():
    second = Question(id="q2", question="Who?", answers=("Ada",), type="comparison")
    results = [score_trace(traced(FELL_BACK, AnswerStep(text="1906")), QUESTION),
               score_trace(traced(AnswerStep(text="Ada"), question=second), second),
               score_trace(traced(AnswerStep(text="1906"), method="rulerag"), QUESTION)]
    overall = aggregate(results[:2])
    assert (overall["n"], overall["failed_runs"], overall["failed_share"], overall["em"]) == (2, 1, 0.5, 0.5)
    report = summarise(results)
    assert report["vanilla"]["by_type"]["factoid"]["failed_runs"] == 1
    assert report["vanilla"]["by_type"]["comparison"]["failed_runs"] == 0
    assert report["rulerag"]["overall"]["failed_runs"] == 0
    assert failure_summary(results) == ("1 of 3 runs rest on a failed backend (vanilla: 1); first: reader model "
                                        "failed: HTTP 500: boom")
    assert failure_summary(results[1:]) == ""


def test_every_failed_call_is_counted_not_only_the_run_a_fallback_carried_on_through():
    twice = traced(FELL_BACK, FELL_BACK, ORDINARY, AnswerStep(text="I don't know", refused=True))
    results = [score_trace(twice, QUESTION), score_trace(traced(FELL_BACK, AnswerStep(text="1906")), QUESTION),
               score_trace(traced(ORDINARY, AnswerStep(text="1906")), QUESTION)]
    assert [r.failed_calls for r in results] == [2, 1, 0]
    assert (aggregate(results)["failed_runs"], aggregate(results)["failed_calls"]) == (2, 3)


def test_the_table_has_a_failed_column_and_a_report_written_before_it_shows_a_dash():
    now = {"vanilla": {"overall": {"n": 2, "failed_runs": 1, "em": 0.5}, "by_type": {}}}
    before = {"vanilla": {"overall": {"n": 2, "em": 0.5}, "by_type": {"factoid": {"n": 2, "em": 0.5}}}}
    header, overall = format_tables(now).splitlines()[1:]
    assert header.split()[:4] == ["type", "n", "failed", "em"] and overall.split()[:4] == ["overall", "2", "1", "0.500"]
    assert [line.split()[2] for line in format_tables(before).splitlines()[2:]] == ["–", "–"]
    assert [row.get("failed_runs") for row in metric_rows(before)] == [None, None]


@pytest.mark.parametrize(("error", "failed"), [(BackendError("the model failed to load"), True),
                                                (QuestionError("the question is empty"), False)])
def test_a_question_that_could_not_be_asked_is_a_backend_failure_only_when_a_backend_failed(error, failed):
    bench = SimpleNamespace(backend="hf", pack=SimpleNamespace(info=SimpleNamespace(name="p")))
    trace = failed_trace(bench, "vanilla", QUESTION, error)
    assert (backend_failure(trace) is not None, score_trace(trace, QUESTION).backend_failure) == (
        failed, str(error) if failed else "")


class _AdapterFails:
    """An hf chat model whose LoRA adapter does not load."""

    def adapter(self, path: str) -> None:
        raise AssertionError("not reached: the adapter did not load")

    def load_adapter(self, path: str) -> str:
        raise BackendError(f"adapter folder {path} not found")


def test_rulerag_reading_with_the_base_model_when_its_adapter_failed_is_a_backend_failure():
    ctx = SimpleNamespace(tools=SimpleNamespace(chat=_AdapterFails(), backend="hf", model="m"))
    (step,), _ = _adapter_scope(ctx, RuleRagParams(adapter="/nowhere"))
    assert isinstance(step, ErrorStep) and step.recoverable and step.backend_failure
    assert "could not be loaded" in step.message and "base model" in step.message
