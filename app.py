"""ragscope: the Streamlit entry point — page config, navigation and the shared sidebar."""

from __future__ import annotations

import streamlit as st

import ui_state

st.set_page_config(page_title="ragscope", page_icon="🔎", layout="wide")

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
    pack_name = st.selectbox("Knowledge pack", names, index=default, key="app.pack")
    backend = st.selectbox("Model", ["offline"], key="app.backend",
                           help="offline: no language model — MiniLM retrieval, the pack's KG and an extractive reader.")
    st.query_params["pack"] = pack_name
    ui_state.select(ui_state.Selection(pack_path=str(packs[pack_name]), backend=backend))

page = st.navigation([st.Page("pages/explore.py", title="Explore", icon=":material/explore:", default=True)])
page.run()
