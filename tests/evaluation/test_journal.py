"""The evaluation journal: written as it goes, read back whole, a torn last line costs one question."""

from __future__ import annotations

import pytest

from engine.errors import RagscopeError
from engine.evaluation.journal import Journal, JournalPlan, new_journal_id
from engine.evaluation.runner import score_trace


@pytest.fixture()
def finished(mini_workbench, mini_pack):
    questions = mini_pack.questions[:3]
    return [(score_trace(t, q), t) for q in questions for t in [mini_workbench.ask(q.question, "vanilla",
                                                                                   question_id=q.id)]]


def plan_of(mini_pack) -> JournalPlan:
    return JournalPlan("packs/mini", "openai", (("api_key", "sk-secret"), ("base_url", "http://127.0.0.1:9/v1")),
                       tuple((q.id, "vanilla") for q in mini_pack.questions[:3]))


def test_a_journal_reads_back_its_plan_results_and_traces(tmp_path, mini_pack, finished):
    journal = Journal(tmp_path, new_journal_id())
    journal.write_plan(plan_of(mini_pack))
    for result, trace in finished:
        journal.append(result, trace)
    plan, results, traces = journal.read()
    assert plan.steps == plan_of(mini_pack).steps and plan.backend == "openai" and not plan.stopped
    assert results == tuple(r for r, _ in finished) and traces == tuple(t for _, t in finished)


def test_an_api_key_is_never_written(tmp_path, mini_pack):
    journal = Journal(tmp_path, new_journal_id())
    journal.write_plan(plan_of(mini_pack))
    assert "sk-secret" not in (journal.folder / "plan.json").read_text()
    assert journal.read()[0].options == (("base_url", "http://127.0.0.1:9/v1"),)


def test_a_line_cut_short_by_a_kill_costs_only_that_question(tmp_path, mini_pack, finished):
    journal = Journal(tmp_path, new_journal_id())
    journal.write_plan(plan_of(mini_pack))
    for result, trace in finished[:2]:
        journal.append(result, trace)
    with open(journal.folder / "results.jsonl", "a", encoding="utf-8") as out:
        out.write('{"result": {"method": "vanil')  # the process died mid-write
    _, results, _ = journal.read()
    assert len(results) == 2


def test_ids_that_are_not_journal_ids_are_refused(tmp_path):
    for bad in ("../../etc", "", "A" * 32, "0" * 31):
        with pytest.raises(RagscopeError, match="not an evaluation id"):
            Journal(tmp_path, bad)
    with pytest.raises(RagscopeError, match="no saved evaluation"):
        Journal(tmp_path, "0" * 32).read()
