"""ragscope: the Streamlit entry point — page config, navigation and the shared sidebar."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import streamlit as st

import ui_state
from components.safe import md_text
from components.warmup import render_warmup

# a local file: a material-icon favicon is fetched from a font CDN, and nothing may leave the machine
st.set_page_config(page_title="ragscope", page_icon=str(Path(__file__).parent / "assets" / "favicon.png"),
                   layout="wide")


def _requested_path() -> str:
    """The page part of the address the browser asked for ('' for the front page), without the app's base path."""
    path = urlparse(st.context.url or "").path.strip("/")
    base = (st.get_option("server.baseUrlPath") or "").strip("/")
    return path.removeprefix(base).strip("/") if base else path


with st.sidebar:
    st.markdown("### ragscope")
    st.caption("Watch retrieval-augmented reasoning happen, step by step.")
    packs = ui_state.available_packs()
    if not packs:
        st.error("No knowledge pack found. Run `make run` from the project folder to set up the demo pack.")
        st.stop()
    names = list(packs)
    wanted = st.query_params.get("pack")  # a shared link reproduces the view
    default = names.index(wanted) if wanted in names else names.index("demo") if "demo" in names else 0
    if st.session_state.get(ui_state.PACK_CHOICE) not in names:  # a link, or a pack that went away
        st.session_state[ui_state.PACK_CHOICE] = names[default]
    pack_name = st.selectbox("Knowledge pack", names, key=ui_state.PACK_CHOICE)
    configs = ui_state.backend_configs()
    backend = st.selectbox("Model", list(configs), key="app.backend", format_func=lambda b: configs[b].label,
                           help="offline needs no model weights. Set up a local model or a server on the Models page.")
    st.query_params["pack"] = pack_name
    ui_state.select(ui_state.Selection(pack_path=str(packs[pack_name]), backend=backend,
                                       options=configs[backend].options))
    render_warmup(ui_state.current_warmup())

pages = {
    "Ask": [
        st.Page("views/explore.py", title="Explore", icon=":material/explore:", default=True),
        st.Page("views/compare.py", title="Compare", icon=":material/compare_arrows:"),
        st.Page("views/demo.py", title="Demo tour", icon=":material/slideshow:"),
    ],
    "Measure": [
        st.Page("views/evaluate.py", title="Evaluate", icon=":material/leaderboard:"),
        st.Page("views/history.py", title="History", icon=":material/history:"),
    ],
    "Set up": [
        st.Page("views/knowledge.py", title="Knowledge", icon=":material/library_books:"),
        st.Page("views/models.py", title="Models", icon=":material/memory:"),
    ],
}
page = st.navigation(pages)
# A mistyped or outdated link opens the front page; say so rather than pretend it was asked for.
requested = _requested_path()
if requested and requested not in {p.url_path for group in pages.values() for p in group}:
    st.warning(md_text(f"There is no page “/{requested}” in ragscope; this is {page.title}."),
               icon=":material/link_off:")
if wanted is not None and wanted not in names:
    st.warning(md_text(f"There is no knowledge pack “{wanted}” here; showing “{pack_name}”. "
                       f"Packs: {', '.join(names)}."), icon=":material/folder_off:")
page.run()
