"""The one place that owns session keys and cached loaders for the Streamlit app (STYLE 18)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import streamlit as st

from engine.knowledge.loader import load_pack
from engine.knowledge.records import Pack
from engine.runner import Workbench
from engine.runs import RunStore
from engine.settings import DEMO_PACK, Settings

PACK_ROOTS = (DEMO_PACK.parent,)
_SELECTION = "app.selection"


@dataclass(frozen=True)
class Selection:
    """What the shared sidebar chose; pages read it instead of widget keys."""

    pack_path: str
    backend: str


def select(selection: Selection) -> None:
    st.session_state[_SELECTION] = selection


def selection() -> Selection:
    return st.session_state[_SELECTION]


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
def workbench(path: str, backend: str = "offline") -> Workbench:
    """Shared by all browser sessions: one index, one encoder, one tool bundle per pack."""
    return Workbench(pack(path), settings(), backend=backend)


@st.cache_resource(show_spinner=False)
def run_store() -> RunStore:
    return RunStore(settings().runs_db)
