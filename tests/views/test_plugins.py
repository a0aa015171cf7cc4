"""Users' own methods in the app (AppTest): offered on every page with their parameter widgets; a
broken one is reported on Explore, escaped, and the page works on."""

from __future__ import annotations

import shutil

import pytest

from components.safe import md_text
from methods.test_plugins import method_code
from paths import MINI_PACK
from plugin_home import add_example, write_plugin
from ui_knobs import answer_every_guess


@pytest.fixture()
def app_home(plugin_home, open_app):
    """The plugin home, holding the mini pack the app opens on (open_app's home is another folder)."""
    shutil.copytree(MINI_PACK, plugin_home / "packs" / "mini")
    return plugin_home


def test_a_plugins_parameters_become_widgets_on_explore_and_it_runs(app_home, open_app):
    add_example(app_home)
    at = open_app()
    at.selectbox(key="explore.method").select("keyword_rerank").run()
    assert at.slider(key="explore.params.keyword_rerank.pool").value == 20
    assert at.slider(key="explore.params.keyword_rerank.k").value == 4
    assert any(c.value.startswith("BM25 fetches a wide pool") and "—" not in c.value for c in at.caption)
    at.slider(key="explore.params.keyword_rerank.k").set_value(2)
    answer_every_guess(at)  # the run's answer policy holds for a user's method too (issue 24)
    at.text_area(key="explore.question").input("When was Grace Hopper born?")
    at.button(key="explore.run").click().run()
    assert not at.exception
    trace = at.session_state["explore.trace"]
    assert trace.method == "keyword_rerank" and trace.params == {"pool": 20, "k": 2}
    assert [s.value for s in at.success] == ["1906"]


def test_a_broken_plugin_is_reported_on_explore_as_escaped_text_and_the_page_works(app_home, open_app):
    broken = write_plugin(app_home, "broken.py", "raise RuntimeError('<b>*not*</b> [ready](x)')\n")
    at = open_app()
    assert not at.exception
    expected = f"Plugin {broken} was not loaded: RuntimeError: <b>*not*</b> [ready](x) (line 1)"
    assert [w.value for w in at.warning] == [md_text(expected)]
    assert at.slider(key="explore.params.vanilla.k").value == 5


def test_a_plugin_method_is_offered_for_evaluating(app_home, open_app):
    add_example(app_home)
    at = open_app("views/evaluate.py")
    assert not at.exception
    assert "Keyword re-rank" in at.multiselect(key="evaluate.methods").options


def test_a_plugin_method_can_be_compared_with_its_parameter_widgets(app_home, open_app):
    add_example(app_home)
    at = open_app("views/compare.py")
    assert "Keyword re-rank" in at.multiselect(key="compare.methods").options
    at.multiselect(key="compare.methods").set_value(["vanilla", "keyword_rerank"]).run()
    assert not at.exception
    assert at.slider(key="compare.params.keyword_rerank.pool").value == 20


def test_a_plugin_that_cannot_be_created_is_left_out_of_the_tour_which_goes_on(app_home, open_app):
    write_plugin(app_home, "ctor.py", method_code(run="yield from ()\n    def __init__(self):\n        {}['x']"))
    at = open_app("views/demo.py", timeout=300)
    at.slider(key="demo.pace").set_value(0.5)
    at.button(key="demo.start").click().run()
    assert not at.exception
    assert any("Mine is left out of the tour" in e.value and "KeyError" in e.value for e in at.error)
    stops = [stop.method for stop in at.session_state["demo.tour"].stops]
    assert "mine" not in stops and "vanilla" in stops


def test_the_demo_tour_stops_at_a_plugin_method_too(app_home, open_app):
    add_example(app_home)
    at = open_app("views/demo.py", timeout=300)
    at.slider(key="demo.pace").set_value(0.5)
    at.button(key="demo.start").click().run()  # the tour plays to its end: the plugin, registered last
    assert not at.exception
    assert at.session_state["demo.tour"].stops[-1].method == "keyword_rerank"
    assert at.radio(key="demo.stop").value == "keyword_rerank"
    assert any(s.value.endswith(": Keyword re-rank") for s in at.subheader)
    assert any(c.value == "BM25 fetches a wide pool; the chunks sharing most words with the question are read."
               for c in at.caption)  # no paper: no dangling dash
