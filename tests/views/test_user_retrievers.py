"""A user's LangChain retriever in the app (AppTest): offered in Explore's retriever box, the run shows its
hits with "no score"; a broken retriever file is reported on Explore and the page works on."""

from __future__ import annotations

import shutil

import pytest

from components.safe import md_text
from paths import MINI_PACK, ROOT
from ui_knobs import answer_every_guess


@pytest.fixture()
def app_home(plugin_home, open_app):
    """The plugin home (a fresh RAGSCOPE_HOME) with the mini pack and the in-memory example retriever. The app's
    cached settings and workbenches are dropped before and after: an app started earlier in this process holds
    another home (its retrievers/ folder), as a new process on this home would not."""
    import streamlit as st

    shutil.copytree(MINI_PACK, plugin_home / "packs" / "mini")
    (plugin_home / "retrievers").mkdir()
    shutil.copy(ROOT / "examples" / "retrievers" / "in_memory.py", plugin_home / "retrievers")
    (plugin_home / "retrievers" / "broken.py").write_text("raise RuntimeError('no cluster')\n", encoding="utf-8")
    st.cache_resource.clear()
    yield plugin_home
    st.cache_resource.clear()


def test_a_users_retriever_is_offered_on_explore_and_its_hits_say_no_score(app_home, open_app):
    at = open_app()
    said = md_text("broken.py was not loaded: RuntimeError: no cluster")  # as the page shows it: escaped
    assert any(w.value.startswith("Retriever ") and said in w.value for w in at.warning)
    at.selectbox(key="explore.method").select("vanilla").run()
    box = at.selectbox(key="explore.params.vanilla.retriever")
    assert box.options == ["hybrid", "dense", "bm25", "dense-ft", "in_memory"]
    box.select("in_memory").run()
    answer_every_guess(at)
    at.text_area(key="explore.question").input("Where was Grace Hopper born?")
    at.button(key="explore.run").click().run()
    assert not at.exception
    trace = at.session_state["explore.trace"]
    assert trace.params["retriever"] == "in_memory"
    table = next((d for d in at.dataframe if "score" in d.value.columns), None)
    assert table is not None, [(s.kind, s.title, getattr(s, 'message', '')) for s in trace.steps]
    assert set(table.value["score"]) == {"no score"}
