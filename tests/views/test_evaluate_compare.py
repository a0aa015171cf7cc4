"""The Evaluate page's saved evaluations (AppTest): two selected are compared (deltas, flipped questions, both
runs opened in Explore), one stopped goes on from the list with Resume."""

from __future__ import annotations

from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

import ui_state
from engine.app.evaluations import EvaluationJob, plan_evaluation, shared
from engine.evaluation.journal import Journal, list_journals, new_journal_id
from engine.evaluation.regression import compare_evaluations
from engine.settings import Settings


def _evaluated(workbench, pack, params) -> EvaluationJob:
    """vanilla on the mini pack's six questions, journalled where the page lists its evaluations."""
    plan = plan_evaluation(workbench, ["vanilla"], pack.questions, params)
    job = EvaluationJob.begin(plan, Journal(Settings().evaluations, new_journal_id()))
    job.run(workbench)
    return job


@pytest.fixture()
def two(ragscope_home, mini_workbench, mini_pack) -> tuple[EvaluationJob, EvaluationJob]:
    """k=5 (the default) first, then k=1: fewer passages, so some answers change."""
    return _evaluated(mini_workbench, mini_pack, None), _evaluated(mini_workbench, mini_pack, {"vanilla": {"k": 1}})


def _rows(*journal_ids: str) -> list[int]:
    """The rows of the saved-evaluations list (last written first) that hold these evaluations."""
    listed = [p.id for p in list_journals(Settings().evaluations)]
    return [listed.index(journal_id) for journal_id in journal_ids]


def _select(at: AppTest, key: str, rows: list[int]) -> AppTest:
    at.session_state[key] = {"selection": {"rows": rows, "columns": []}}
    return at.run()


def _table(at: AppTest, column: str):
    return next(d.value for d in at.dataframe if column in d.value.columns)


def _compared(open_app, two) -> AppTest:
    at = _select(open_app("views/evaluate.py"), "evaluate.past", _rows(two[1].id, two[0].id))  # newest first
    assert not at.button(key="evaluate.compare").disabled and at.button(key="evaluate.open").disabled
    return at.button(key="evaluate.compare").click().run()


def test_two_selected_evaluations_are_compared_the_older_as_before(open_app, two):
    at = _compared(open_app, two)
    assert not at.exception
    expected = compare_evaluations(two[0].results, two[1].results)
    deltas = _table(at, "95 % interval")
    assert list(deltas.columns) == ["method", "scope", "metric", "before", "after", "delta", "95 % interval", "n",
                                    "changed"]
    moved = [r for r in expected.rows if r.changed]
    assert len(deltas) == len(moved) > 0
    em = next(r for r in moved if (r.scope, r.metric) == ("overall", "em"))
    row = deltas[(deltas["scope"] == "overall") & (deltas["metric"] == "em")].iloc[0]
    assert (row["before"], row["after"], row["delta"], row["n"]) == (em.before, em.after, em.delta.estimate, 6)
    assert row["95 % interval"] == f"[{em.delta.low:+.3f}, {em.delta.high:+.3f}]"
    assert any("paired bootstrap" in c.value for c in at.caption)
    assert any("vanilla k: 5 → 1" in m.value.replace("\\", "") for m in at.markdown)
    flips = _table(at, "outcome")
    assert list(flips["question_id"]) == [f.question_id for f in expected.flips] and len(flips) > 0


def test_the_swap_toggle_turns_the_comparison_round(open_app, two):
    at = _compared(open_app, two)
    before = _table(at, "95 % interval")
    at = at.toggle(key="evaluate.compare.swap").set_value(True).run()
    after = _table(at, "95 % interval")
    assert list(after["delta"]) == [-d for d in before["delta"]]
    assert list(after["before"]) == list(before["after"])


def test_a_selected_flipped_question_shows_both_answers_and_opens_either_run_in_explore(open_app, two):
    at = _compared(open_app, two)
    flip = compare_evaluations(two[0].results, two[1].results).flips[0]
    at = _select(at, "evaluate.comparison.flips", [0])
    assert not at.exception
    shown = " ".join(m.value for m in at.markdown)
    assert flip.answer_before.split()[0] in shown and flip.answer_after.split()[0].replace("'", "") in shown
    assert "What changed between the two runs" in shown  # the two runs' diff, under the answers
    assert any("kind" in d.value.columns and "what changed" in d.value.columns for d in at.dataframe)
    at = at.button(key="evaluate.compare.open_after").click().run()
    assert at.session_state[ui_state._TRACE].id == flip.trace_after
    assert at.session_state[ui_state._TRACE] == two[1].traces[[t.id for t in two[1].traces].index(flip.trace_after)]


def test_close_ends_the_comparison_and_one_or_three_selected_cannot_compare(open_app, two):
    at = _compared(open_app, two)
    at = at.button(key="evaluate.compare.close").click().run()
    assert not any("95 % interval" in d.value.columns for d in at.dataframe)
    at = _select(at, "evaluate.past", _rows(two[0].id))
    assert at.button(key="evaluate.compare").disabled and not at.button(key="evaluate.open").disabled
    assert at.button(key="evaluate.past_resume").disabled  # finished: nothing to resume


def test_a_stopped_evaluation_goes_on_from_the_list_with_resume(open_app, two):
    job = two[0]
    stopped = Journal(Settings().evaluations, new_journal_id())
    stopped.write_plan(replace(job.plan, stopped=True))
    for result, trace in zip(job.results[:2], job.traces[:2]):
        stopped.append(result, trace)
    at = _select(open_app("views/evaluate.py"), "evaluate.past", _rows(stopped.id))
    listed = _table(at, "state")
    assert listed.iloc[_rows(stopped.id)[0]]["state"] == "stopped"
    assert not at.button(key="evaluate.past_resume").disabled
    at = at.button(key="evaluate.past_resume").click().run()
    assert not at.exception
    resumed = shared(Settings().evaluations).open(stopped.id, lambda plan: pytest.fail("nothing to resume"))
    assert resumed.wait(60) and resumed.done == job.total and not resumed.stopped
    assert resumed.traces[:2] == job.traces[:2]
    assert at.query_params["eval"] in (stopped.id, [stopped.id])  # shown below the list
