"""The reliability diagram: one trace per method in the page's colour order, ECE in the legend, counts on hover."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from components.reliability import reliability_figure
from engine.evaluation.calibration import Reliability, ReliabilityBin

EMPTY = Reliability(bins=(ReliabilityBin(0.0, 0.5, 0, None, None), ReliabilityBin(0.5, 1.0, 0, None, None)),
                    answered=0, refused=2, ece=None)
HALF = Reliability(bins=(ReliabilityBin(0.0, 0.5, 1, 0.25, 0.0), ReliabilityBin(0.5, 1.0, 3, 0.9, 1.0)),
                   answered=4, refused=0, ece=0.1375)


def test_each_method_is_a_trace_of_its_non_empty_bins_with_its_ece_in_the_legend() -> None:
    figure = reliability_figure({"vanilla": HALF, "tog2": EMPTY}, {"vanilla": "Vanilla RAG"})
    vanilla, tog2, diagonal = figure.data
    assert vanilla.name == "Vanilla RAG · ECE 0.138 (4 answered)"
    assert (list(vanilla.x), list(vanilla.y)) == ([0.25, 0.9], [0.0, 1.0])
    assert [c[2] for c in vanilla.customdata] == [1, 3]  # the bin counts the hover shows
    assert tog2.name == "tog2 · ECE – (0 answered, 2 refused)" and not tog2.x
    assert diagonal.name == "perfectly calibrated" and diagonal.showlegend is False  # drawn last: colours match


def _page() -> None:
    from components.reliability import render_reliability
    from engine.evaluation.calibration import reliability

    render_reliability({"vanilla": reliability([])}, labels={}, key="r")  # AppTest runs this source alone


def test_when_nothing_was_answered_it_says_so_instead_of_drawing_an_empty_diagram() -> None:
    at = AppTest.from_function(_page, default_timeout=60).run()
    assert not at.exception
    assert not at.get("plotly_chart") and "No method answered" in at.info[0].value
    assert "0 is perfectly calibrated" in at.caption[0].value
