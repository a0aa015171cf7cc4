"""The one evaluation loop the CLI and the Evaluate page share: strict resume, Stop, workers, same metrics."""

from __future__ import annotations

import json
import threading
import time
from dataclasses import replace

import pytest

from engine.app.evaluations import (
    EvaluationJob,
    Evaluations,
    asked_filters,
    method_params,
    pick_questions,
    plan_evaluation,
    question_types,
)
from engine.cli import main
from engine.errors import RagscopeError
from engine.evaluation.journal import Journal, new_journal_id
from engine.evaluation.runner import QuestionResult
from paths import MINI_PACK

METHODS = ("vanilla", "rulerag")
TIMING_FIELDS = {"trace_id", "latency_ms", "latency_ms_median", "latency_ms_p90"}


def timeless(value):
    """A report or result without what differs between two runs of the same questions: ids and timings."""
    if isinstance(value, QuestionResult):
        return replace(value, latency_ms=0.0, trace_id="")
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k not in TIMING_FIELDS}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


@pytest.fixture()
def plan(mini_workbench, mini_pack):
    return plan_evaluation(mini_workbench, METHODS, mini_pack.questions[:3])


@pytest.fixture()
def slow(mini_workbench, monkeypatch) -> threading.Event:
    """Each question takes a moment, as on a served model; the event is set once the first one is asked."""
    asked = threading.Event()
    ask = mini_workbench.ask

    def slow_ask(question, method, params=None, question_id=""):
        asked.set()
        time.sleep(0.05)
        return ask(question, method, params, question_id)

    monkeypatch.setattr(mini_workbench, "ask", slow_ask)
    return asked


def test_the_plan_asks_question_by_question_and_holds_the_pack_fingerprint_and_params(mini_workbench, mini_pack):
    params, notes = method_params(METHODS, {"theta": "0.5"})
    plan = plan_evaluation(mini_workbench, METHODS, mini_pack.questions[:2], params)
    first, second = mini_pack.questions[0].id, mini_pack.questions[1].id
    assert plan.steps == ((first, "vanilla"), (first, "rulerag"), (second, "vanilla"), (second, "rulerag"))
    assert plan.fingerprint == mini_pack.fingerprint and plan.params == (("rulerag", "theta", 0.5),)
    assert notes == ["theta applies to rulerag only; vanilla has no such parameter"]


def test_the_answer_policy_is_a_parameter_of_every_method_and_reaches_each_run(mini_workbench, mini_pack):
    params, notes = method_params(METHODS, {"min_confidence": "0"})
    assert params == {"vanilla": {"min_confidence": 0.0}, "rulerag": {"min_confidence": 0.0}} and notes == []
    _, traces = EvaluationJob(plan_evaluation(mini_workbench, METHODS, mini_pack.questions[:1], params)).run(
        mini_workbench)
    assert [t.policy.min_confidence for t in traces] == [0.0, 0.0]
    with pytest.raises(RagscopeError, match=r"vanilla: parameter min_confidence=2.0 outside \[0.0, 1.0\]"):
        method_params(METHODS, {"min_confidence": "2"})


def test_a_saved_evaluation_is_refused_when_the_pack_or_the_params_changed(tmp_path, mini_workbench, mini_pack, plan):
    journal = Journal(tmp_path, new_journal_id())
    EvaluationJob.begin(replace(plan, fingerprint="0123456789abcdef"), journal)
    with pytest.raises(RagscopeError, match=r"cannot resume the evaluation in .*: the pack's documents differ "
                                            r"\(fingerprint 0123456789abcdef → "):
        EvaluationJob.read(journal).check(plan, "hint")
    changed = plan_evaluation(mini_workbench, METHODS, mini_pack.questions[:3], {"vanilla": {"k": 3}})
    with pytest.raises(RagscopeError, match=r"the parameters differ \(none → vanilla: k=3\)\. hint"):
        EvaluationJob(plan).check(changed, "hint")


def test_reopening_an_interrupted_evaluation_on_a_changed_pack_asks_nothing(tmp_path, mini_workbench, plan, slow):
    journal = Journal(tmp_path, new_journal_id())
    EvaluationJob.begin(replace(plan, fingerprint="0123456789abcdef"), journal)
    job = Evaluations(tmp_path).open(journal.id, lambda saved: mini_workbench)
    assert job.wait(5) and not slow.is_set()
    assert job.stopped and job.done == 0 and "the pack's documents differ" in job.error


def test_stop_leaves_a_journal_that_goes_on_to_what_an_unstopped_run_gives(tmp_path, mini_workbench, plan, slow):
    whole, _ = EvaluationJob(plan).run(mini_workbench)
    slow.clear()
    evaluations = Evaluations(tmp_path)
    job = evaluations.begin(plan, mini_workbench)
    assert slow.wait(30)
    job.stop()
    assert job.wait(30) and job.stopped and 0 < job.done < job.total
    saved = EvaluationJob.read(job.journal)
    assert saved.stopped and saved.results == job.results  # on disk as in memory, marked stopped
    resumed = Evaluations(tmp_path).resume(saved, lambda plan: mini_workbench)
    assert resumed.wait(60) and not resumed.error and not resumed.stopped and resumed.done == resumed.total
    again, _ = EvaluationJob.read(job.journal).run(mini_workbench)  # all done: nothing is asked again
    assert timeless(again) == timeless(whole)


def test_three_workers_give_what_one_gives(mini_workbench, plan):
    one, one_traces = EvaluationJob(plan).run(mini_workbench, workers=1)
    three, three_traces = EvaluationJob(plan).run(mini_workbench, workers=3)
    assert timeless(three) == timeless(one)
    assert [replace(t.answer, elapsed_ms=0.0) for t in three_traces] == [replace(t.answer, elapsed_ms=0.0)
                                                                          for t in one_traces]


def test_the_page_and_the_cli_report_the_same_metrics_for_the_same_plan(ragscope_home, tmp_path, mini_pack):
    from engine.runner import Workbench
    from engine.settings import Settings

    out = tmp_path / "cli"
    assert main(["eval", "--pack", str(MINI_PACK), "--method", ",".join(METHODS), "--out", str(out)]) == 0
    bench = Workbench(mini_pack, Settings())
    page = Evaluations(tmp_path / "evaluations").begin(plan_evaluation(bench, METHODS, mini_pack.questions), bench)
    assert page.wait(120) and page.finished and not page.error
    cli_metrics = json.loads((out / "metrics.json").read_text(encoding="utf-8"))
    assert timeless(json.loads(json.dumps(page.report()))) == timeless(cli_metrics)
    # The page's run card says what the CLI's says, but for how it was started and when (and the CLI's option
    # defaults, --device auto and the like, which this test's bare workbench does not have).
    when = {"command", "started", "finished", "libraries", "pack_path", "backend_options"}
    page_card, cli_card = json.loads(page.run_card(bench)), json.loads((out / "run_card.json").read_text())
    assert {k: v for k, v in page_card.items() if k not in when} == {k: v for k, v in cli_card.items() if k not in when}
    assert page_card["started"] <= page_card["finished"] and page_card["command"] == []


def test_the_form_of_a_running_evaluation_shows_the_choices_that_planned_it(mini_workbench, mini_pack):
    types = question_types(mini_pack)[:2]  # in the order the page offers them
    chosen = pick_questions(mini_pack.questions, types, 3)
    job = EvaluationJob.begin(plan_evaluation(mini_workbench, ("rulerag", "vanilla"), chosen))
    shown = asked_filters(job, mini_pack)
    assert shown.methods == ("rulerag", "vanilla") and shown.limit == len(chosen)
    assert pick_questions(mini_pack.questions, shown.types, shown.limit) == chosen


# Another app server on the same home asking evaluation argv[2] under argv[1]: it holds the evaluation's lock as
# EvaluationJob.start does, till stdin closes.
OTHER_SERVER = """
import sys
from pathlib import Path
from engine.locking import hold
held = hold(Path(sys.argv[1]) / f".{sys.argv[2]}.lock", RuntimeError)
print("asking", flush=True)
sys.stdin.read()
"""


def test_an_evaluation_another_process_is_asking_is_not_asked_here_too(tmp_path, mini_workbench, plan, slow):
    """Issue 26: the app goes on with an interrupted evaluation by itself when its link is opened; with two app
    servers on one home, the second would append to the journal the first is writing. It says who asks it."""
    import os
    import subprocess
    import sys

    from paths import ROOT

    journal = Journal(tmp_path, new_journal_id())
    EvaluationJob.begin(plan, journal)  # on disk, neither stopped nor finished: what an interrupted one looks like
    other = subprocess.Popen([sys.executable, "-c", OTHER_SERVER, str(tmp_path), journal.id], cwd=ROOT, text=True,
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert other.stdout.readline() == "asking\n"
        service = Evaluations(tmp_path)
        job = service.open(journal.id, lambda saved: mini_workbench)
        assert not job.running and not slow.is_set() and job.done == 0
        assert job.error == (f"evaluation {journal.id} is being asked by another ragscope process (pid {other.pid}) on "
                             "this home; its answers appear here once it ends: reload then")
        assert not EvaluationJob.read(journal).stopped  # nothing written: the other process's journal as it was
    finally:
        other.stdin.close()
        other.wait(timeout=30)
    job = service.open(journal.id, lambda saved: mini_workbench)  # the other one ended: a reload goes on with it
    assert job.wait(60) and job.finished and job.error == ""
    assert not (tmp_path / f".{journal.id}.lock").exists()  # let go once the run ended
