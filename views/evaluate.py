"""Evaluate: methods × the pack's questions with progress and Stop; metrics by method and question type."""

from __future__ import annotations

import json
from dataclasses import asdict, replace

import plotly.graph_objects as go
import streamlit as st

import ui_state
from components.glossary import ECE, METRICS
from components.reliability import render_reliability
from components.safe import md_text
from engine.errors import RagscopeError
from engine.evaluation.calibration import reliability_by_method
from engine.evaluation.compare import metric_rows, pick_questions, results_csv
from engine.evaluation.runner import failed_trace, score_trace, summarise
from engine.knowledge.records import QUESTION_TYPES, Question
from engine.methods.base import METHODS, method_ids
from engine.runner import Workbench
from engine.trace import Trace

CHARTS = {"acc": "Accuracy", "f1": "F1", "recall@5": "Recall@5"}
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
    scopes = list(dict.fromkeys(r["scope"] for r in rows))
    figure = go.Figure()
    for method in dict.fromkeys(r["method"] for r in rows):
        values = {r["scope"]: r.get(metric) for r in rows if r["method"] == method}
        heights = [values.get(s) for s in scopes]
        # Labels make a 0 visible (no bar) and tell it apart from "no data" (None: no label either).
        figure.add_bar(name=_label(method), x=scopes, y=heights, textposition="outside",
                       text=["" if h is None else f"{h:.2f}" for h in heights])
    figure.update_layout(barmode="group", height=340, yaxis={"range": [0, 1.12], "title": {"text": CHARTS[metric]}},
                         margin={"l": 10, "r": 10, "t": 30, "b": 10}, legend={"orientation": "h", "y": 1.12})
    return figure


def _metrics(job: ui_state.EvaluationJob) -> None:
    report = summarise(job.results)
    rows = metric_rows(report)
    st.subheader("Metrics")
    st.caption("One row per method, overall and per question type. recall@k counts only questions "
               "with supporting documents; evidence_len is the mean length of the evidence list.", help=METRICS)
    st.dataframe(rows, key="evaluate.metrics", hide_index=True, width="stretch",
                 column_config={"method": st.column_config.TextColumn(pinned=True),
                                "scope": st.column_config.TextColumn(pinned=True),
                                "ece": st.column_config.NumberColumn("ECE", help=ECE)})
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
    if job.stopped:
        st.warning(f"Stopped after {job.done} of {job.total} runs; the results so far are below.")
    if not job.results:
        return
    chosen = job.selection
    st.caption(f"{job.done} runs on pack `{chosen.pack_path.rsplit('/', 1)[-1]}` with backend `{chosen.backend}`. "
               f"Kept on disk: reloading this page (its link ends in `?eval={job.journal_id}`) reopens it, "
               "and an interrupted run goes on where it stopped.")
    _metrics(job)
    _calibration(job)
    _questions(job)


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
    ids = method_ids()
    methods = st.multiselect("Methods", ids, default=list(ids), key="evaluate.methods", format_func=_label,
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
    run_col, stop_col, _ = st.columns([1, 1, 6])
    run_col.button("Run", type="primary", key="evaluate.run", width="stretch", disabled=running or not chosen
                   or not methods, on_click=_start, args=(ui_state.selection(), methods, chosen))
    # Created before the loop below, so it can be clicked while questions are being asked.
    stop_col.button("Stop", key="evaluate.stop", width="stretch", disabled=not running,
                    on_click=ui_state.stop_evaluation)

if job is not None and job.running:
    _continue(job)
    st.rerun()  # the buttons and filters above were drawn for a running job; draw them for a finished one
if job is None:
    st.info("Choose methods and question types, then press **Run**. Results stay here while you look at "
            "other pages.")
else:
    st.divider()
    _results(job)
