"""The Evaluate page in-process (AppTest): methods × the mini pack's questions, metrics, rows and downloads."""

from __future__ import annotations

import json
from dataclasses import replace

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import ui_state
from engine.app import evaluations
from engine.app.evaluations import EvaluationJob, Evaluations, shared
from engine.evaluation.journal import Journal, new_journal_id
from engine.methods.base import METHODS, method_ids
from engine.settings import Settings

MINI_QUESTIONS = 6


def _linked(at: AppTest) -> str:
    """The evaluation id in the page's URL (`?eval=`)."""
    value = at.query_params["eval"]
    return value[0] if isinstance(value, list) else value


def _job(at: AppTest) -> EvaluationJob:
    """The evaluation the page shows: the one its link names, open in this process (the page's service)."""
    return shared(Settings().evaluations).open(_linked(at), lambda plan: pytest.fail("nothing to resume"))


def _saved_copy(job: EvaluationJob, done: int, *, stopped: bool) -> str:
    """A new evaluation on disk with `job`'s plan and its first `done` answers, stopped or interrupted."""
    journal = Journal(Settings().evaluations, new_journal_id())
    journal.write_plan(replace(job.plan, stopped=stopped))
    for result, trace in zip(job.results[:done], job.traces[:done]):
        journal.append(result, trace)
    return journal.id


def _opened(at: AppTest, journal_id: str) -> AppTest:
    """The page following a link to `journal_id`, as after a reload."""
    at.query_params["eval"] = journal_id
    return at.run()


@pytest.fixture()
def evaluate(open_app) -> AppTest:
    return open_app("views/evaluate.py", timeout=300)


@pytest.fixture()
def evaluated(evaluate) -> AppTest:
    at = evaluate.button(key="evaluate.run").click().run()
    assert not at.exception
    return at


def _table(at: AppTest, column: str):
    """The dataframe that has `column` (a table without row selection carries no key in AppTest)."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def test_the_page_offers_every_method_type_and_question(evaluate):
    assert not evaluate.exception
    assert evaluate.multiselect(key="evaluate.methods").value == [  # the baseline first
        "vanilla", *(m for m in method_ids() if m != "vanilla")]
    assert set(evaluate.multiselect(key="evaluate.types").value) == {
        "factoid", "comparison", "multi_hop", "numeric", "false_premise"}
    assert evaluate.number_input(key="evaluate.limit").value == MINI_QUESTIONS
    assert any("press **Run**" in i.value for i in evaluate.info)


def test_running_shows_the_metrics_table_with_all_six_questions(evaluated):
    metrics = _table(evaluated, "scope")
    overall = metrics[metrics["scope"] == "overall"]
    assert sorted(overall["method"]) == sorted(method_ids())
    assert set(overall["n"]) == {MINI_QUESTIONS}
    assert {"em", "f1", "acc", "recall@5", "recall@all", "crag_score", "latency_ms_median"} <= set(metrics.columns)
    factoid = metrics[(metrics["scope"] == "factoid") & (metrics["method"] == "vanilla")]
    assert list(factoid["n"]) == [2]
    assert len(evaluated.get("plotly_chart")) == 7  # answered, acc ×2, CRAG, F1, recall@5, the reliability diagram


def _reliability_traces(at: AppTest) -> dict[str, dict]:
    """The reliability diagram's traces by legend name (the dashed diagonal left out)."""
    figures = [json.loads(c.proto.spec) for c in at.get("plotly_chart")]
    diagram = next(f for f in figures if any(t["name"] == "perfectly calibrated" for t in f["data"]))
    return {t["name"]: t for t in diagram["data"] if t["name"] != "perfectly calibrated"}


def test_running_shows_a_reliability_diagram_per_method_and_an_ece_column(evaluated):
    job = _job(evaluated)
    overall = _table(evaluated, "scope").set_index("method")
    overall = overall[overall["scope"] == "overall"]
    traces = _reliability_traces(evaluated)
    assert len(traces) == len(method_ids())
    for method in method_ids():
        name = next(n for n in traces if n.startswith(f"{METHODS[method].label} · ECE "))
        ece = overall.loc[method, "ece"]
        assert f"ECE {'–' if pd.isna(ece) else f'{ece:.2f}'} (" in name, name
        answered = [r for r in job.results if r.method == method and not r.refused]
        assert sum(c[2] for c in traces[name]["customdata"]) == len(answered)  # bin counts, shown on hover
    assert any("how far confidence is from accuracy" in c.value for c in evaluated.caption)


def test_running_shows_one_row_per_method_and_question_and_offers_downloads(evaluated):
    rows = _table(evaluated, "question_id")
    assert len(rows) == MINI_QUESTIONS * len(method_ids())
    assert set(rows["question_id"]) == {f"mq{i}" for i in range(1, 7)}
    keys = {b.key for b in evaluated.download_button}
    assert keys == {"evaluate.download_metrics", "evaluate.download_card", "evaluate.download_csv"}
    assert evaluated.button(key="evaluate.stop").disabled  # the run is over
    assert not evaluated.button(key="evaluate.run").disabled


def test_filters_choose_the_questions_that_are_asked(evaluate):
    evaluate.multiselect(key="evaluate.types").set_value(["factoid"])
    evaluate.number_input(key="evaluate.limit").set_value(1)
    at = evaluate.run()
    assert any(c.value.startswith("1 question × ") for c in at.caption)
    at = at.button(key="evaluate.run").click().run()
    rows = _table(at, "question_id")
    assert set(rows["question_id"]) == {"mq1"} and set(rows["type"]) == {"factoid"}


def test_a_time_limit_set_on_the_page_reaches_every_run_and_its_trace(evaluate, mini_pack):
    """Issue 26: the page's time-limit box is `eval --timeout`: every method's runs carry it in their policy, and a
    finished evaluation shows the box with the limit it was planned with."""
    assert evaluate.number_input(key="evaluate.timeout_s").value is None  # no limit unless asked
    evaluate.multiselect(key="evaluate.methods").set_value(["vanilla", "rulerag"])
    evaluate.number_input(key="evaluate.limit").set_value(1)
    evaluate.number_input(key="evaluate.timeout_s").set_value(45.0)
    at = evaluate.run().button(key="evaluate.run").click().run()
    assert not at.exception
    job = _job(at)
    assert sorted(job.plan.params) == [("rulerag", "timeout_s", 45.0), ("vanilla", "timeout_s", 45.0)]
    assert {trace.policy.timeout_s for trace in job.traces} == {45.0}
    assert evaluations.asked_filters(job, mini_pack).timeout_s == 45.0


def test_a_stopped_run_keeps_and_shows_the_results_so_far(evaluated):
    job = _job(evaluated)
    at = _opened(evaluated, _saved_copy(job, 3, stopped=True))
    assert not at.exception
    assert any(f"Stopped after 3 of {job.total}" in w.value for w in at.warning)
    assert len(_table(at, "question_id")) == 3
    assert _job(at).done == 3 and not _job(at).running  # not resumed


def test_an_interrupted_run_goes_on_from_where_it_was(evaluated):
    job = _job(evaluated)
    at = _opened(evaluated, _saved_copy(job, 2, stopped=False))
    assert not at.exception
    resumed = _job(at)
    assert resumed.id != job.id and resumed.done == job.total and resumed.traces[:2] == job.traces[:2]
    assert len(_table(at, "question_id")) == job.total


def test_selecting_a_row_opens_that_questions_trace_in_explore(evaluated):
    job = _job(evaluated)
    evaluated.session_state["evaluate.questions"] = {"selection": {"rows": [4], "columns": []}}
    at = evaluated.run()
    opened = at.session_state[ui_state._TRACE]
    assert opened.id == job.traces[4].id and opened.question_id == job.results[4].question_id


def test_a_reload_reopens_the_evaluation_from_its_link(evaluated, open_app):
    job = _job(evaluated)
    reloaded = open_app()  # a new browser session: nothing in session state
    reloaded.query_params["eval"] = job.id
    at = reloaded.switch_page("views/evaluate.py").run()
    assert not at.exception
    assert _job(at) is job  # the process's own, not a second copy that could be asked again
    assert len(_table(at, "question_id")) == job.total
    assert _reliability_traces(at) == _reliability_traces(evaluated)
    from_disk = Evaluations(Settings().evaluations).open(job.id, lambda plan: pytest.fail("nothing to resume"))
    assert from_disk.results == job.results and [t.id for t in from_disk.traces] == [t.id for t in job.traces]


def test_the_evaluation_stays_on_the_page_after_a_visit_to_another(evaluated):
    job = _job(evaluated)
    at = evaluated.switch_page("views/history.py").run()
    at.query_params.pop("eval", None)  # a page switch takes `?eval=` out of the URL
    at = at.switch_page("views/evaluate.py").run()
    assert not at.exception
    assert _linked(at) == job.id and len(_table(at, "question_id")) == job.total


def test_a_link_to_an_unknown_evaluation_says_so(open_app):
    at = open_app()
    at.query_params["eval"] = "0" * 32
    at = at.switch_page("views/evaluate.py").run()
    assert not at.exception
    assert any("Could not reopen evaluation" in e.value for e in at.error)
    assert "eval" not in at.query_params


def test_coverage_and_accuracy_over_answered_stand_beside_accuracy_over_all(evaluated):
    job = _job(evaluated)
    table = _table(evaluated, "accuracy over answered").set_index("method")
    assert list(table.columns) == ["questions", "answered", "accuracy over answered", "accuracy over all",
                                   "CRAG score"]
    for method in method_ids():
        mine = [r for r in job.results if r.method == method]
        answered = [r for r in mine if not r.refused]
        row = table.loc[METHODS[method].label]
        assert row["answered"] == pytest.approx(len(answered) / len(mine), abs=1e-4)
        assert row["accuracy over all"] == pytest.approx(sum(r.acc for r in mine) / len(mine), abs=1e-4)
        if answered:
            assert row["accuracy over answered"] == pytest.approx(sum(r.acc for r in answered) / len(answered),
                                                                  abs=1e-4)
        else:
            assert pd.isna(row["accuracy over answered"])


def test_the_bar_charts_lie_on_their_side_so_each_label_has_a_line_of_its_own(evaluated):
    figures = [json.loads(c.proto.spec) for c in evaluated.get("plotly_chart")]
    bars = [f for f in figures if f["data"][0]["type"] == "bar"]
    assert len(bars) == 6
    for figure in bars:
        assert {t["orientation"] for t in figure["data"]} == {"h"}
        assert figure["data"][0]["y"][0] == "overall" and figure["layout"]["yaxis"]["autorange"] == "reversed"
        assert figure["layout"]["height"] >= 18 * len(figure["data"]) * len(figure["data"][0]["y"])


def test_a_few_answers_come_with_a_warning_that_their_ece_is_rough(evaluated):
    assert any("Few answers to judge calibration by" in w.value for w in evaluated.warning)


def test_resume_goes_on_with_a_stopped_run_from_where_it_stopped(evaluated):
    job = _job(evaluated)
    at = _opened(evaluated, _saved_copy(job, 3, stopped=True))
    assert not at.button(key="evaluate.resume").disabled
    at = at.button(key="evaluate.resume").click().run()
    assert not at.exception
    resumed = _job(at)
    assert not resumed.stopped and resumed.done == job.total and resumed.traces[:3] == job.traces[:3]
    assert at.button(key="evaluate.resume").disabled  # nothing left to resume


def test_a_stopped_run_whose_pack_changed_is_not_resumed(evaluated):
    job = _job(evaluated)
    at = _opened(evaluated, _saved_copy(replace_plan(job, fingerprint="0123456789abcdef"), 3, stopped=True))
    at = at.button(key="evaluate.resume").click().run()
    assert not at.exception
    refused = _job(at)
    assert refused.stopped and refused.done == 3 and not refused.running
    errors = [e.value for e in at.error]  # markdown-escaped: the message's parentheses carry backslashes
    assert any("documents differ" in e and "fingerprint 0123456789abcdef" in e for e in errors), errors


def replace_plan(job: EvaluationJob, **changes) -> EvaluationJob:
    """`job`'s answers under a plan with `changes`, as a journal written on another pack would hold them."""
    return EvaluationJob(replace(job.plan, **changes), None, tuple(zip(job.results, job.traces)))


def test_past_evaluations_are_listed_and_one_opens_again_in_a_new_session(evaluated, open_app):
    job = _job(evaluated)
    at = open_app("views/evaluate.py")  # a new browser session with no ?eval= link
    assert "eval" not in at.query_params
    past = next(d for d in at.dataframe if d.key == "evaluate.past")
    listed = past.value
    assert list(listed.columns) == ["last written (UTC)", "pack", "methods", "done", "state"]
    newest = listed.iloc[0]  # the evaluation just run: last written first
    assert (newest["pack"], newest["done"], newest["state"]) == ("mini", f"{job.total} of {job.total}", "finished")
    assert newest["methods"] == ", ".join(METHODS[m].label for m in dict.fromkeys(m for _, m in job.plan.steps))
    at.session_state["evaluate.past"] = {"selection": {"rows": [0], "columns": []}}
    at = at.run().button(key="evaluate.open").click().run()
    assert not at.exception
    opened = _job(at)
    assert opened.id == job.id and opened.results == job.results
    assert len(_table(at, "question_id")) == job.total
    assert at.button(key="evaluate.open").disabled  # it is the one shown now
