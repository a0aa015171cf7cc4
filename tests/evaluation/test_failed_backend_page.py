"""The Evaluate page counts the runs whose answer rests on a failed backend per method and warns about them
(issue 26 item 4), also for an evaluation read back from its journal."""

from __future__ import annotations

from engine.app.evaluations import plan_evaluation
from engine.evaluation.journal import Journal, new_journal_id
from engine.evaluation.runner import score_trace
from engine.settings import Settings
from engine.trace import ErrorStep

FELL_BACK = ErrorStep(iteration=1, title="reader fell back", message="reader model failed: HTTP 500 model crashed",
                      backend_failure=True)


def test_the_page_warns_about_failed_runs_and_counts_them_per_method(open_app, mini_workbench, mini_pack):
    questions = mini_pack.questions[:2]
    journal = Journal(Settings().evaluations, new_journal_id())
    journal.write_plan(plan_evaluation(mini_workbench, ["vanilla"], questions))
    for question, failed in zip(questions, (True, False)):
        trace = mini_workbench.ask(question.question, "vanilla", question_id=question.id)
        if failed:
            trace = trace.with_steps((FELL_BACK, *trace.steps), trace.totals.latency_ms)
        journal.append(score_trace(trace, question), trace)
    at = open_app("views/evaluate.py")
    at.query_params["eval"] = journal.id
    at.run()
    assert not at.exception
    warned = [w.value.replace("\\", "") for w in at.warning if "failed backend" in w.value]  # md_text's escapes out
    assert len(warned) == 1 and "1 of 2 runs rest on a failed backend (vanilla: 1)" in warned[0]
    metrics = next(d.value for d in at.dataframe if "scope" in d.value.columns)
    overall = metrics[metrics["scope"] == "overall"].iloc[0]
    assert (overall["failed_runs"], overall["failed_share"]) == (1, 0.5)
    rows = next(d.value for d in at.dataframe if "question_id" in d.value.columns)
    assert [bool(text) for text in rows["backend_failure"]] == [True, False]
