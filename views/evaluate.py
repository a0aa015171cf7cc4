"""Evaluate: methods × the pack's questions with progress and Stop; metrics by method and question type.

Glue over engine.app.evaluations, the loop `python -m engine eval` runs too: the evaluation is asked in a
background thread this page follows, named in the URL (`?eval=`) so a reload or a link opens it again. Every
saved evaluation is listed at the top: one opens or resumes, two are compared (engine.evaluation.regression)."""

from __future__ import annotations

import json
from dataclasses import asdict
from datetime import UTC, datetime

import plotly.graph_objects as go
import streamlit as st

import ui_state
from components.eval_compare import render_comparison, render_flip
from components.glossary import ECE, METRICS
from components.reliability import render_reliability
from components.safe import md_text
from components.trace_diff import render_trace_diff
from engine.app import evaluations, runs
from engine.app.evaluations import EvaluationJob, JournalPlan, JournalSummary, Question
from engine.errors import RagscopeError

CHARTS = {"coverage": "Answered", "acc_answered": "Accuracy over answered", "acc": "Accuracy over all",
          "crag_score": "CRAG score", "f1": "F1", "recall@5": "Recall@5"}
PERCENT, SCORE = st.column_config.NumberColumn(format="percent"), st.column_config.NumberColumn(format="%.2f")
BASELINE = "vanilla"
QUESTION_COLUMNS = ["method", "question_id", "type", "question", "gold", "answer", "outcome", "confidence", "em",
                    "f1", "acc", "recall_5", "rr", "ndcg_10", "evidence_len", "latency_ms", "llm_calls", "tokens",
                    "backend_failure"]
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
    st.caption("All metrics: one row per method, overall and per question type. recall@k, MAP, MRR and "
               "nDCG@k count only questions with supporting documents; evidence_len is the mean length of the "
               "evidence list.", help=METRICS)
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
    with st.container(horizontal=True):
        st.download_button("Download metrics JSON", json.dumps(report, indent=2), file_name="metrics.json",
                           mime="application/json", key="evaluate.download_metrics", on_click="ignore",
                           icon=":material/download:")
        st.download_button("Download run card", lambda: job.run_card(_workbench_for(job.plan)),
                           file_name="run_card.json", mime="application/json", key="evaluate.download_card",
                           on_click="ignore", icon=":material/badge:",
                           help="What produced these figures, as `eval --out` writes it: ragscope version, pack "
                                "fingerprint, methods with every parameter, backend and model, seed, questions")


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


def _written(past: JournalSummary) -> str:
    """To the second: two evaluations run one after the other differ there, and the list tells them apart by it."""
    return datetime.fromtimestamp(past.written, UTC).strftime("%Y-%m-%d %H:%M:%S")


def _past_row(past: JournalSummary, current: str) -> dict[str, object]:
    when = _written(past)
    state = "running" if service.running(past.id) else past.state
    return {"last written (UTC)": when, "pack": past.pack, "methods": ", ".join(runs.label(m) for m in past.methods),
            "done": f"{past.done} of {past.total}", "state": state + (", shown below" if past.id == current else "")}


def _resume_saved(journal_id: str) -> None:
    """Resume from the list: the evaluation is shown below and goes on in the background; one that cannot go on
    says why there (its error), as the Resume button above does."""
    ui_state.link_evaluation(journal_id)
    try:
        service.resume_saved(journal_id, _workbench_for)
    except RagscopeError:
        pass  # unreadable: the page's reopening of the link says why


def _past(journals: list[JournalSummary], job: EvaluationJob | None) -> None:
    """Every evaluation kept on disk: one opens (or goes on) here, two are compared."""
    if not journals:
        return
    st.subheader("Past evaluations")
    st.caption("Kept on disk, last written first. Select one to **Open** it below (or **Resume** a stopped or "
               "interrupted one); select two to **Compare** them question by question.")
    current = job.id if job else ""
    event = st.dataframe([_past_row(p, current) for p in journals], key="evaluate.past", hide_index=True,
                         width="stretch", on_select="rerun", selection_mode="multi-row",
                         height="auto" if len(journals) <= 6 else 260,
                         column_config={"methods": st.column_config.TextColumn(width="medium")})
    chosen = [journals[row] for row in event.selection.rows if row < len(journals)]
    one = chosen[0] if len(chosen) == 1 else None
    open_col, resume_col, compare_col, _ = st.columns([1, 1, 1, 2])
    open_col.button("Open", key="evaluate.open", type="primary", icon=":material/open_in_browser:", width="stretch",
                    disabled=one is None or one.id == current, on_click=ui_state.link_evaluation,
                    args=(one.id if one else "",))
    resume_col.button("Resume", key="evaluate.past_resume", icon=":material/play_arrow:", width="stretch",
                      disabled=one is None or one.state == "finished" or service.running(one.id),
                      on_click=_resume_saved, args=(one.id if one else "",),
                      help="Go on with the selected stopped or interrupted evaluation, in the background.")
    compare_col.button("Compare", key="evaluate.compare", icon=":material/compare_arrows:", width="stretch",
                       disabled=len(chosen) != 2, on_click=ui_state.compare_evaluations,
                       args=(tuple(p.id for p in chosen) if len(chosen) == 2 else None,),
                       help="Select two: the one started first is compared as before, the other as after.")
    _comparison(journals)


def _comparison(journals: list[JournalSummary]) -> None:
    """The two evaluations compared (engine.evaluation.regression), with a flipped question's answers and runs."""
    pair = ui_state.compared_evaluations()
    by_id = {p.id: p for p in journals}
    if pair is None or not all(journal_id in by_id for journal_id in pair):
        return
    title_col, swap_col, close_col = st.columns([5, 2, 1], vertical_alignment="bottom")
    swap = swap_col.toggle("Swap before and after", key="evaluate.compare.swap")
    close_col.button("Close", key="evaluate.compare.close", on_click=ui_state.compare_evaluations, args=(None,),
                     width="stretch")
    try:
        saved = service.compare(by_id[pair[0]], by_id[pair[1]], swap=swap)
    except RagscopeError as exc:
        st.error(md_text(f"Could not compare these evaluations: {exc}"))
        return
    title_col.markdown(f"#### Comparison\nbefore: {_described(saved.before)}  \nafter: {_described(saved.after)}")
    flip = render_comparison(saved.comparison, key="evaluate.comparison",
                             labels={m: runs.label(m) for m in runs.method_choices()})
    if flip is not None:
        _flipped_detail(saved, flip)


def _described(past: JournalSummary) -> str:
    """'demo · 6 methods · 36 of 36 runs · 2026-11-27 02:49 UTC': the list's row, short enough for one line."""
    when = _written(past)
    methods = ", ".join(runs.label(m) for m in past.methods) if len(past.methods) <= 2 else \
        f"{len(past.methods)} methods"
    return md_text(f"{past.pack} · {methods} · {past.done} of {past.total} runs · last written {when} UTC")


def _flipped_detail(saved: evaluations.SavedComparison, flip: evaluations.Flip) -> None:
    """One flipped question: both answers side by side, either run opened in Explore, and the two runs' diff."""
    before, after = saved.trace(flip.trace_before), saved.trace(flip.trace_after)
    with st.container(border=True):
        render_flip(flip, method=runs.label(flip.method))
        before_col, after_col, _ = st.columns(3)
        if before_col.button("Open before in Explore", key="evaluate.compare.open_before",
                             icon=":material/open_in_new:", width="stretch"):
            ui_state.show_trace(before)
        if after_col.button("Open after in Explore", key="evaluate.compare.open_after",
                            icon=":material/open_in_new:", width="stretch"):
            ui_state.show_trace(after)
    st.markdown("#### What changed between the two runs")
    render_trace_diff(before, after, key="evaluate.compare.diff")


st.header("Evaluate")
st.caption(f"Methods × the questions of **{md_text(pack.info.title or pack.info.name)}**, each method with its "
           "default parameters (and the time limit per run, when you set one).")
job = _current()
running = job is not None and job.running
_past(service.past(), job)
st.divider()
st.subheader("New evaluation")
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
