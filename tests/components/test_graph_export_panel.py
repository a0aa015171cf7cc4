"""render_graph's export buttons: only where the caller hands over the trace, one pair per round (issue 28)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest


def _panel(with_trace: bool, iteration: int, max_nodes: int = 100) -> AppTest:
    def script(with_trace: bool, iteration: int, max_nodes: int) -> None:
        import streamlit as st

        from components.graph import render_graph
        from engine.trace import Edge, GraphDeltaStep, Node, Trace

        steps = (GraphDeltaStep(iteration=0, added_nodes=(Node("a", "Alpha"), Node("b", "Beta"))),
                 GraphDeltaStep(iteration=1, added_nodes=(Node("c", "<b>Gamma</b>"),),
                                added_edges=(Edge("a", "r", "c"), Edge("a", "s", "c"))))
        trace = Trace(id="tx", question="q", method="tog2", backend="offline", model="", pack="mini", steps=steps)
        st.session_state["drew"] = render_graph(steps, iteration, key="g", max_nodes=max_nodes,
                                                trace=trace if with_trace else None)

    return AppTest.from_function(script, args=(with_trace, iteration, max_nodes), default_timeout=60).run()


def _exports(at: AppTest) -> list[tuple[str, str]]:
    return [(b.label, b.key) for b in at.get("download_button")]


def test_without_the_trace_the_panel_offers_no_download():
    at = _panel(False, 1)
    assert not at.exception and at.session_state["drew"] and _exports(at) == []


def test_with_the_trace_each_round_has_its_own_graphml_and_json_buttons():
    for iteration in (0, 1):
        at = _panel(True, iteration)
        assert not at.exception
        assert _exports(at) == [("GraphML", f"g.export.graphml.{iteration}"), ("JSON", f"g.export.json.{iteration}")]
        round_name = "set-up" if iteration == 0 else "round 1"
        assert any(c.value == f"Export the graph as of {round_name}:" for c in at.caption)


def test_a_capped_drawing_still_offers_the_whole_graph():
    at = _panel(True, 1, max_nodes=1)
    assert any(c.value.startswith("1 of 3 nodes") for c in at.caption)
    assert all("every node and edge as of round 1" in b.help for b in at.get("download_button"))
    assert len(_exports(at)) == 2
