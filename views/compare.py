"""Compare: one question through several methods side by side — answers, cost, chunks in common, graphs."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from typing import Any

import plotly.graph_objects as go
import streamlit as st

import ui_state
from components.answer import VERDICT_MARK, producer_note, render_answer, verdict
from components.graph import has_graph, render_graph
from components.params import param_inputs
from components.safe import md_text
from engine.app import runs
from engine.app.packs import Pack
from engine.app.runs import Run, Workbench
from engine.errors import RagscopeError
from engine.trace import Trace

MAX_METHODS = 6
PER_ROW = 3  # answer cards side by side: six in the page's width squeezed words into broken halves
BASELINE = "vanilla"

workbench = ui_state.current_workbench()
pack = workbench.pack


def _in_rows(traces: Sequence[Trace]) -> Iterator[tuple[Any, Trace]]:
    """Each trace with its column, PER_ROW columns to a row."""
    for start in range(0, len(traces), PER_ROW):
        yield from zip(st.columns(PER_ROW), traces[start:start + PER_ROW])


def _use_example() -> None:
    st.session_state["compare.question"] = st.session_state["compare.example"] or ""


Inputs = tuple[dict[str, Any], dict[str, Any]]  # a method's parameters, and its run's answer policy


def _method_params(methods: tuple[str, ...]) -> dict[str, Inputs]:
    """One collapsed expander of parameter widgets per method (its run's answer policy below its own), three
    to a row so sliders stay wide enough."""
    chosen = {}
    columns = st.columns(PER_ROW)
    for i, method in enumerate(methods):
        with columns[i % PER_ROW], st.expander(f"{runs.label(method)} parameters"):
            key = f"compare.params.{method}"
            chosen[method] = (param_inputs(runs.method_info(method).params, key=key),
                              param_inputs(runs.POLICY_PARAMS, key=key))
    return chosen


def _start_all(bench: Workbench, question: str, inputs: Mapping[str, Inputs]) -> list[Run] | None:
    """Start every run before executing any, so a bad question is reported once and costs nothing."""
    qid = runs.pack_question_id(bench.pack, question)
    try:
        return [runs.start(bench, question, method, params, question_id=qid, policy=runs.answer_policy(policy))
                for method, (params, policy) in inputs.items()]
    except RagscopeError as exc:
        st.error(md_text(str(exc)))  # it may quote the question
        return None


def _execute(bench: Workbench, started: list[Run]) -> tuple[Trace, ...]:
    """Every run to its end, saved to History; a run the store would not take (another app server on this
    home held it too long, a full disk) is still compared, and the page says it was not saved (issue 26)."""
    traces, unsaved = [], []
    count = f"{len(started)} method" + ("" if len(started) == 1 else "s")
    with st.status(f"Running {count}…", expanded=True) as status:
        with st.spinner("Preparing the index (first run only)…"):
            runs.prepare(bench)
        for run in started:
            status.update(label=f"Running {runs.label(run.method.id)}…")
            try:
                runs.finish(run, ui_state.run_store())
            except RagscopeError as exc:
                unsaved.append((runs.label(run.method.id), str(exc)))
            traces.append(run.trace)
            st.write(f"{runs.label(run.method.id)}: done in {run.trace.totals.latency_ms:.0f} ms")
        status.update(label=f"Ran {count}", state="complete", expanded=False)
    if unsaved:
        labels = ", ".join(label for label, _ in unsaved)
        st.error(md_text(f"Not saved to History: {labels} (they are compared below). {unsaved[-1][1]}"))
    return tuple(traces)


def _sources(trace: Trace, known: Pack) -> dict[str, tuple[str, str]]:
    if trace.answer is None or trace.pack != known.info.name:
        return {}
    docs = known.documents_by_id
    return {d: (docs[d].title, docs[d].text) for d in trace.answer.citations if d in docs}


def _summary_row(trace: Trace, shared: int) -> dict[str, Any]:
    answer = trace.answer
    gold, scores = runs.grade(trace, pack)
    judged = VERDICT_MARK[verdict(scores if gold else None, answer.refused)] if answer else "no answer"
    return {"method": runs.label(trace.method), "answer": answer.text if answer else "", "correct?": judged,
            "F1": scores.f1 if scores else None, "latency ms": trace.totals.latency_ms,
            "LLM calls": trace.totals.llm_calls, "evidence": len(runs.answer_evidence(trace)), "shared docs": shared}


def _summary(traces: tuple[Trace, ...]) -> None:
    """The verdicts and costs side by side first, so the details below are read knowing who got it right."""
    rows = [_summary_row(t, shared) for t, shared in zip(traces, runs.shared_evidence(traces))]
    if all(row["F1"] is None for row in rows):  # a question of one's own: F1 against nothing means nothing
        rows = [{k: v for k, v in row.items() if k != "F1"} for row in rows]
    st.dataframe(rows, key="compare.summary", hide_index=True, width="stretch",
                 column_config={"method": st.column_config.TextColumn(pinned=True),
                                "answer": st.column_config.TextColumn(width="medium"),  # all columns in view
                                "F1": st.column_config.NumberColumn(format="%.2f"),
                                "latency ms": st.column_config.NumberColumn(format="%.0f"),
                                "evidence": st.column_config.NumberColumn(
                                    help="distinct documents the answer was read from"),
                                "shared docs": st.column_config.NumberColumn(
                                    help="of those, how many another method also answered from")})


def _answers_note(traces: tuple[Trace, ...]) -> None:
    """Who produced the answers and what their confidence means, said once for all the cards below."""
    answers = [t.answer for t in traces if t.answer is not None]
    lines = [f"Answers by {producer}." for producer in dict.fromkeys(producer_note(a) for a in answers)]
    if any(a.backend == "offline" and not a.refused for a in answers):
        lines.append("A calibrated confidence of x % means about x % of offline answers like that one are right.")
    if lines:
        st.caption(md_text(" ".join(lines)))  # a model's name is the server's text


def _method_column(trace: Trace) -> None:
    key = f"compare.{trace.method}"
    st.subheader(runs.label(trace.method))
    if trace.answer is None:
        st.warning("This run ended without an answer; open it in Explore to see why.")
    else:
        gold, scores = runs.grade(trace, pack)
        render_answer(trace.answer, key=f"{key}.answer", sources=_sources(trace, pack), gold=gold, scores=scores,
                      explained=False, failure=runs.backend_failure(trace))
    totals = trace.totals
    st.markdown(f"**{totals.latency_ms:,.0f} ms** latency · **{totals.llm_calls}** LLM calls · "
                f"**{totals.tokens_in + totals.tokens_out:,}** tokens")
    with st.expander("Parameters used"):
        st.json(trace.settings(), expanded=True)
    if st.button("Open in Explore", key=f"{key}.open", icon=":material/explore:"):
        ui_state.show_trace(trace)


def _overlap_chart(traces: tuple[Trace, ...]) -> None:
    result = runs.trace_overlap(traces)
    labels = [f"{runs.label(m)} ({len(d)})" for m, d in zip(result.methods, result.docs)]
    counts = [[f"{c} of {u}" for c, u in zip(crow, urow)] for crow, urow in zip(result.common, result.union)]
    figure = go.Figure(go.Heatmap(
        z=result.share, x=labels, y=labels, zmin=0.0, zmax=1.0, colorscale="Blues", text=counts,
        texttemplate="%{z:.0%}", hovertemplate="%{y} × %{x}<br>%{text} documents in common<extra></extra>",
        colorbar={"title": {"text": "in common"}, "tickformat": ".0%"}))
    figure.update_layout(height=160 + 50 * len(labels), margin={"l": 10, "r": 10, "t": 10, "b": 10},
                         yaxis={"autorange": "reversed"})
    # A few methods make a small matrix: full width would stretch each cell into a banner.
    st.plotly_chart(figure, key="compare.overlap", width=min(1100, 320 + 150 * len(labels)))


def _draw_graph(trace: Trace) -> None:
    # Imported here: the graph component is built separately and this page must work without it.
    render_graph(trace.steps, trace.iterations, key=f"compare.{trace.method}.graph", trace=trace)


def _graphs(traces: tuple[Trace, ...]) -> None:
    with_graph = [t for t in traces if has_graph(t.steps, t.iterations)]  # a graph with nodes, not an empty box
    if not with_graph:
        st.caption("None of these methods built a query graph.")
        return
    for column, trace in _in_rows(with_graph):
        with column:
            st.markdown(f"**{runs.label(trace.method)}** · final graph after round {trace.iterations}")
            _draw_graph(trace)


def _results(traces: tuple[Trace, ...]) -> None:
    st.markdown(f"**Question:** {md_text(traces[0].question)}")
    _summary(traces)
    _answers_note(traces)
    for column, trace in _in_rows(traces):
        with column:
            _method_column(trace)
    st.subheader("Chunks in common")
    st.caption("Share of the distinct retrieved documents each pair of methods has in common "
               "(in both ÷ in either; the number in brackets is how many documents a method retrieved).")
    _overlap_chart(traces)
    st.subheader("Graphs")
    _graphs(traces)


st.header("Compare methods")
st.caption(f"One question, several methods on **{md_text(pack.info.title or pack.info.name)}**, each with "
           "the parameters set below. Every run is saved to History.")
# the baseline first, then the registry's order
ids = tuple(sorted(runs.method_choices(), key=lambda m: m != BASELINE))
picked = st.multiselect("Methods", ids, default=list(ids[:MAX_METHODS]), max_selections=MAX_METHODS,
                        key="compare.methods", format_func=runs.label,
                        help=f"Two to {MAX_METHODS} methods; each runs with the parameters in its expander below.")
methods = tuple(m for m in ids if m in picked)  # in that order too, whatever order they were picked in
params = _method_params(methods)
st.selectbox("Example questions from the pack", [q.question for q in pack.questions], index=None,
             key="compare.example", on_change=_use_example, placeholder="Choose one, or type your own below")
question = st.text_area("Question", key="compare.question", height=80,
                        placeholder="e.g. Where was the doctoral advisor of … born?")
if st.button("Run", type="primary", key="compare.run", disabled=not methods):
    started = _start_all(workbench, question, params)
    if started:
        ui_state.set_compare_traces(_execute(workbench, started))
if len(methods) == 1 and len(ids) > 1:
    st.caption("Add a second method to compare side by side.")

compared = ui_state.compare_traces()
if compared:
    st.divider()
    _results(compared)
else:
    st.info("Choose the methods, pick an example or type a question, then press **Run**.")
