"""The README's LCEL example where users meet methods: the Explore page (AppTest), Evaluate's list and `eval`."""

from __future__ import annotations

import json
import shutil

import pytest

from engine.cli import main
from paths import MINI_PACK, ROOT
from plugin_home import write_plugin
from ui_knobs import answer_every_guess

EXAMPLE = ROOT / "examples" / "lcel" / "lcel_stuff.py"


@pytest.fixture()
def app_home(plugin_home, open_app):
    """The plugin home holding the example and the mini pack the app opens on."""
    shutil.copytree(MINI_PACK, plugin_home / "packs" / "mini")
    write_plugin(plugin_home, EXAMPLE.name, EXAMPLE.read_text())
    return plugin_home


def test_the_lcel_example_runs_on_explore_with_its_parameter_widgets(app_home, open_app):
    at = open_app()
    at.selectbox(key="explore.method").select("lcel_stuff").run()
    at.slider(key="explore.params.lcel_stuff.k").set_value(2)
    answer_every_guess(at)
    at.text_area(key="explore.question").input("When was Grace Hopper born?")
    at.button(key="explore.run").click().run()
    assert not at.exception
    trace = at.session_state["explore.trace"]
    assert [step.kind for step in trace.steps] == ["retrieval", "llm_call", "answer"]
    assert [s.value for s in at.success] == ["1906"]


def test_the_lcel_example_is_offered_on_evaluate_and_compare(app_home, open_app):
    for page, key in (("views/evaluate.py", "evaluate.methods"), ("views/compare.py", "compare.methods")):
        at = open_app(page)
        assert not at.exception and "LCEL stuff chain" in at.multiselect(key=key).options


def test_eval_scores_the_lcel_example_on_the_mini_pack(plugin_home, tmp_path):
    write_plugin(plugin_home, EXAMPLE.name, EXAMPLE.read_text())
    out = tmp_path / "eval"
    assert main(["eval", "--pack", str(MINI_PACK), "--method", "lcel_stuff", "--limit", "2", "--out", str(out),
                 "-p", "min_confidence=0"]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert "lcel_stuff" in json.dumps(metrics)
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert len(traces) == 2 and {t["method"] for t in traces} == {"lcel_stuff"}
    assert traces[1]["steps"][-1]["text"] == "1906"  # mq2: When was Grace Hopper born?


def test_the_demo_tour_stops_at_the_lcel_example_too(app_home, open_app):
    at = open_app("views/demo.py", timeout=300)
    at.slider(key="demo.pace").set_value(0.5)
    at.button(key="demo.start").click().run()  # the tour plays to its end: the plugin, registered last
    assert not at.exception
    assert at.session_state["demo.tour"].stops[-1].method == "lcel_stuff"
    assert any(s.value.endswith(": LCEL stuff chain") for s in at.subheader)
