"""The one place that owns session keys and cached loaders for the Streamlit app (STYLE 18).

Pages read and write session state only through this module, so every key has one owner and a
typed value. Loaders are `st.cache_resource`: one pack, index, encoder and model per process,
shared by all browser sessions.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import streamlit as st

from engine.knowledge.loader import load_pack
from engine.knowledge.records import Pack
from engine.runner import Workbench
from engine.runs import RunStore
from engine.settings import DEMO_PACK, Settings
from engine.trace import Trace

PACK_ROOTS = (DEMO_PACK.parent,)
EXPLORE_PAGE = "pages/explore.py"
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
