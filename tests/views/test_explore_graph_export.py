"""Explore's graph panel offers the round shown as GraphML and JSON downloads (issue 28)."""

from __future__ import annotations

import io
import json

import networkx as nx
import pytest
from streamlit.runtime.media_file_manager import MediaFileManager
from streamlit.testing.v1 import AppTest

from ui_knobs import answer_every_guess


@pytest.fixture()
def offered(monkeypatch: pytest.MonkeyPatch) -> dict[str, object]:
    """file name → the callable a deferred download button would call when pressed."""
    files: dict[str, object] = {}
    register = MediaFileManager.add_deferred

    def recording(self, data_callable, mimetype, coordinates, file_name=None, **kw):
        files[file_name] = data_callable
        return register(self, data_callable, mimetype, coordinates, file_name, **kw)

    monkeypatch.setattr(MediaFileManager, "add_deferred", recording)
    return files


def _tog2_run(at: AppTest) -> AppTest:
    answer_every_guess(at.run())
    at.selectbox(key="explore.method").set_value("tog2")
    answer_every_guess(at.run())
    at.text_area(key="explore.question").input("In which city was Ada Lovelace born?")
    return at.button(key="explore.run").click().run()


def _exports(at: AppTest) -> list[tuple[str, str]]:
    return [(b.label, b.key) for b in at.get("download_button") if ".export." in (b.key or "")]


def test_a_tog2_run_offers_the_shown_round_as_graphml_and_json(open_app, offered):
    at = _tog2_run(open_app())
    assert not at.exception
    trace = at.session_state["explore.trace"]
    last = trace.iterations
    base = f"explore.view.graph.{trace.id}.export"
    assert _exports(at) == [("GraphML", f"{base}.graphml.{last}"), ("JSON", f"{base}.json.{last}")]
    graphml, data = offered[f"graph-{trace.id}-round{last}.graphml"], offered[f"graph-{trace.id}-round{last}.json"]
    graph = nx.read_graphml(io.BytesIO(graphml()), force_multigraph=True)
    assert graph.number_of_edges() >= 1 and graph.graph["trace_id"] == trace.id
    assert json.loads(data())["round"] == last

    offered.clear()
    at.button(key="explore.view.round.prev").click().run()  # the buttons follow the round shown
    assert _exports(at) == [("GraphML", f"{base}.graphml.{last - 1}"), ("JSON", f"{base}.json.{last - 1}")]
    assert json.loads(offered[f"graph-{trace.id}-round{last - 1}.json"]())["round"] == last - 1
