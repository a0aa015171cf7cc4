"""History: saved runs — open one in Explore, delete (after a confirm), export and import as JSON; select two to
diff them (issue 28)."""

from __future__ import annotations

import streamlit as st
from streamlit.runtime.uploaded_file_manager import UploadedFile

import ui_state
from components.safe import md_text
from components.trace_diff import render_trace_diff
from engine.app.runs import RunSummary
from engine.errors import RagscopeError
from engine.trace import Trace

PAGE = "history"
LISTED = 200

store = ui_state.run_store()


def _row(run: RunSummary) -> dict[str, object]:
    return {"time (UTC)": run.started.replace("T", " ")[:19], "pack": run.pack, "method": run.method,
            "backend": run.backend, "question": run.question, "answer": run.answer, "latency ms": run.latency_ms,
            "run id": run.id}


def _import(uploaded: UploadedFile | None) -> None:
    """Callback: runs before the page script, so the table below already shows what was imported."""
    if uploaded is None:
        ui_state.post_notice(PAGE, ui_state.Notice("error", "Choose a JSON export file first."))
        return
    try:
        count = store.import_json(uploaded.getvalue().decode("utf-8"), uploaded.name)
    except (RagscopeError, UnicodeDecodeError) as exc:
        ui_state.post_notice(PAGE, ui_state.Notice("error", f"{uploaded.name}: nothing was imported — {exc}"))
        return
    ui_state.bump_history_table()
    ui_state.post_notice(PAGE, ui_state.Notice(
        "success", f"{uploaded.name}: {count.imported} imported, {count.already_there} already there."))


def _delete(run_id: str) -> None:
    deleted = store.delete(run_id)
    ui_state.set_pending_delete(None)
    ui_state.bump_history_table()  # row i is another run now: drop the selection
    text = f"Deleted run {run_id}." if deleted else f"Run {run_id} was already gone."
    ui_state.post_notice(PAGE, ui_state.Notice("success" if deleted else "error", text))


def _notice() -> None:
    slot = st.container()  # always there, so the elements below keep their places when a notice comes and goes
    notice = ui_state.pop_notice(PAGE)
    if notice is not None:
        (slot.success if notice.level == "success" else slot.error)(md_text(notice.text))


def _load(run_id: str) -> Trace | None:
    try:
        return store.get(run_id)
    except (RagscopeError, ValueError, TypeError, KeyError) as exc:  # a damaged row must not take the page down
        st.error(md_text(f"Run {run_id} cannot be opened: {exc}"))
        return None


def _open(run_id: str) -> None:
    trace = _load(run_id)
    if trace is not None:
        ui_state.show_trace(trace)


def _confirm_delete(run: RunSummary) -> None:
    with st.container(border=True):
        st.warning(md_text(f"Delete the {run.method} run of “{run.question[:120]}” ({run.id})? "
                           "This cannot be undone."))
        with st.container(horizontal=True):
            st.button("Delete for good", key="history.confirm_delete", type="primary", on_click=_delete,
                      args=(run.id,), icon=":material/delete_forever:")
            st.button("Cancel", key="history.cancel_delete", on_click=ui_state.set_pending_delete, args=(None,))


def _selected_actions(run: RunSummary) -> None:
    st.markdown(md_text(f"Selected: {run.method} · {run.pack} · {run.question[:160]}"))
    with st.container(horizontal=True):
        opened = st.button("Open", key="history.open", type="primary", icon=":material/explore:")
        st.button("Delete", key="history.delete", icon=":material/delete:", on_click=ui_state.set_pending_delete,
                  args=(run.id,))
        st.download_button("Export selected", lambda: store.export([run.id]), file_name=f"run-{run.id}.json",
                           mime="application/json", key="history.export_selected", on_click="ignore",
                           icon=":material/download:")
    if opened:
        _open(run.id)
    if ui_state.pending_delete() == run.id:
        _confirm_delete(run)


def _diff(pair: list[RunSummary]) -> None:
    """The earlier run is A, the reference; the toggle swaps them."""
    earlier, later = sorted(pair, key=lambda r: (r.started, r.id))
    st.subheader("Diff of the two selected runs")
    swapped = st.toggle("Swap A and B", key="history.diff_swap", help="A, the reference, is the earlier run")
    first, second = (later, earlier) if swapped else (earlier, later)
    a, b = _load(first.id), _load(second.id)
    if a is not None and b is not None:
        render_trace_diff(a, b, key="history.diff")


def _table(runs: list[RunSummary]) -> list[RunSummary]:
    event = st.dataframe([_row(r) for r in runs], key=f"history.runs.{ui_state.history_table_version()}",
                         hide_index=True, width="stretch", on_select="rerun", selection_mode="multi-row",
                         column_config={"latency ms": st.column_config.NumberColumn(format="%.0f"),
                                        "question": st.column_config.TextColumn(width="large"),
                                        "answer": st.column_config.TextColumn(width="medium"),
                                        "run id": st.column_config.TextColumn(
                                            help="what `python -m engine diff RUN_A RUN_B` takes")})
    return [runs[row] for row in event.selection.rows if row < len(runs)]


def _import_section() -> None:
    # Keyed: a notice appearing or the table emptying above must not fold it shut mid-import.
    with st.expander("Import runs", icon=":material/upload:", key="history.import_box"):
        uploaded = st.file_uploader("A ragscope runs export (JSON)", type=["json"], key="history.import_file")
        st.button("Import", key="history.import", on_click=_import, args=(uploaded,), disabled=uploaded is None)


def _listing(runs: list[RunSummary]) -> None:
    if not runs:
        st.info("No saved runs yet. Ask a question on **Explore** or run several methods on **Compare** — every "
                "run is saved here.")
        return
    chosen = _table(runs)
    if not chosen:
        st.caption("Select a row to open, delete or export that run; select two to diff them.")
    elif len(chosen) == 1:
        _selected_actions(chosen[0])
    elif len(chosen) > 2:
        st.caption(f"{len(chosen)} runs selected: select one run to open it, or two to diff them.")
    if len(runs) == LISTED:
        st.caption(f"Showing the newest {LISTED} runs; Export all exports every saved run.")
    st.download_button("Export all runs", lambda: store.export([r.id for r in store.list(limit=10**9)]),
                       file_name="ragscope-runs.json", mime="application/json", key="history.export_all",
                       on_click="ignore", icon=":material/download:")
    if len(chosen) == 2:
        _diff(chosen)


st.header("History")
st.caption("Every run from Explore and Compare is saved here. Select a row to open it again, delete it or "
           "export it; select two to see what changed between them; import an export from another machine.")
_notice()
with st.container():  # one block whatever it holds, so the import section below never changes place
    _listing(store.list(limit=LISTED))
_import_section()
