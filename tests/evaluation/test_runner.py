"""Evaluating in parallel and from a journal: plan order kept, done pairs skipped, nothing lost on Ctrl-C."""

from __future__ import annotations

import threading
import time
from dataclasses import replace

import pytest

from engine.evaluation.runner import QuestionResult, aggregate, evaluate

METHODS = ("vanilla", "rulerag")


def timeless(results: list[QuestionResult]) -> list[QuestionResult]:
    """A result without what differs between two runs of the same question: its trace id and latency."""
    return [replace(r, latency_ms=0.0, trace_id="") for r in results]


@pytest.fixture()
def asked(mini_workbench, monkeypatch) -> list[tuple[str, str]]:
    """The (method, question id) pairs the workbench is asked, each taking a moment as a served model does."""
    pairs: list[tuple[str, str]] = []
    lock = threading.Lock()
    ask = mini_workbench.ask

    def slow_ask(question, method, params=None, question_id=""):
        with lock:
            pairs.append((method, question_id))
        time.sleep(0.02)
        return ask(question, method, params, question_id)

    monkeypatch.setattr(mini_workbench, "ask", slow_ask)
    return pairs


def test_four_workers_return_what_one_returns_in_the_same_order(mini_workbench, mini_pack):
    serial, serial_traces = evaluate(mini_workbench, METHODS, mini_pack.questions, workers=1)
    parallel, parallel_traces = evaluate(mini_workbench, METHODS, mini_pack.questions, workers=4)
    assert [(r.method, r.question_id) for r in serial] == [(m, q.id) for m in METHODS for q in mini_pack.questions]
    assert timeless(parallel) == timeless(serial)
    assert [t.id for t in parallel_traces] == [r.trace_id for r in parallel]


def test_questions_are_asked_one_by_one_with_every_method_and_reported_method_by_method(mini_workbench, mini_pack,
                                                                                       asked):
    results, _ = evaluate(mini_workbench, METHODS, mini_pack.questions[:3])
    assert asked == [(m, q.id) for q in mini_pack.questions[:3] for m in METHODS]
    assert [(r.method, r.question_id) for r in results] == [(m, q.id) for m in METHODS for q in mini_pack.questions[:3]]


def test_after_stop_no_question_is_started_and_only_the_finished_come_back(mini_workbench, mini_pack, asked):
    stop = threading.Event()

    def progress(result: QuestionResult, trace) -> None:
        stop.set()

    results, traces = evaluate(mini_workbench, METHODS, mini_pack.questions, progress=progress, stop=stop)
    # The one worker may have begun the second question before the first one's progress set `stop`.
    assert asked[0] == ("vanilla", mini_pack.questions[0].id) and len(asked) <= 2
    assert sorted((r.method, r.question_id) for r in results) == sorted(asked)  # every one asked comes back
    assert [t.id for t in traces] == [r.trace_id for r in results]


def test_params_reach_every_question_of_their_method(mini_workbench, mini_pack):
    _, traces = evaluate(mini_workbench, METHODS, mini_pack.questions[:2], {"vanilla": {"k": 3}}, workers=2)
    assert [t.params["k"] for t in traces] == [3, 3, 10, 10]


def test_questions_already_done_are_not_asked_again(mini_workbench, mini_pack, asked):
    full, full_traces = evaluate(mini_workbench, METHODS, mini_pack.questions)
    asked.clear()
    done = list(zip(full, full_traces))[:3] + list(zip(full, full_traces))[8:9]
    resumed, resumed_traces = evaluate(mini_workbench, METHODS, mini_pack.questions, workers=3, done=done)
    assert sorted(asked) == sorted((r.method, r.question_id) for r in full[3:8] + full[9:])
    assert timeless(resumed) == timeless(full)
    assert resumed_traces[:3] == full_traces[:3] and resumed_traces[8] == full_traces[8]


def test_ctrl_c_finishes_the_running_questions_and_hands_each_one_over(mini_workbench, mini_pack, asked):
    handed: list[tuple[str, str]] = []

    def progress(result: QuestionResult, trace) -> None:
        handed.append((result.method, result.question_id))
        if len(handed) == 3:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        evaluate(mini_workbench, METHODS, mini_pack.questions, progress=progress, workers=2)
    assert sorted(handed) == sorted(asked)  # every question asked was handed over: none is lost
    assert 3 <= len(handed) < len(METHODS) * len(mini_pack.questions)  # the ones not started were dropped


def _result(refused: bool, acc: float, outcome: str) -> QuestionResult:
    return QuestionResult(method="vanilla", question_id="q", type="factoid", question="q?", gold="g", answer="a",
                          refused=refused, outcome=outcome, em=acc, f1=acc, acc=acc, recall_5=None,
                          recall_10=None, recall_all=None, evidence_len=0, latency_ms=1.0, llm_calls=0, tokens=0,
                          trace_id="t")


def test_coverage_and_accuracy_over_answered_tell_refusing_from_answering_wrongly():
    cautious = [_result(True, 0.0, "missing")] * 3 + [_result(False, 1.0, "correct")]
    reckless = [_result(False, 0.0, "hallucinated")] * 3 + [_result(False, 1.0, "correct")]
    one, other = aggregate(cautious), aggregate(reckless)
    assert one["acc"] == other["acc"] == 0.25  # over all questions a refusal counts as wrong: the same figure
    assert (one["coverage"], one["acc_answered"], one["crag_score"]) == (0.25, 1.0, 0.25)
    assert (other["coverage"], other["acc_answered"], other["crag_score"]) == (1.0, 0.25, -0.5)
    assert aggregate([_result(True, 0.0, "missing")])["acc_answered"] is None  # nothing answered: no accuracy
