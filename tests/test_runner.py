"""A run validates its input, never crashes, can be stopped, and serves two users at once."""

from __future__ import annotations

import threading
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

from engine.errors import QuestionError, RagscopeError
from engine.methods import base
from engine.params import AnswerPolicy
from engine.trace import DecisionStep, RetrievalStep, Step


def test_empty_question_is_refused_with_a_clear_message(mini_workbench):
    with pytest.raises(QuestionError, match="empty"):
        mini_workbench.start("   \n ", "vanilla")


def test_a_100_kb_question_is_refused_before_any_work(mini_workbench):
    with pytest.raises(QuestionError, match="at most 2000"):
        mini_workbench.start("why " * 25_000, "vanilla")


def test_steps_carry_increasing_elapsed_times(mini_workbench):
    trace = mini_workbench.ask("Where was Alan Turing born?", "vanilla")
    times = [s.elapsed_ms for s in trace.steps]
    assert times == sorted(times) and trace.totals.latency_ms == times[-1]


def test_stopping_half_way_keeps_the_steps_so_far(mini_workbench):
    run = mini_workbench.start("Where was Alan Turing born?", "vanilla")
    steps = []
    for step in run:
        steps.append(step)
        if isinstance(step, RetrievalStep):
            run.stop()
    assert [s.kind for s in steps] == ["retrieval", "decision"]
    assert isinstance(steps[-1], DecisionStep) and steps[-1].action == "stopped"
    assert run.trace.steps == tuple(steps) and run.trace.answer is None


def test_a_stop_after_an_interrupted_iteration_continues_the_run_instead_of_restarting_it(mini_workbench):
    """Streamlit's Stop interrupts the page mid-stream; the next script run iterates the same Run."""
    import time

    run = mini_workbench.start("Where was Alan Turing born?", "ras")
    first = next(iter(run))  # the page was interrupted right after drawing the first step
    time.sleep(0.05)
    run.stop()
    rest = list(run)
    assert rest, "the stop must be recorded"
    steps = run.trace.steps
    assert steps[0] is first and steps[1:] == tuple(rest)
    assert [s.title for s in steps].count(first.title) == 1 and len(steps) == 2  # not restarted
    stop = steps[-1]
    assert isinstance(stop, DecisionStep) and stop.action == "stopped"
    assert stop.iteration == first.iteration  # filed where the run was, not under set-up by default
    assert run.trace.totals.latency_ms >= 50  # the true latency, not 0 ms
    assert list(run) == []  # iterating a finished run yields nothing and changes nothing
    assert run.trace.steps == steps


@dataclass(frozen=True)
class _Params:
    pass


class _Exploding(base.Method):
    id = "test-exploding"
    label = paper = description = "explodes"
    Params = _Params

    def run(self, question: str, ctx: base.RunContext) -> Iterator[Step]:
        yield DecisionStep(iteration=1, action="continue")
        raise ZeroDivisionError("boom")


def test_a_failing_method_ends_with_an_error_step_and_a_refusal(mini_workbench, monkeypatch):
    monkeypatch.setitem(base.METHODS, _Exploding.id, _Exploding)
    trace = mini_workbench.ask("anything?", _Exploding.id)
    assert [s.kind for s in trace.steps] == ["decision", "error", "answer"]
    assert "ZeroDivisionError: boom" in trace.steps[1].message
    assert trace.answer.refused


def test_two_users_asking_at_once_both_get_their_own_answers(mini_workbench):
    questions = {"a": "When was Grace Hopper born?", "b": "When was Charles Babbage born?"}
    answers: dict[str, str] = {}

    def ask(key: str) -> None:
        answers[key] = mini_workbench.ask(questions[key], "vanilla", {"min_confidence": 0.0}).answer.text

    threads = [threading.Thread(target=ask, args=(k,)) for k in questions]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert answers == {"a": "1906", "b": "1791"}


def test_script_inside_a_document_comes_back_as_plain_text(mini_workbench):
    trace = mini_workbench.ask("Which document mentions alert script?", "vanilla", {"retriever": "bm25"})
    texts = [h.text for h in trace.steps[0].hits]
    assert any("<script>alert('x')</script>" in t for t in texts)


def test_min_confidence_in_the_params_still_sets_the_runs_answer_policy(mini_workbench):
    """`-p min_confidence=0`, a trace saved before issue 24 or an older form: the policy, not a method param."""
    trace = mini_workbench.ask("When was Grace Hopper born?", "vanilla", {"k": 3, "min_confidence": "1"})
    assert (trace.params, trace.policy) == ({"k": 3, "retriever": "hybrid"}, AnswerPolicy(1.0))
    assert trace.answer.refused and trace.answer.min_confidence == 1.0
    assert mini_workbench.ask("When was Grace Hopper born?", "vanilla").policy == AnswerPolicy()
    with pytest.raises(RagscopeError, match="given twice"):
        mini_workbench.start("Q?", "vanilla", {"min_confidence": 0.2}, policy=AnswerPolicy(0.7))
    with pytest.raises(RagscopeError, match=r"min_confidence=2\.0 outside"):
        mini_workbench.start("Q?", "vanilla", {"min_confidence": 2})
