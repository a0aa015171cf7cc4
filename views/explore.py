"""Explore: ask a question with a method, watch its steps arrive, then step through its rounds.

The controls sit beside the result, so the answer of the run just asked is in view without scrolling;
the step-through view of its rounds spans the page below them.
"""

from __future__ import annotations

import streamlit as st

import ui_state
from components.answer import render_answer
from components.paper_card import render_paper_card
from components.params import param_inputs, widget_values
from components.safe import md_text
from components.steps import render_step
from components.trace_view import render_trace, sources_of
from engine.app import runs
from engine.app.runs import Partial, Run
from engine.errors import RagscopeError
from engine.trace import Trace

PAGE = "explore"
QUESTION = "explore.question"
DEMO_PAGE = "views/demo.py"

workbench = ui_state.current_workbench()
pack = workbench.pack


def _use_example() -> None:
    """Copy the picked example into the box and clear the picker, so picking it again refills the box."""
    picked = st.session_state["explore.example"]
    if picked:
        st.session_state[QUESTION] = picked
    st.session_state["explore.example"] = None


def _open_linked_run() -> None:
    """`?run=<id>` that this session did not write (a reload, a shared link) opens that run: the saved one,
    or the one still going in this process, which the page then watches to its end."""
    wanted = st.query_params.get("run")
    if not wanted or wanted == ui_state.linked_run():
        return
    running = ui_state.running_run(wanted)
    if running is not None:
        ui_state.set_live_run(running)
        ui_state.link_run(wanted)
        return
    try:
        ui_state.open_trace(ui_state.run_store().get(wanted))
        ui_state.link_run(wanted)
    except RagscopeError as exc:
        st.warning(md_text(f"{exc}: it may have been deleted on the History page."))  # the id is from the URL
        ui_state.link_run(None)


def _follow_opened_trace() -> None:
    """Set the method, parameter and question boxes to those of a run just opened (finished, linked,
    replayed or sent from another page), before they are drawn."""
    opened = ui_state.take_opened_trace()
    if opened is None:
        return
    st.session_state[QUESTION] = opened.question
    if opened.method in runs.method_choices():
        st.session_state[ui_state.EXPLORE_METHOD] = opened.method
        specs = (*runs.method_info(opened.method).params, *runs.POLICY_PARAMS)
        st.session_state.update(widget_values(specs, opened.settings(),
                                              key=f"explore.params.{opened.method}"))


def _stream(run: Run) -> None:
    """Show steps as they come and, below them, the reply of the model call in flight as it is written
    (backends that stream); the call's step replaces it. A run this page started in an earlier script run
    (or before a reload) first shows the steps it has taken so far. Steps are kept on the Run, so a Stop
    loses nothing."""
    label = runs.label(run.head.method)
    with st.status(md_text(f"{label} is answering: {run.head.question}"), expanded=True) as status:
        steps, writing = st.container(), st.empty()
        earlier = list(run.steps)
        seen = {id(step) for step in earlier}
        with steps:
            for i, step in enumerate(earlier):
                render_step(step, key=f"explore.live.{run.head.id}.{i}")
        for i, event in enumerate(run.live(), start=len(earlier)):
            if isinstance(event, Partial):
                with writing.container():
                    st.caption(md_text(f"{event.role or 'model'} is writing…"))
                    st.code(event.text, language=None, wrap_lines=True)  # model text: never markdown
            elif id(event) not in seen:
                writing.empty()
                with steps:
                    render_step(event, key=f"explore.live.{run.head.id}.{i}")
        status.update(label=f"Done in {run.trace.totals.latency_ms:.0f} ms", state="complete", expanded=False)
    _finish(run)


def _params_line(params: dict) -> str:
    return ", ".join(f"{k}={v}" for k, v in params.items() if v is not None) or "the method's defaults"


def _stop_previous(run: Run | None) -> None:
    """A new question while this session's run is still going: the user has moved on, so that run stops
    (and is saved with its steps so far) instead of sharing the model with the new one unseen."""
    if run is None or run.finished:
        return
    run.stop()
    st.toast(f"Stopped the {run.method.label} run on the previous question; its steps so far are in History.")


def _finish(run: Run) -> None:
    """Show the finished run (saved to History by the run itself when it ended) and redraw: the page then
    shows it once, in the step-through view, with its question, method and parameters in the boxes (a box
    edited while the run streamed would otherwise disagree)."""
    ui_state.set_live_run(None)
    ui_state.open_trace(run.trace)
    ui_state.link_run(run.trace.id if _saved(run) else None)
    st.rerun()


def _saved(run: Run) -> bool:
    """Whether the run is in History. The run saves itself when it ends, in its own thread, which can only log
    a failure (another app server on this home held the store too long, a full disk): try once more here,
    and if that fails too, keep the run on the page and say why it is not in History (issue 26)."""
    try:
        store = ui_state.run_store()
        if store.has(run.trace.id):
            return True
        if not run.finished:  # still going (a Stop it has not reached yet): it saves itself when it ends
            return False
        store.save(run.trace)
        return True
    except RagscopeError as exc:
        ui_state.post_notice(PAGE, ui_state.Notice("error", f"This run is shown but was not saved to History: {exc}"))
        return False


def _summary(trace: Trace) -> None:
    """The result's header: method, backend, cost, the question asked, and how to come back to it."""
    asked = _params_line(trace.settings())
    st.markdown(md_text(f"{runs.label(trace.method)} · {trace.backend} · {trace.totals.latency_ms:.0f} ms · "
                        f"{trace.totals.llm_calls} LLM calls · question: {trace.question}"))
    if ui_state.run_store().has(trace.id):  # saved: a reload or a shared link opens it
        if ui_state.linked_run() != trace.id:
            ui_state.link_run(trace.id)
        st.caption(md_text(f"parameters: {asked} · link to this run: ?run={trace.id}"))
    else:
        if ui_state.linked_run() is not None:
            ui_state.link_run(None)
        st.caption(md_text(f"parameters: {asked} · not saved to History (a replayed trace, or a run that could "
                           "not be saved)"))


st.header("Explore")
st.caption(md_text(f"Knowledge pack: {pack.info.title or pack.info.name} · {len(pack.documents)} documents · "
                   f"{len(pack.questions)} example questions"))
_open_linked_run()
_follow_opened_trace()
if (notice := ui_state.pop_notice(PAGE)) is not None:
    st.error(md_text(notice.text))
ids = runs.method_choices()
for problem in runs.plugin_problems():  # a broken plugin of the user's is left out, and said so here
    st.warning(md_text(problem), icon=":material/extension_off:")
ui_state.default_method("vanilla" if "vanilla" in ids else ids[0])  # the baseline: others are compared with it

controls, result = st.columns([2, 3], gap="large")
with controls:
    method = st.selectbox("Method", ids, key=ui_state.EXPLORE_METHOD, format_func=runs.label)
    info = runs.method_info(method)
    st.caption(f"{info.description}" + (f" — *{info.paper}*" if info.paper else ""))
    if (card := runs.paper_card(method)) is not None:
        with st.expander("Reproduce the paper"):
            render_paper_card(card, key=f"explore.paper.{method}")
    with st.expander("Parameters"):
        params = param_inputs(info.params, key=f"explore.params.{method}")
        policy = param_inputs(runs.POLICY_PARAMS, key=f"explore.params.{method}")  # the run's, below the method's
    st.selectbox("Example questions from the pack", [q.question for q in pack.questions], index=None,
                 key="explore.example", on_change=_use_example, placeholder="Choose one, or type your own below")
    question = st.text_area("Question", key=QUESTION, height=80,
                            placeholder="e.g. Where was the doctoral advisor of … born?")
    run_col, stop_col = st.columns(2)
    asked = run_col.button("Run", type="primary", key="explore.run", width="stretch")
    if asked:
        _stop_previous(ui_state.live_run())
        try:
            started = runs.start(workbench, question, method, params, policy=runs.answer_policy(policy),
                                 question_id=runs.pack_question_id(pack, question))
            ui_state.start_live_run(started)
            ui_state.link_run(started.head.id)  # a reload mid-run finds the run by this id
        except RagscopeError as exc:
            st.error(md_text(str(exc)))
    # Drawn after a new run is registered, so it is live while that run streams beside it.
    stopped = stop_col.button("Stop", key="explore.stop", disabled=ui_state.live_run() is None, width="stretch")

live = ui_state.live_run()
trace: Trace | None = ui_state.current_trace()
with result:
    if stopped and live is not None:
        live.stop()
        live.wait(timeout=60)  # the method notices the stop at its next step and says so
        st.toast("Stopped — the steps so far are kept.")
        _finish(live)
    elif live is not None:  # asked just now, or earlier and the page was redrawn or reloaded since
        with st.spinner("Preparing the index (first run only)…"):
            runs.prepare(workbench)
        _stream(live)
    elif trace is None:  # a newcomer's first view: what this is, and where the tour is
        with st.container(border=True):
            st.markdown("**ragscope** shows how retrieval-augmented reasoning methods answer a question: what "
                        "each step retrieved and why, the rules and graph it built, and how sure it is.")
            st.page_link(DEMO_PAGE, label="New here? Take the demo tour", icon=":material/slideshow:")
        st.info("Pick an example or type a question, then press **Run**.")
    else:
        _summary(trace)
        gold, scores = runs.grade(trace, pack)
        if trace.answer is not None:
            render_answer(trace.answer, key="explore.view.answer", sources=sources_of(trace), gold=gold,
                          scores=scores, failure=runs.backend_failure(trace),
                          gold_docs=runs.supporting_docs(trace, pack))
        elif trace.steps:
            st.info("This run stopped before it answered; its steps are kept below.")
        st.download_button("Download trace JSON", trace.to_json(indent=2), file_name=f"trace-{trace.id}.json",
                           mime="application/json", key="explore.download")

if trace is not None and live is None:
    st.divider()
    render_trace(trace, key="explore.view", gold=runs.supporting_docs(trace, pack))

with st.expander("Replay a saved trace"):
    uploaded = st.file_uploader("Trace JSON", type=["json"], key="explore.upload")
    if uploaded is not None and st.button("Replay", key="explore.replay"):
        try:
            ui_state.open_trace(runs.replay(uploaded.getvalue().decode("utf-8"), uploaded.name))
            st.rerun()
        except (RagscopeError, UnicodeDecodeError) as exc:
            st.error(md_text(str(exc)))
