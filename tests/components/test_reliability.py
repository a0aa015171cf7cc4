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
    assert vanilla.name == "Vanilla RAG · ECE 0.14 (4 answered)"  # two decimals: a third is noise here
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


def _few_and_many() -> None:
    from components.reliability import render_reliability
    from engine.evaluation.calibration import reliability
    from engine.evaluation.runner import QuestionResult

    def result(method: str, right: bool) -> QuestionResult:
        return QuestionResult(method=method, question_id="q", type="factoid", question="q?", gold="g", answer="a",
                              refused=False, outcome="correct" if right else "hallucinated", em=float(right),
                              f1=float(right), acc=float(right), recall_5=None, recall_10=None, recall_all=None,
                              evidence_len=0, latency_ms=1.0, llm_calls=0, tokens=0, trace_id="t", confidence=0.7)

    few = [result("vanilla", i % 2 == 0) for i in range(6)]
    many = [result("ras", i % 3 > 0) for i in range(30)]
    render_reliability({"vanilla": reliability(few), "ras": reliability(many)},
                       labels={"vanilla": "Vanilla RAG", "ras": "RAS"}, key="r")


def test_an_ece_from_few_answers_comes_with_a_warning_naming_the_count() -> None:
    at = AppTest.from_function(_few_and_many, default_timeout=60).run()
    assert not at.exception
    (warning,) = at.warning
    assert "Vanilla RAG 6" in warning.value and "under 30" in warning.value
    assert "RAS" not in warning.value  # 30 answers is enough
    assert at.get("plotly_chart")
