"""Evaluate: methods × the pack's questions with progress and Stop; metrics by method and question type."""

from __future__ import annotations

import json
from dataclasses import asdict, replace
from datetime import UTC, datetime

import plotly.graph_objects as go
import streamlit as st

import ui_state
from components.glossary import ECE, METRICS
from components.reliability import render_reliability
from components.safe import md_text
from engine.errors import RagscopeError
from engine.evaluation.calibration import reliability_by_method
from engine.evaluation.compare import OVERALL, metric_rows, pick_questions, results_csv
from engine.evaluation.journal import JournalSummary
from engine.evaluation.runner import failed_trace, score_trace, summarise
from engine.knowledge.records import QUESTION_TYPES, Question
from engine.methods.base import METHODS, method_ids
from engine.runner import Workbench
from engine.trace import Trace

CHARTS = {"coverage": "Answered", "acc_answered": "Accuracy over answered", "acc": "Accuracy over all",
          "crag_score": "CRAG score", "f1": "F1", "recall@5": "Recall@5"}
PERCENT, SCORE = st.column_config.NumberColumn(format="percent"), st.column_config.NumberColumn(format="%.2f")
BASELINE = "vanilla"
QUESTION_COLUMNS = ["method", "question_id", "type", "question", "gold", "answer", "outcome", "confidence", "em",
                    "f1", "acc", "recall_5", "evidence_len", "latency_ms", "llm_calls", "tokens"]

workbench = ui_state.current_workbench()
pack = workbench.pack


def _label(method: str) -> str:
    return METHODS[method].label if method in METHODS else method


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _start(selection: ui_state.Selection, methods: list[str], questions: list[Question]) -> None:
    # Question-major order: a run stopped half-way has every method on the same questions.
    plan = tuple((q, m) for q in questions for m in methods)
    ui_state.start_evaluation(ui_state.EvaluationJob(selection=selection, plan=plan))


def _ask(bench: Workbench, question: Question, method: str) -> Trace:
    try:
        return bench.ask(question.question, method, question_id=question.id)
    except RagscopeError as exc:  # e.g. an over-long imported question: scored as refused, never fatal
        return failed_trace(bench, method, question, str(exc))


def _progress_text(job: ui_state.EvaluationJob) -> str:
    if job.done >= job.total:
        return f"{job.total} of {job.total} done"
    question, method = job.plan[job.done]
    return f"{job.done} of {job.total} done · next: {_label(method)} on {question.id}"


def _continue(job: ui_state.EvaluationJob) -> None:
    """Ask the planned questions from where the job stands; the stop flag is read between questions."""
    chosen = job.selection
    bench = ui_state.workbench(chosen.pack_path, chosen.backend, chosen.options)
    bar = st.progress(job.done / job.total, text=_progress_text(job))
    with st.spinner("Preparing the index (first run only)…"):
        bench.retrieval.ensure_index()
    while job.running:
        question, method = job.plan[job.done]
        trace = _ask(bench, question, method)
        # Stored before the next Streamlit call: a rerun interrupts the script there, not here.
        job = ui_state.record_evaluation(score_trace(trace, question), trace)
        bar.progress(job.done / job.total, text=_progress_text(job))
        job = ui_state.evaluation() or job  # Stop, clicked in another run, lands in session state
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
        figure.add_bar(name=_label(method), y=scopes, x=lengths, orientation="h", textposition="outside",
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
    table = [{"method": _label(r["method"]), "questions": r["n"], "answered": r.get("coverage"),
              "accuracy over answered": r.get("acc_answered"), "accuracy over all": r.get("acc"),
              "CRAG score": r.get("crag_score")} for r in rows if r["scope"] == OVERALL]
    st.dataframe(table, key="evaluate.coverage", hide_index=True, width="stretch", column_config={
        "answered": st.column_config.NumberColumn(format="percent", help="coverage: the share not refused"),
        "accuracy over answered": SCORE, "accuracy over all": st.column_config.NumberColumn(
            format="%.2f", help="a refusal counts as not accurate"),
        "CRAG score": st.column_config.NumberColumn(
            format="%.2f", help="share correct − share wrong (hallucinated); a refusal counts 0")})


def _metrics(job: ui_state.EvaluationJob) -> None:
    report = summarise(job.results)
    rows = metric_rows(report)
    st.subheader("Metrics")
    _coverage(rows)
    st.caption("All metrics: one row per method, overall and per question type. recall@k counts only questions "
               "with supporting documents; evidence_len is the mean length of the evidence list.", help=METRICS)
    st.dataframe(rows, key="evaluate.metrics", hide_index=True, width="stretch",
                 column_config={"method": st.column_config.TextColumn(pinned=True),
                                "scope": st.column_config.TextColumn(pinned=True),
                                "coverage": PERCENT, "ece": st.column_config.NumberColumn("ECE", format="%.2f",
                                                                                          help=ECE)})
    for tab, metric in zip(st.tabs(list(CHARTS.values())), CHARTS):
        with tab:
            st.plotly_chart(_bar_chart(rows, metric), key=f"evaluate.chart.{metric}", width="stretch")
    st.download_button("Download metrics JSON", json.dumps(report, indent=2), file_name="metrics.json",
                       mime="application/json", key="evaluate.download_metrics", on_click="ignore",
                       icon=":material/download:")


def _calibration(job: ui_state.EvaluationJob) -> None:
    st.subheader("Calibration")
    diagrams = reliability_by_method(job.results)
    render_reliability(diagrams, labels={m: _label(m) for m in diagrams}, key="evaluate.reliability")


def _open_selected(job: ui_state.EvaluationJob, rows: list[int]) -> None:
    """A newly selected row opens its trace once; a selection still there on return does not bounce back."""
    if not rows:
        if job.opened_row is not None:
            ui_state.set_evaluation(replace(job, opened_row=None))
        return
    if rows[0] != job.opened_row and rows[0] < len(job.traces):
        ui_state.set_evaluation(replace(job, opened_row=rows[0]))
        ui_state.show_trace(job.traces[rows[0]])


def _questions(job: ui_state.EvaluationJob) -> None:
    st.subheader("Per question")
    st.caption("Select a row to open that question's trace in Explore.")
    table = [{c: asdict(r)[c] for c in QUESTION_COLUMNS} for r in job.results]
    event = st.dataframe(table, key="evaluate.questions", hide_index=True, width="stretch",
                         on_select="rerun", selection_mode="single-row",
                         column_config={"latency_ms": st.column_config.NumberColumn("latency ms", format="%.0f"),
                                        "question": st.column_config.TextColumn(width="large")})
    st.download_button("Download per-question CSV", results_csv(job.results), file_name="results.csv",
                       mime="text/csv", key="evaluate.download_csv", on_click="ignore", icon=":material/download:")
    _open_selected(job, event.selection.rows)


def _results(job: ui_state.EvaluationJob) -> None:
    if job.stopped and job.done < job.total:
        st.warning(f"Stopped after {job.done} of {job.total} runs; the results so far are below. "
                   "**Resume** goes on from there.")
    if not job.results:
        return
    chosen = job.selection
    st.caption(f"{job.done} runs on pack `{chosen.pack_path.rsplit('/', 1)[-1]}` with backend `{chosen.backend}`. "
               f"Kept on disk: reloading this page (its link ends in `?eval={job.journal_id}`) reopens it, "
               "and an interrupted run goes on where it stopped.")
    _metrics(job)
    _calibration(job)
    _questions(job)


def _past_row(past: JournalSummary, current: str) -> dict[str, object]:
    when = datetime.fromtimestamp(past.written, UTC).strftime("%Y-%m-%d %H:%M")
    state = past.state + (", shown above" if past.id == current else "")
    return {"last written (UTC)": when, "pack": past.pack, "methods": ", ".join(_label(m) for m in past.methods),
            "done": f"{past.done} of {past.total}", "state": state}


def _past(journals: list[JournalSummary], job: ui_state.EvaluationJob | None) -> None:
    """The evaluations kept on disk, any of which opens here again (a stopped one can then be resumed)."""
    if not journals:
        return
    st.divider()
    st.subheader("Past evaluations")
    st.caption("Kept on disk, last written first. Select one and press **Open** to see its results here; "
               "a stopped one can then be resumed, an interrupted one goes on by itself.")
    current = job.journal_id if job else ""
    event = st.dataframe([_past_row(p, current) for p in journals], key="evaluate.past", hide_index=True,
                         width="stretch", on_select="rerun", selection_mode="single-row",
                         column_config={"methods": st.column_config.TextColumn(width="medium")})
    rows = event.selection.rows
    chosen = journals[rows[0]] if rows and rows[0] < len(journals) else None
    st.button("Open", key="evaluate.open", type="primary", icon=":material/open_in_browser:",
              disabled=chosen is None or chosen.id == current, on_click=ui_state.open_evaluation,
              args=(chosen.id if chosen else "",))


st.header("Evaluate")
st.caption(f"Methods × the questions of **{md_text(pack.info.title or pack.info.name)}**, each method with its "
           "default parameters.")
job = ui_state.evaluation()
if job is not None:
    st.query_params["eval"] = job.journal_id  # the link reopens this evaluation after a reload
notice = ui_state.pop_notice("evaluate")
if notice is not None:
    st.error(md_text(notice.text))
running = job is not None and job.running
if not pack.questions:
    st.info("This pack has no questions to evaluate on. Add a `questions.jsonl` to the pack, or import a "
            "dataset on the Knowledge page.")
else:
    ids = sorted(method_ids(), key=lambda m: m != BASELINE)  # the baseline first, then the registry's order
    methods = st.multiselect("Methods", ids, default=ids, key="evaluate.methods", format_func=_label,
                             disabled=running)
    present = [t for t in QUESTION_TYPES if any(q.type == t for q in pack.questions)]
    present += sorted({q.type for q in pack.questions} - set(present))
    type_col, limit_col = st.columns([3, 1])
    types = type_col.multiselect("Question types", present, default=present, key="evaluate.types",
                                 disabled=running)
    limit = limit_col.number_input("At most this many questions", min_value=1, max_value=len(pack.questions),
                                   value=len(pack.questions), key="evaluate.limit", disabled=running,
                                   help="Taken in turn from each chosen type, so a short run covers every type.")
    chosen = pick_questions(pack.questions, types, int(limit))
    st.caption(f"{_count(len(chosen), 'question')} × {_count(len(methods), 'method')} = "
               f"{_count(len(chosen) * len(methods), 'run')}")
    run_col, stop_col, resume_col, _ = st.columns([1, 1, 1, 5])
    run_col.button("Run", type="primary", key="evaluate.run", width="stretch", disabled=running or not chosen
                   or not methods, on_click=_start, args=(ui_state.selection(), methods, chosen))
    # Created before the loop below, so it can be clicked while questions are being asked.
    stop_col.button("Stop", key="evaluate.stop", width="stretch", disabled=not running,
                    on_click=ui_state.stop_evaluation)
    resume_col.button("Resume", key="evaluate.resume", width="stretch", on_click=ui_state.resume_evaluation,
                      disabled=job is None or not job.stopped or job.done >= job.total,
                      help="Go on with the stopped evaluation shown below from where it stopped.")

if job is not None and job.running:
    _continue(job)
    st.rerun()  # the buttons and filters above were drawn for a running job; draw them for a finished one
if job is None:
    st.info("Choose methods and question types, then press **Run**. Results stay here while you look at "
            "other pages.")
else:
    st.divider()
    _results(job)
_past(ui_state.past_evaluations(), job)
