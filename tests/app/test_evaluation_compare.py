"""Evaluations.compare: two of the app's saved evaluations, the one started first as before; read again once
either is written to; a missing one is a clear error. resume_saved goes on with a stopped one."""

from __future__ import annotations

import shutil
import threading
from dataclasses import replace

import pytest

from engine.app.evaluations import EvaluationJob, Evaluations, plan_evaluation
from engine.errors import RagscopeError
from engine.evaluation.journal import Journal, new_journal_id


@pytest.fixture()
def service(tmp_path) -> Evaluations:
    return Evaluations(tmp_path / "evaluations")


def _evaluated(service, workbench, pack, params=None) -> EvaluationJob:
    plan = plan_evaluation(workbench, ["vanilla"], pack.questions[:5], params)
    job = EvaluationJob.begin(plan, Journal(service.root, new_journal_id()))
    job.run(workbench)
    return job


def _summary(service: Evaluations, job: EvaluationJob):
    return next(p for p in service.past() if p.id == job.id)


def test_the_evaluation_started_first_is_before_whatever_order_they_are_given(service, mini_workbench, mini_pack):
    first = _evaluated(service, mini_workbench, mini_pack)
    second = _evaluated(service, mini_workbench, mini_pack, {"vanilla": {"k": 1}})
    a, b = _summary(service, first), _summary(service, second)
    for pair in ((a, b), (b, a)):
        saved = service.compare(*pair)
        assert (saved.before.id, saved.after.id) == (first.id, second.id)
    assert saved.comparison.differences[-1] == "vanilla k: 5 → 1"
    assert not saved.comparison.warnings  # same pack, same fingerprint
    for flip in saved.comparison.flips:  # both runs of each flipped question are there to open
        assert saved.trace(flip.trace_before) in first.traces and saved.trace(flip.trace_after) in second.traces
    swapped = service.compare(a, b, swap=True)
    assert (swapped.before.id, swapped.after.id) == (second.id, first.id)
    assert [r.delta.estimate for r in swapped.comparison.rows] == [-r.delta.estimate for r in saved.comparison.rows]


def test_a_comparison_is_remembered_until_a_journal_is_written_to(service, mini_workbench, mini_pack):
    first = _evaluated(service, mini_workbench, mini_pack)
    second = _evaluated(service, mini_workbench, mini_pack, {"vanilla": {"k": 1}})
    saved = service.compare(_summary(service, first), _summary(service, second))
    assert service.compare(_summary(service, first), _summary(service, second)) is saved
    extra = Journal(service.root, second.id)
    extra.append(replace(first.results[0], question_id="extra"), first.traces[0])
    again = service.compare(_summary(service, first), _summary(service, second))
    assert again is not saved and [(u.only_before, u.only_after) for u in again.comparison.unpaired] == [(0, 1)]


def test_a_journal_gone_since_it_was_listed_is_a_clear_error(service, mini_workbench, mini_pack):
    first = _evaluated(service, mini_workbench, mini_pack)
    second = _evaluated(service, mini_workbench, mini_pack)
    a, b = _summary(service, first), _summary(service, second)
    shutil.rmtree(service.root / second.id)
    with pytest.raises(RagscopeError, match=f"no saved evaluation with id '{second.id}'"):
        service.compare(a, b)


def test_resume_saved_goes_on_with_a_stopped_evaluation_and_leaves_a_finished_one(service, mini_workbench,
                                                                                   mini_pack):
    done = _evaluated(service, mini_workbench, mini_pack)
    stopped = Journal(service.root, new_journal_id())
    stopped.write_plan(replace(done.plan, stopped=True))
    stopped.append(done.results[0], done.traces[0])
    job = service.resume_saved(stopped.id, lambda plan: mini_workbench)
    assert job.wait(60) and job.done == job.total and not job.stopped and not service.running(stopped.id)
    finished = service.resume_saved(done.id, lambda plan: pytest.fail("a finished evaluation is not asked again"))
    assert finished.finished
    with pytest.raises(RagscopeError):
        service.resume_saved("0" * 32, lambda plan: mini_workbench)


def test_an_evaluation_being_asked_is_running_until_it_ends(service, mini_workbench, mini_pack, monkeypatch):
    done = _evaluated(service, mini_workbench, mini_pack)
    stopped = Journal(service.root, new_journal_id())
    stopped.write_plan(replace(done.plan, stopped=True))
    release, ask = threading.Event(), mini_workbench.ask
    monkeypatch.setattr(mini_workbench, "ask", lambda *args, **kwargs: release.wait(30) and ask(*args, **kwargs))
    job = service.resume_saved(stopped.id, lambda plan: mini_workbench)
    assert service.running(stopped.id) and not service.running(done.id)  # the list says "running", not "stopped"
    release.set()
    assert job.wait(60) and not service.running(stopped.id) and job.finished
