"""The one place that owns session keys and cached loaders for the Streamlit app (STYLE 18).

Pages read and write session state only through this module, so every key has one owner and a
typed value. Loaders are `st.cache_resource`: one pack, index, encoder and model per process,
shared by all browser sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import streamlit as st

from engine.graph.kg import KnowledgeGraph
from engine.evaluation.runner import QuestionResult
from engine.knowledge.loader import load_pack
from engine.knowledge.records import Pack, Question
from engine.knowledge.summary import PackSummary, summarize_pack
from engine.runner import Workbench
from engine.runs import RunStore
from engine.settings import DEMO_PACK, Settings
from engine.trace import Trace

PACK_ROOTS = (DEMO_PACK.parent,)
EXPLORE_PAGE = "views/explore.py"
_SELECTION = "app.selection"
_BACKENDS = "app.backend_configs"
_TRACE = "explore.trace"


@dataclass(frozen=True)
class Selection:
    """What the shared sidebar chose; pages read it instead of widget keys."""

    pack_path: str
    backend: str = "offline"
    options: tuple[tuple[str, str], ...] = ()  # hashable backend options (model path, URL, …)

    @property
    def backend_options(self) -> dict[str, str]:
        return dict(self.options)


@dataclass(frozen=True)
class BackendConfig:
    """A backend the user has set up on the Models page (offline needs none)."""

    name: str
    label: str
    options: tuple[tuple[str, str], ...] = field(default=())


def select(selection: Selection) -> None:
    st.session_state[_SELECTION] = selection


def selection() -> Selection:
    return st.session_state[_SELECTION]


def backend_configs() -> dict[str, BackendConfig]:
    """Offline always; hf/openai once configured on the Models page."""
    configs = st.session_state.setdefault(_BACKENDS, {})
    return {"offline": BackendConfig("offline", "offline (no language model)"), **configs}


def configure_backend(config: BackendConfig) -> None:
    st.session_state.setdefault(_BACKENDS, {})[config.name] = config


def show_trace(trace: Trace) -> None:
    """Open a saved or evaluated run in Explore, replayed without recomputing."""
    st.session_state[_TRACE] = trace
    st.switch_page(EXPLORE_PAGE)


def current_trace() -> Trace | None:
    return st.session_state.get(_TRACE)


def set_current_trace(trace: Trace | None) -> None:
    st.session_state[_TRACE] = trace


@st.cache_resource(show_spinner=False)
def settings() -> Settings:
    return Settings()


def available_packs() -> dict[str, Path]:
    """Pack folders under the bundled packs folder and ~/.ragscope/packs, by folder name."""
    roots = (*PACK_ROOTS, settings().home / "packs")
    found = {}
    for root in roots:
        if root.is_dir():
            for folder in sorted(root.iterdir()):
                if (folder / "documents.jsonl").is_file():
                    found.setdefault(folder.name, folder)
    return found


@st.cache_resource(show_spinner="Loading the knowledge pack…")
def pack(path: str) -> Pack:
    return load_pack(path)


@st.cache_resource(show_spinner=False)
def workbench(path: str, backend: str = "offline", options: tuple[tuple[str, str], ...] = ()) -> Workbench:
    """Shared by all browser sessions: one index, one encoder, one tool bundle per pack and backend."""
    return Workbench(pack(path), settings(), backend=backend, backend_options=dict(options))


def current_workbench() -> Workbench:
    chosen = selection()
    return workbench(chosen.pack_path, chosen.backend, chosen.options)


@st.cache_resource(show_spinner=False)
def run_store() -> RunStore:
    return RunStore(settings().runs_db)


def options_tuple(options: dict[str, Any]) -> tuple[tuple[str, str], ...]:
    return tuple(sorted((k, str(v)) for k, v in options.items() if v not in ("", None)))


_LIVE = "explore.live_run"


def live_run() -> Any:
    """The run in progress in this session (an engine Run), kept so Stop can end it and keep its steps."""
    return st.session_state.get(_LIVE)


def set_live_run(run: Any) -> None:
    st.session_state[_LIVE] = run


# ---- Knowledge and Models pages ------------------------------------------------------------------


@st.cache_resource(show_spinner=False)
def knowledge_graph(path: str) -> KnowledgeGraph:
    """The pack's KG, built once per pack and shared by every session."""
    return KnowledgeGraph.from_pack(pack(path))


@st.cache_resource(show_spinner=False)
def pack_summary(path: str) -> PackSummary:
    """Counts for the overview table; chunking a large pack once is enough (packs are written once)."""
    return summarize_pack(pack(path))


def forget_backend(name: str) -> None:
    """Stop offering a backend in this session's sidebar (e.g. after its model was unloaded)."""
    st.session_state.setdefault(_BACKENDS, {}).pop(name, None)


def release_workbenches() -> None:
    """Drop every cached workbench so a model one of them holds can be freed; they rebuild on next use."""
    workbench.clear()


_NOTICE = "{page}.notice"


def set_notice(page: str, text: str) -> None:
    """A message for `page` to show once, after a rerun (the rerun that lets the sidebar list something new)."""
    st.session_state[_NOTICE.format(page=page)] = text


def take_notice(page: str) -> str | None:
    return st.session_state.pop(_NOTICE.format(page=page), None)


# ---- Compare, Evaluate and History pages ---------------------------------------------------------

_COMPARE = "compare.traces"
_EVALUATION = "evaluate.job"
_PENDING_DELETE = "history.pending_delete"
_HISTORY_TABLE = "history.table_version"


def compare_traces() -> tuple[Trace, ...]:
    """The traces of the last comparison, one per method, kept so its buttons work after a rerun."""
    return st.session_state.get(_COMPARE, ())


def set_compare_traces(traces: tuple[Trace, ...]) -> None:
    st.session_state[_COMPARE] = traces


@dataclass(frozen=True)
class EvaluationJob:
    """One evaluation: its plan, and the results and traces so far (`results[i]` belongs to `traces[i]`).

    The page asks one planned question per step and stores the job after each, so a rerun (a click
    elsewhere, or Stop) loses at most the question in flight and the next run goes on from `done`.
    """

    selection: Selection
    plan: tuple[tuple[Question, str], ...]  # (question, method id) in the order they are asked
    results: tuple[QuestionResult, ...] = ()
    traces: tuple[Trace, ...] = ()
    stopped: bool = False
    opened_row: int | None = None  # the per-question row last opened in Explore (so it opens once)

    @property
    def done(self) -> int:
        return len(self.results)

    @property
    def total(self) -> int:
        return len(self.plan)

    @property
    def running(self) -> bool:
        return not self.stopped and self.done < self.total


def evaluation() -> EvaluationJob | None:
    return st.session_state.get(_EVALUATION)


def set_evaluation(job: EvaluationJob | None) -> None:
    st.session_state[_EVALUATION] = job


def record_evaluation(result: QuestionResult, trace: Trace) -> EvaluationJob:
    """Add one finished question to the current job and return the updated job."""
    job = evaluation()
    assert job is not None, "record_evaluation needs a job started with set_evaluation"
    job = replace(job, results=(*job.results, result), traces=(*job.traces, trace))
    set_evaluation(job)
    return job


def stop_evaluation() -> None:
    """The Stop button: the job keeps what it has and is not resumed."""
    job = evaluation()
    if job is not None:
        set_evaluation(replace(job, stopped=True))


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


@dataclass(frozen=True)
class Notice:
    """A message to show once on a page's next run (e.g. the result of an action taken in a callback)."""

    level: str  # "success" | "error"
    text: str


def post_notice(page: str, notice: Notice) -> None:
    st.session_state[f"{page}.notice"] = notice


def pop_notice(page: str) -> Notice | None:
    return st.session_state.pop(f"{page}.notice", None)
