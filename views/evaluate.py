"""Evaluate: methods × the pack's questions with progress and Stop; metrics by method and question type.

Glue over engine.app.evaluations, the loop `python -m engine eval` runs too: the evaluation is asked in a
background thread this page follows, named in the URL (`?eval=`) so a reload or a link opens it again."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime

import plotly.graph_objects as go
import streamlit as st

import ui_state
from components.glossary import ECE, METRICS
from components.reliability import render_reliability
from components.safe import md_text
from engine.app import evaluations, runs
from engine.app.evaluations import EvaluationJob, JournalPlan, JournalSummary, Question
from engine.errors import RagscopeError

CHARTS = {"coverage": "Answered", "acc_answered": "Accuracy over answered", "acc": "Accuracy over all",
          "crag_score": "CRAG score", "f1": "F1", "recall@5": "Recall@5"}
PERCENT, SCORE = st.column_config.NumberColumn(format="percent"), st.column_config.NumberColumn(format="%.2f")
BASELINE = "vanilla"
QUESTION_COLUMNS = ["method", "question_id", "type", "question", "gold", "answer", "outcome", "confidence", "em",
                    "f1", "acc", "recall_5", "evidence_len", "latency_ms", "llm_calls", "tokens", "backend_failure"]
# the answer policy's own words for its time limit, so the box here and Explore's say the same
TIMEOUT_HELP = next(spec.help for spec in runs.POLICY_PARAMS if spec.name == "timeout_s")
POLL_SECONDS = 0.25  # how often the progress bar follows the background evaluation

workbench = ui_state.current_workbench()
pack = workbench.pack
service = evaluations.shared(ui_state.settings().evaluations)


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _workbench_for(plan: JournalPlan) -> runs.Workbench:
    """A saved evaluation goes on with its own pack, backend and model, whatever the sidebar shows now."""
    return ui_state.workbench(plan.pack_path, plan.backend, plan.options)


def _start(methods: list[str], questions: list[Question], timeout_s: float | None) -> None:
    plan = evaluations.plan_evaluation(workbench, methods, questions, evaluations.time_limited(methods, timeout_s))
    ui_state.link_evaluation(service.begin(plan, workbench).id)


def _resume(job: EvaluationJob) -> None:
    service.resume(job, _workbench_for)


def _current() -> EvaluationJob | None:
    """The evaluation the URL names (read back from disk after a reload), else this session's, else None;
    one that cannot be opened says why."""
    wanted = st.query_params.get("eval") or ui_state.linked_evaluation()
    if not wanted:
        return None
    try:
        job = service.open(wanted, _workbench_for)
    except RagscopeError as exc:
        st.error(md_text(f"Could not reopen evaluation {wanted}: {exc}"))
        ui_state.link_evaluation(None)
        return None
    ui_state.link_evaluation(job.id)
    return job


def _progress_text(job: EvaluationJob) -> str:
    step = job.next_step()
    if step is None:
        return f"{job.total} of {job.total} done"
    question_id, method = step
    return f"{job.done} of {job.total} done · next: {runs.label(method)} on {question_id}"


def _follow(job: EvaluationJob) -> None:
    """The progress bar, until the background evaluation ends; Stop, clicked meanwhile, reruns the page."""
    bar = st.progress(job.done / job.total, text=_progress_text(job))
    while not job.wait(POLL_SECONDS):
        bar.progress(job.done / job.total, text=_progress_text(job))
    bar.empty()


def _bar_chart(rows: list[dict], metric: str) -> go.Figure:
    """Horizontal bars, a group per scope: six methods' labels side by side under upright bars ran together."""
    scopes = list(dict.fromkeys(r["scope"] for r in rows))
    methods = list(dict.fromkeys(r["method"] for r in rows))
    figure = go.Figure()
    for method in methods:
        values = {r["scope"]: r.get(metric) for r in rows if r["method"] == method}
        lengths = [values.get(s) for s in scopes]
        # Labels make a 0 visible (no bar) and tell it apart from "no data" (None: no label either).
        figure.add_bar(name=runs.label(method), y=scopes, x=lengths, orientation="h", textposition="outside",
                       text=["" if v is None else f"{v:.2f}" for v in lengths], textfont={"size": 11},
                       constraintext="none", cliponaxis=False)
    lowest = min((v for r in rows if (v := r.get(metric)) is not None), default=0.0)
    figure.update_layout(
        barmode="group", height=130 + 18 * len(scopes) * len(methods), bargap=0.25,
        xaxis={"range": [min(0.0, lowest) - (0.15 if lowest < 0 else 0.0), 1.12], "title": {"text": CHARTS[metric]}},
        yaxis={"autorange": "reversed"}, margin={"l": 10, "r": 40, "t": 10, "b": 70},
        # Below the plot: above it, the legend sat under the chart's toolbar.
        legend={"orientation": "h", "yref": "container", "yanchor": "bottom", "y": 0, "x": 0})
    return figure


def _coverage(rows: list[dict]) -> None:
    """Per method: how often it answered, how often right when it did, right over all, and the CRAG score —
    so a method that refuses much is not read as one that answers wrongly (both score low accuracy over all)."""
    table = [{"method": runs.label(r["method"]), "questions": r["n"], "answered": r.get("coverage"),
              "accuracy over answered": r.get("acc_answered"), "accuracy over all": r.get("acc"),
              "CRAG score": r.get("crag_score")} for r in rows if r["scope"] == evaluations.OVERALL]
    st.dataframe(table, key="evaluate.coverage", hide_index=True, width="stretch", column_config={
        "answered": st.column_config.NumberColumn(format="percent", help="coverage: the share not refused"),
        "accuracy over answered": SCORE, "accuracy over all": st.column_config.NumberColumn(
            format="%.2f", help="a refusal counts as not accurate"),
        "CRAG score": st.column_config.NumberColumn(
            format="%.2f", help="share correct − share wrong (hallucinated); a refusal counts 0")})


def _metrics(job: EvaluationJob) -> None:
    report = job.report()
    rows = evaluations.metric_rows(report)
    st.subheader("Metrics")
    _coverage(rows)
    st.caption("All metrics: one row per method, overall and per question type. recall@k counts only questions "
               "with supporting documents; evidence_len is the mean length of the evidence list.", help=METRICS)
    st.dataframe(rows, key="evaluate.metrics", hide_index=True, width="stretch",
                 column_config={"method": st.column_config.TextColumn(pinned=True),
                                "scope": st.column_config.TextColumn(pinned=True),
                                "failed_runs": st.column_config.NumberColumn(
                                    "failed", help="runs whose answer rests on a failed backend (model server, "
                                                   "vector store): each stays in every metric, scored as a miss"),
                                "failed_share": PERCENT, "coverage": PERCENT,
                                "ece": st.column_config.NumberColumn("ECE", format="%.2f", help=ECE)})
    for tab, metric in zip(st.tabs(list(CHARTS.values())), CHARTS):
        with tab:
            st.plotly_chart(_bar_chart(rows, metric), key=f"evaluate.chart.{metric}", width="stretch")
    st.download_button("Download metrics JSON", json.dumps(report, indent=2), file_name="metrics.json",
                       mime="application/json", key="evaluate.download_metrics", on_click="ignore",
                       icon=":material/download:")


def _calibration(job: EvaluationJob) -> None:
    st.subheader("Calibration")
    diagrams = job.reliability()
    render_reliability(diagrams, labels={m: runs.label(m) for m in diagrams}, key="evaluate.reliability")


def _open_selected(job: EvaluationJob, rows: list[int]) -> None:
    """A newly selected row opens its trace in Explore; a selection still there on return does not bounce back."""
    traces = job.traces
    if rows and rows[0] < len(traces):
        opened = ui_state.current_trace()
        if opened is None or opened.id != traces[rows[0]].id:
            ui_state.show_trace(traces[rows[0]])


def _questions(job: EvaluationJob) -> None:
    st.subheader("Per question")
    st.caption("Select a row to open that question's trace in Explore.")
    table = [{c: asdict(r)[c] for c in QUESTION_COLUMNS} for r in job.results]
    event = st.dataframe(table, key="evaluate.questions", hide_index=True, width="stretch",
                         on_select="rerun", selection_mode="single-row",
                         column_config={"latency_ms": st.column_config.NumberColumn("latency ms", format="%.0f"),
                                        "question": st.column_config.TextColumn(width="large")})
    st.download_button("Download per-question CSV", job.results_csv(), file_name="results.csv",
                       mime="text/csv", key="evaluate.download_csv", on_click="ignore", icon=":material/download:")
    _open_selected(job, event.selection.rows)


def _results(job: EvaluationJob) -> None:
    if job.error:
        st.error(md_text(job.error))
    if job.stopped and job.done < job.total:
        st.warning(f"Stopped after {job.done} of {job.total} runs; the results so far are below. "
                   "**Resume** goes on from there.")
    if not job.results:
        return
    if job.failures():
        st.warning(md_text(f"{job.failures()}. Those runs stay in every metric, scored as misses: fix the backend "
                           "and evaluate again."), icon=":material/cloud_off:")
    plan = job.plan
    st.caption(f"{job.done} runs on pack `{plan.pack_path.rsplit('/', 1)[-1]}` with backend `{plan.backend}`. "
               f"Kept on disk: reloading this page (its link ends in `?eval={job.id}`) reopens it, "
               "and an interrupted run goes on where it stopped.")
    _metrics(job)
    _calibration(job)
    _questions(job)


def _past_row(past: JournalSummary, current: str) -> dict[str, object]:
    when = datetime.fromtimestamp(past.written, UTC).strftime("%Y-%m-%d %H:%M")
    state = past.state + (", shown above" if past.id == current else "")
    return {"last written (UTC)": when, "pack": past.pack, "methods": ", ".join(runs.label(m) for m in past.methods),
            "done": f"{past.done} of {past.total}", "state": state}


def _past(journals: list[JournalSummary], job: EvaluationJob | None) -> None:
    """The evaluations kept on disk, any of which opens here again (a stopped one can then be resumed)."""
    if not journals:
        return
    st.divider()
    st.subheader("Past evaluations")
    st.caption("Kept on disk, last written first. Select one and press **Open** to see its results here; "
               "a stopped one can then be resumed, an interrupted one goes on by itself.")
    current = job.id if job else ""
    event = st.dataframe([_past_row(p, current) for p in journals], key="evaluate.past", hide_index=True,
                         width="stretch", on_select="rerun", selection_mode="single-row",
                         column_config={"methods": st.column_config.TextColumn(width="medium")})
    rows = event.selection.rows
    chosen = journals[rows[0]] if rows and rows[0] < len(journals) else None
    st.button("Open", key="evaluate.open", type="primary", icon=":material/open_in_browser:",
              disabled=chosen is None or chosen.id == current, on_click=ui_state.link_evaluation,
              args=(chosen.id if chosen else "",))


st.header("Evaluate")
st.caption(f"Methods × the questions of **{md_text(pack.info.title or pack.info.name)}**, each method with its "
           "default parameters (and the time limit per run, when you set one).")
job = _current()
running = job is not None and job.running
if not pack.questions:
    st.info("This pack has no questions to evaluate on. Add a `questions.jsonl` to the pack, or import a "
            "dataset on the Knowledge page.")
else:
    ids = sorted(runs.method_choices(), key=lambda m: m != BASELINE)  # the baseline first, then the registry's order
    present = evaluations.question_types(pack)
    shown = evaluations.asked_filters(job, pack) if running else evaluations.Filters(
        tuple(ids), tuple(present), len(pack.questions))
    methods = st.multiselect("Methods", ids, default=list(shown.methods), key="evaluate.methods",
                             format_func=runs.label, disabled=running)
    type_col, limit_col, timeout_col = st.columns([3, 1, 1])
    types = type_col.multiselect("Question types", present, default=list(shown.types), key="evaluate.types",
                                 disabled=running)
    limit = limit_col.number_input("At most this many questions", min_value=1, max_value=len(pack.questions),
                                   value=shown.limit, key="evaluate.limit", disabled=running,
                                   help="Taken in turn from each chosen type, so a short run covers every type.")
    timeout_s = timeout_col.number_input("Time limit per run (s)", value=shown.timeout_s, min_value=0.1,
                                         max_value=86400.0, key="evaluate.timeout_s", disabled=running,
                                         placeholder="no limit", help=TIMEOUT_HELP)
    chosen = evaluations.pick_questions(pack.questions, types, int(limit))
    st.caption(f"{_count(len(chosen), 'question')} × {_count(len(methods), 'method')} = "
               f"{_count(len(chosen) * len(methods), 'run')}")
    run_col, stop_col, resume_col, _ = st.columns([1, 1, 1, 5])
    run_col.button("Run", type="primary", key="evaluate.run", width="stretch", disabled=running or not chosen
                   or not methods, on_click=_start, args=(methods, chosen, timeout_s))
    # Drawn before the progress bar below, so it can be clicked while questions are being asked.
    stop_col.button("Stop", key="evaluate.stop", width="stretch", disabled=not running,
                    on_click=job.stop if job is not None else None)
    resume_col.button("Resume", key="evaluate.resume", width="stretch", on_click=_resume, args=(job,),
                      disabled=job is None or running or not job.stopped or job.done >= job.total,
                      help="Go on with the stopped evaluation shown below from where it stopped.")

if job is not None and job.running:
    _follow(job)
    st.rerun()  # the buttons and filters above were drawn for a running job; draw them for a finished one
if job is None:
    st.info("Choose methods and question types, then press **Run**. Results stay here while you look at "
            "other pages.")
else:
    st.divider()
    _results(job)
_past(service.past(), job)
