"""ragscope: the Streamlit entry point — page config, navigation and the shared sidebar."""

from __future__ import annotations

from pathlib import Path

import streamlit as st

import ui_state
from components.warmup import render_warmup

# a local file: a material-icon favicon is fetched from a font CDN, and nothing may leave the machine
st.set_page_config(page_title="ragscope", page_icon=str(Path(__file__).parent / "assets" / "favicon.png"),
                   layout="wide")


with st.sidebar:
    st.markdown("### ragscope")
    st.caption("Watch retrieval-augmented reasoning happen, step by step.")
    packs = ui_state.available_packs()
    if not packs:
        st.error("No knowledge pack found. Run `make run` from the project folder to set up the demo pack.")
        st.stop()
    names = list(packs)
    wanted = st.query_params.get("pack", "demo")  # a shared link reproduces the view
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

page = st.navigation({
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
})
page.run()
