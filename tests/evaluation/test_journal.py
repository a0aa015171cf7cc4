"""The evaluation journal: written as it goes, read back whole, a torn last line costs one question."""

from __future__ import annotations

import json
import os
from dataclasses import replace

import pytest

from engine.errors import RagscopeError
from engine.evaluation.journal import Journal, JournalPlan, list_journals, new_journal_id
from engine.evaluation.runner import score_trace
from engine.knowledge.writer import is_staging, sweep_staging


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


def test_a_plan_reads_back_with_its_pack_fingerprint_and_params(tmp_path, mini_pack):
    plan = replace(plan_of(mini_pack), fingerprint=mini_pack.fingerprint,
                   params=(("vanilla", "k", 8), ("rulerag", "theta", 0.5), ("tog2", "initial_check", False)))
    journal = Journal(tmp_path, new_journal_id())
    journal.write_plan(plan)
    saved = journal.read()[0]
    assert (saved.fingerprint, saved.params) == (plan.fingerprint, plan.params)
    assert saved.differences(plan) == []


@pytest.mark.parametrize("change, named", [
    ({"fingerprint": "0123456789abcdef"}, "the pack's documents differ"),
    ({"steps": (("mq1", "vanilla"), ("mq3", "vanilla"))}, "pairs differ (3 planned → 2; first difference at pair 2)"),
    ({"params": (("vanilla", "k", 3),)}, "the parameters differ (none → vanilla: k=3)"),
    ({"backend": "hf"}, "the model differs (openai '' → hf '')"),
    ({"options": (("model", "other"),)}, "the model differs (openai '' → openai 'other')"),
])
def test_a_plan_names_what_keeps_another_from_continuing_it(mini_pack, change, named):
    plan = replace(plan_of(mini_pack), fingerprint=mini_pack.fingerprint)
    assert [named in problem for problem in plan.differences(replace(plan, **change))] == [True]


def test_a_plan_saved_without_a_fingerprint_never_continues_on_a_known_pack(mini_pack):
    plan = plan_of(mini_pack)  # as the app wrote them before issue 24
    assert plan.differences(replace(plan, fingerprint=mini_pack.fingerprint)) == [
        "it was saved without its pack's fingerprint, so a changed pack cannot be ruled out"]


def test_a_plan_asked_in_another_order_may_continue_it(mini_pack):
    plan = plan_of(mini_pack)  # e.g. a CLI journal from before issue 24, written method by method
    assert plan.differences(replace(plan, steps=tuple(reversed(plan.steps)))) == []


def test_a_new_base_url_or_key_may_continue_a_plan(mini_pack):
    plan = plan_of(mini_pack)
    assert plan.differences(replace(plan, options=(("base_url", "http://10.0.0.2:8000/v1"),))) == []


def test_the_cli_journal_sits_beside_its_report_where_no_staging_sweep_takes_it(tmp_path, mini_pack, finished):
    journal = Journal.beside(tmp_path / "report")
    journal.write_plan(plan_of(mini_pack))
    journal.append(*finished[0])
    assert journal.folder == tmp_path / ".report.journal" and not is_staging(journal.folder)
    sweep_staging(tmp_path, "report")
    sweep_staging(tmp_path)
    assert len(journal.read()[1]) == 1


def test_a_line_written_before_results_had_a_confidence_takes_it_from_its_trace(tmp_path, mini_pack, finished):
    journal = Journal(tmp_path, new_journal_id())
    journal.write_plan(plan_of(mini_pack))
    result, trace = finished[0]
    journal.append(result, trace)
    path = journal.folder / "results.jsonl"
    record = json.loads(path.read_text())
    del record["result"]["confidence"]
    path.write_text(json.dumps(record) + "\n")
    _, results, _ = journal.read()
    assert trace.answer.confidence > 0 and results == (result,)


def test_the_saved_evaluations_are_listed_last_written_first_with_how_far_each_got(tmp_path, mini_pack, finished):
    older, newer = Journal(tmp_path, new_journal_id()), Journal(tmp_path, new_journal_id())
    older.write_plan(replace(plan_of(mini_pack), stopped=True))
    older.append(*finished[0])
    newer.write_plan(replace(plan_of(mini_pack), steps=plan_of(mini_pack).steps + (("mq1", "tog2"),)))
    for result, trace in finished:
        newer.append(result, trace)
    os.utime(older.folder / "results.jsonl", (1_000_000, 1_000_000))
    os.utime(older.folder / "plan.json", (1_000_000, 1_000_000))
    (tmp_path / "not-a-journal").mkdir()
    broken = Journal(tmp_path, new_journal_id())
    broken.folder.mkdir()
    (broken.folder / "plan.json").write_text("{")
    listed = list_journals(tmp_path)
    assert [s.id for s in listed] == [newer.id, older.id]
    assert (listed[0].pack, listed[0].methods, listed[0].done, listed[0].total) == ("mini", ("vanilla", "tog2"), 3, 4)
    assert (listed[0].state, listed[1].state, listed[1].done, listed[1].written) == ("interrupted", "stopped", 1,
                                                                                     1_000_000)
    newer.append(*finished[0])  # a question more: the count follows the file, not a stale memory of it
    assert list_journals(tmp_path)[0].state == "finished"


def test_no_evaluations_folder_lists_nothing(tmp_path):
    assert list_journals(tmp_path / "evaluations") == []
