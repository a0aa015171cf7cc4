"""The one place that owns session keys and cached loaders for the Streamlit app (STYLE 18).

Pages read and write session state only through this module, so every key has one owner and a
typed value. Loaders are `st.cache_resource`: one pack, index, encoder and model per process,
shared by all browser sessions.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from engine.app import models, packs, runs
from engine.app.models import BackendConfig
from engine.app.packs import KnowledgeGraph, MinedRule, Pack, PackSummary
from engine.app.runs import LiveRuns, Run, RunStore, Tour, Warmup, Workbench
from engine.settings import Settings
from engine.trace import Trace

PACK_ROOTS = (packs.BUNDLED_PACKS,)
EXPLORE_PAGE = "views/explore.py"
_SELECTION = "app.selection"
_BACKENDS = "app.backend_configs"
_TRACE = "explore.trace"
_OPENED = "explore.opened"
_LINKED = "explore.linked_run"
_LINKED_EVALUATION = "evaluate.linked"  # moving to another page clears `?eval=`: the session keeps its id
EXPLORE_METHOD = "explore.method"


@dataclass(frozen=True)
class Selection:
    """What the shared sidebar chose; pages read it instead of widget keys."""

    pack_path: str
    backend: str = "offline"
    options: tuple[tuple[str, str], ...] = ()  # hashable backend options (model path, URL, …)


def select(selection: Selection) -> None:
    st.session_state[_SELECTION] = selection


def selection() -> Selection:
    return st.session_state[_SELECTION]


def backend_configs() -> dict[str, BackendConfig]:
    """Offline always; hf/openai/langchain once configured on the Models page (kept across reloads, in a file)."""
    if _BACKENDS not in st.session_state:
        st.session_state[_BACKENDS] = models.read_backends(settings().backends_file)
    return {"offline": models.OFFLINE, **st.session_state[_BACKENDS]}


def configure_backend(config: BackendConfig) -> None:
    backend_configs()
    st.session_state[_BACKENDS][config.name] = config
    models.write_backends(settings().backends_file, st.session_state[_BACKENDS])


def forget_backend(name: str) -> None:
    """Stop offering a backend in the sidebar (e.g. after its model was unloaded), now and after a reload."""
    backend_configs()
    st.session_state[_BACKENDS].pop(name, None)
    models.write_backends(settings().backends_file, st.session_state[_BACKENDS])


def show_trace(trace: Trace) -> None:
    """Open a saved or evaluated run in Explore, replayed without recomputing, with its method, parameters
    and question in Explore's boxes."""
    open_trace(trace)
    st.switch_page(EXPLORE_PAGE)


def default_method(method: str) -> None:
    """Explore's method box starts on `method` unless something (a user, open_trace) chose already."""
    st.session_state.setdefault(EXPLORE_METHOD, method)


def current_trace() -> Trace | None:
    return st.session_state.get(_TRACE)


def open_trace(trace: Trace) -> None:
    """Make `trace` Explore's result. Explore's boxes (method, parameters, question) follow it on the page's
    next run, before they are drawn: a box already drawn in this run cannot change (take_opened_trace)."""
    st.session_state[_TRACE] = trace
    st.session_state[_OPENED] = trace


def take_opened_trace() -> Trace | None:
    """The trace opened since Explore's boxes were last drawn, once."""
    return st.session_state.pop(_OPENED, None)


def linked_run() -> str | None:
    """The run id this session last put in the URL (`?run=`): a different one there came from a link or reload."""
    return st.session_state.get(_LINKED)


def link_run(run_id: str | None) -> None:
    """Put `run_id` in the URL (or take `?run=` out for None), so a reload or a shared link opens that run."""
    _link(_LINKED, "run", run_id)


def linked_evaluation() -> str | None:
    """This session's evaluation id; kept here because moving to another page clears the URL's `?eval=`."""
    return st.session_state.get(_LINKED_EVALUATION)


def link_evaluation(journal_id: str | None) -> None:
    """Make `journal_id` this session's evaluation, in the URL too, so a reload or a shared link opens it."""
    _link(_LINKED_EVALUATION, "eval", journal_id)


def _link(key: str, param: str, value: str | None) -> None:
    st.session_state[key] = value
    if value is None:
        st.query_params.pop(param, None)
    else:
        st.query_params[param] = value


@st.cache_resource(show_spinner=False)
def settings() -> Settings:
    return Settings()


def available_packs() -> dict[str, Path]:
    """Pack folders under the bundled packs folder and the user's, by folder name (engine.app.packs)."""
    return packs.available_packs(settings(), PACK_ROOTS)


@st.cache_resource(show_spinner="Loading the knowledge pack…")
def pack(path: str) -> Pack:
    return packs.load(path)


@st.cache_resource(show_spinner=False)
def workbench(path: str, backend: str = "offline", options: tuple[tuple[str, str], ...] = ()) -> Workbench:
    """Shared by all browser sessions: one index, one encoder, one tool bundle per pack and backend."""
    return runs.open_workbench(pack(path), settings(), backend, dict(options))


@st.cache_resource(show_spinner=False)
def warmup(path: str, backend: str = "offline", options: tuple[tuple[str, str], ...] = ()) -> Warmup:
    """Started once per pack and backend when the app first shows it; every session reads its status."""
    return runs.warm_up(workbench(path, backend, options))


def current_warmup() -> Warmup:
    chosen = selection()
    return warmup(chosen.pack_path, chosen.backend, chosen.options)


def current_workbench() -> Workbench:
    chosen = selection()
    return workbench(chosen.pack_path, chosen.backend, chosen.options)


@st.cache_resource(show_spinner=False)
def run_store() -> RunStore:
    return runs.open_store(settings())


_LIVE = "explore.live_run"


def live_run() -> Run | None:
    """The run in progress in this session, kept so Stop can end it and keep its steps."""
    return st.session_state.get(_LIVE)


def set_live_run(run: Run | None) -> None:
    st.session_state[_LIVE] = run


@st.cache_resource(show_spinner=False)
def live_runs() -> LiveRuns:
    """The runs still going in the whole process: a reloaded page finds its run here."""
    return LiveRuns(run_store())


def start_live_run(run: Run) -> None:
    """Start `run` so that it outlives the page (saved to History when it ends) and make it this session's."""
    live_runs().launch(run)
    set_live_run(run)


def running_run(run_id: str) -> Run | None:
    """The run with this id if it is still going in this process, else None."""
    return live_runs().get(run_id)


# ---- Knowledge and Models pages ------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def knowledge_graph(path: str) -> KnowledgeGraph:
    """The pack's KG, built once per pack and shared by every session."""
    return packs.knowledge_graph(pack(path))


@st.cache_resource(show_spinner=False)
def pack_summary(path: str) -> PackSummary:
    """Counts for the overview table; chunking a large pack once is enough (packs are written once)."""
    return packs.summary(pack(path))


def release_workbenches() -> None:
    """Drop every cached workbench (and its warm-up) so a model one of them holds can be freed; they rebuild
    on next use."""
    warmup.clear()
    workbench.clear()


PACK_CHOICE = "app.pack"  # the sidebar's pack box


def open_pack(name: str) -> None:
    """Make pack `name` the sidebar's choice; only a callback may, as it runs before the sidebar's box is drawn."""
    st.session_state[PACK_CHOICE] = name


def forget_pack(path: str) -> None:
    """Drop what the app cached from the pack at `path` after its files changed; it is read again on next use."""
    pack.clear(path)
    pack_summary.clear(path)
    knowledge_graph.clear(path)
    release_workbenches()  # each holds the pack it was built with


_MINED = "knowledge.mined"


def mined_rules(path: str) -> tuple[MinedRule, ...] | None:
    """Rules mined from the pack at `path` in this session, kept so Save still has them on the rerun its
    click causes; None when none were mined for that pack."""
    found = st.session_state.get(_MINED)
    return found[1] if found is not None and found[0] == path else None


def set_mined_rules(path: str, mined: tuple[MinedRule, ...] | None) -> None:
    if mined is None:
        st.session_state.pop(_MINED, None)
    else:
        st.session_state[_MINED] = (path, mined)


_NOTICE = "{page}.notice"


@dataclass(frozen=True)
class Notice:
    """A message to show once on a page's next run (e.g. the result of an action taken in a callback, or the
    rerun that lets the sidebar list something new)."""

    level: str  # "success" | "error"
    text: str


def post_notice(page: str, notice: Notice) -> None:
    st.session_state[_NOTICE.format(page=page)] = notice


def pop_notice(page: str) -> Notice | None:
    return st.session_state.pop(_NOTICE.format(page=page), None)


# ---- Compare and History pages -------------------------------------------------------------------

_COMPARE = "compare.traces"
_PENDING_DELETE = "history.pending_delete"
_HISTORY_TABLE = "history.table_version"


def compare_traces() -> tuple[Trace, ...]:
    """The traces of the last comparison, one per method, kept so its buttons work after a rerun."""
    return st.session_state.get(_COMPARE, ())


def set_compare_traces(traces: tuple[Trace, ...]) -> None:
    st.session_state[_COMPARE] = traces


def pending_delete() -> str | None:
    """The run id History asked to delete and is waiting to have confirmed."""
    return st.session_state.get(_PENDING_DELETE)


def set_pending_delete(run_id: str | None) -> None:
    st.session_state[_PENDING_DELETE] = run_id


def history_table_version() -> int:
    """Part of the History table's key: bumped when rows change so a stale row selection is dropped."""
    return st.session_state.get(_HISTORY_TABLE, 0)


def bump_history_table() -> None:
    st.session_state[_HISTORY_TABLE] = history_table_version() + 1


# ---- Demo tour -----------------------------------------------------------------------------------

_TOUR = "demo.tour"


def tour() -> Tour | None:
    """This session's tour: its stops so far, asked in the background (engine.tour)."""
    return st.session_state.get(_TOUR)


def start_tour(new: Tour) -> None:
    """Replace this session's tour, stopping the one it replaces so two never compete for the CPU."""
    old = tour()
    if old is not None:
        old.stop()
    st.session_state[_TOUR] = new.start()


# ---- evaluation comparison -------------------------------------------------------------------------

_COMPARED = "evaluate.compared"


def compared_evaluations() -> tuple[str, str] | None:
    """The two saved evaluations (journal ids) this session compares on Evaluate, or None."""
    return st.session_state.get(_COMPARED)


def compare_evaluations(pair: tuple[str, str] | None) -> None:
    st.session_state[_COMPARED] = pair
