"""Explore: ask a question with a method, watch its steps arrive, then step through its rounds."""

from __future__ import annotations

import streamlit as st

import ui_state
from components.params import param_inputs
from components.safe import md_text
from components.steps import render_step
from components.trace_view import render_trace
from engine.errors import RagscopeError
from engine.evaluation.metrics import grade_trace
from engine.live import Partial
from engine.methods.base import METHODS, method_ids
from engine.methods.plugins import load_plugins
from engine.params import param_specs
from engine.trace import Trace

workbench = ui_state.current_workbench()
pack = workbench.pack


def _use_example() -> None:
    """Copy the picked example into the box and clear the picker, so picking it again refills the box."""
    picked = st.session_state["explore.example"]
    if picked:
        st.session_state["explore.question"] = picked
    st.session_state["explore.example"] = None


def _stream(run) -> None:
    """Show steps as they come and, below them, the reply of the model call in flight as it is written
    (backends that stream); the call's step replaces it. Steps are kept on the Run, so a Stop loses nothing."""
    with st.status("Running…", expanded=True) as status:
        steps, writing = st.container(), st.empty()
        for i, event in enumerate(run.live()):
            if isinstance(event, Partial):
                with writing.container():
                    st.caption(md_text(f"{event.role or 'model'} is writing…"))
                    st.code(event.text, language=None, wrap_lines=True)  # model text: never markdown
            else:
                writing.empty()
                with steps:
                    render_step(event, key=f"explore.live.{i}")
        status.update(label=f"Done in {run.trace.totals.latency_ms:.0f} ms", state="complete", expanded=False)
    _finish(run)


def _open_linked_run() -> None:
    """`?run=<id>` opens that saved run: a reload keeps the run on screen, and a link shares it."""
    wanted = st.query_params.get("run")
    current = ui_state.current_trace()
    if not wanted or (current is not None and current.id == wanted):
        return
    try:
        ui_state.set_current_trace(ui_state.run_store().get(wanted))
    except RagscopeError as exc:
        st.warning(md_text(f"{exc}: it may have been deleted on the History page."))  # the id is from the URL
        del st.query_params["run"]


def _params_line(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items()) or "the method's defaults"


def _finish(run) -> None:
    """Keep the trace, save it, and redraw: the page then shows it once, in the step-through view, with
    the question that ran in the box (a box edited while the run streamed would otherwise disagree)."""
    ui_state.set_live_run(None)
    st.session_state["explore.ran"] = run.trace.question
    ui_state.set_current_trace(run.trace)
    ui_state.run_store().save(run.trace)
    st.rerun()


st.header(md_text(pack.info.title or pack.info.name))
_open_linked_run()
ids = method_ids()
for problem in load_plugins().problems:  # a broken plugin of the user's is left out, and said so here
    st.warning(md_text(str(problem)), icon=":material/extension_off:")
ui_state.default_method("vanilla" if "vanilla" in ids else ids[0])  # the baseline: others are compared with it
method = st.selectbox("Method", ids, key=ui_state.EXPLORE_METHOD, format_func=lambda m: METHODS[m].label)
st.caption(f"{METHODS[method].description}" + (f" — *{METHODS[method].paper}*" if METHODS[method].paper else ""))
with st.expander("Parameters"):
    params = param_inputs(param_specs(METHODS[method].Params), key=f"explore.params.{method}")

st.selectbox("Example questions from the pack", [q.question for q in pack.questions], index=None,
             key="explore.example", on_change=_use_example, placeholder="Choose one, or type your own below")
if "explore.ran" in st.session_state:  # applied before the box exists: a widget's value can't change after
    st.session_state["explore.question"] = st.session_state.pop("explore.ran")
question = st.text_area("Question", key="explore.question", height=80,
                        placeholder="e.g. Where was the doctoral advisor of … born?")
run_col, stop_col, _ = st.columns([1, 1, 8])
asked = run_col.button("Run", type="primary", key="explore.run", width="stretch")
started = None
if asked:
    qid = next((q.id for q in pack.questions if q.question == " ".join(question.split())), "")
    try:
        started = workbench.start(question, method, params, question_id=qid)
        ui_state.set_live_run(started)
    except RagscopeError as exc:
        st.error(str(exc))
# Created after a new run is registered, so it is live while that run streams below.
stopped = stop_col.button("Stop", key="explore.stop", disabled=ui_state.live_run() is None, width="stretch")
live = ui_state.live_run()
if stopped and live is not None:
    live.stop()
    for _ in live:  # the method notices the stop at its next step and says so
        pass
    st.toast("Stopped — the steps so far are kept.")
    _finish(live)
if started is not None:
    with st.spinner("Preparing the index (first run only)…"):
        workbench.retrieval.ensure_index()
    _stream(started)

trace: Trace | None = ui_state.current_trace()
if trace is None:
    st.info("Pick an example or type a question, then press **Run**.")
else:
    st.divider()
    label = METHODS[trace.method].label if trace.method in METHODS else trace.method
    st.markdown(md_text(f"{label} · {trace.backend} · {trace.totals.latency_ms:.0f} ms · "
                        f"{trace.totals.llm_calls} LLM calls · question: {trace.question}"))
    if ui_state.run_store().has(trace.id):  # saved: a reload or a shared link opens it
        st.query_params["run"] = trace.id
        st.caption(md_text(f"parameters: {_params_line(trace.params)} · link to this run: ?run={trace.id}"))
    else:
        st.caption(md_text(f"parameters: {_params_line(trace.params)} · a replayed trace, not saved"))
    gold, scores = grade_trace(trace, pack)
    render_trace(trace, key="explore.view", gold=gold, scores=scores)
    st.download_button("Download trace JSON", trace.to_json(indent=2), file_name=f"trace-{trace.id}.json",
                       mime="application/json", key="explore.download")

with st.expander("Replay a saved trace"):
    uploaded = st.file_uploader("Trace JSON", type=["json"], key="explore.upload")
    if uploaded is not None and st.button("Replay", key="explore.replay"):
        try:
            ui_state.set_current_trace(Trace.from_json(uploaded.getvalue().decode("utf-8"), uploaded.name))
            st.rerun()
        except (RagscopeError, UnicodeDecodeError) as exc:
            st.error(md_text(str(exc)))
