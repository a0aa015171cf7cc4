"""Attention heatmaps (issue 22): evidence only and renormalised by default, the prompt's scaffolding on a
toggle, columns named by the evidence's titles; old traces still render."""

from __future__ import annotations

import json

import numpy as np
from streamlit.testing.v1 import AppTest

from components.attention import heatmap_figure
from engine.trace import AttentionStep, Segment, step_from_dict, step_to_dict

LONG = "Maria Skłodowska-Curie, Polish and naturalised-French physicist"
SEGMENTS = (Segment("d1", 0, 9, "document", LONG), Segment("d2", 10, 19, "document", "Warsaw"),
            Segment("question", 20, 26, "question", "Where was Marie Curie born?"))
# the template ("other") takes 90 % and 50 % of the two rows, the question 2 % and 10 %
STEP = AttentionStep(name="first generated token 'W': layer × segment",
                     matrix=((0.06, 0.02, 0.02, 0.9), (0.1, 0.3, 0.1, 0.5)),
                     x_labels=("d1", "d2", "question", "other"), y_labels=("layer 0", "layer 1"),
                     segments=SEGMENTS, highlight=("d2",), token="W", token_id=42)


def test_by_default_each_row_is_renormalised_over_the_evidence_only():
    (trace,) = heatmap_figure(STEP).data
    z = np.array(trace.z, dtype=float)
    assert z.shape == (2, 2) and np.allclose(z.sum(axis=1), 1.0)
    assert np.allclose(z, [[0.75, 0.25], [0.25, 0.75]])
    assert "share of evidence" in trace.hovertemplate


def test_the_toggle_shows_the_saved_shares_over_the_whole_prompt():
    (trace,) = heatmap_figure(STEP, scaffolding=True).data
    assert [list(r) for r in trace.z] == [list(r) for r in STEP.matrix]


def test_columns_are_named_by_titles_cut_short_with_the_full_title_on_hover():
    figure = heatmap_figure(STEP)
    assert list(figure.layout.xaxis.ticktext) == [LONG[:23] + "…", "★ Warsaw"]
    assert LONG in figure.data[0].text[0][0] and "[d1]" in figure.data[0].text[0][0]
    raw = heatmap_figure(STEP, scaffolding=True).layout.xaxis.ticktext
    assert list(raw[2:]) == ["Where was Marie Curie b…", "instructions & template"]


def test_a_row_that_gave_the_evidence_nothing_is_blank_not_an_even_split():
    step = AttentionStep(name="m", matrix=((0.0, 0.0, 1.0),), x_labels=("d1", "d2", "other"), y_labels=("l",))
    assert list(heatmap_figure(step).data[0].z[0]) == [None, None]


def test_a_trace_saved_before_titles_and_tokens_renders_with_its_labels():
    data = step_to_dict(STEP)
    for key in ("token", "token_id"):
        del data[key]
    for segment in data["segments"]:
        del segment["title"]
    old = step_from_dict(json.loads(json.dumps(data)))
    assert (old.token, old.token_id, old.segments[0].title) == ("", -1, "")
    figure = heatmap_figure(old)
    assert list(figure.layout.xaxis.ticktext) == ["d1", "★ d2"]
    assert np.allclose(np.array(figure.data[0].z, dtype=float).sum(axis=1), 1.0)


def _page() -> None:
    from components.attention import render_attention
    from engine.trace import AttentionStep, Segment

    segments = (Segment("d1", 0, 9, "document", "Marie Curie"), Segment("question", 9, 12, "question"))
    step = AttentionStep(name="m", matrix=((0.1, 0.1, 0.8),), x_labels=("d1", "question", "other"),
                         y_labels=("layer 0",), segments=segments)
    render_attention(step, key="a")


def _columns(at: AppTest) -> list[str]:
    spec = json.loads(at.get("plotly_chart")[0].proto.spec)
    return spec["layout"]["xaxis"]["ticktext"]


def test_the_component_shows_evidence_first_and_the_scaffolding_on_its_toggle():
    at = AppTest.from_function(_page).run()
    assert not at.exception
    assert _columns(at) == ["Marie Curie"]
    assert any("took 90%" in c.value for c in at.caption)
    at.toggle(key="a.scaffolding").set_value(True).run()
    assert _columns(at) == ["Marie Curie", "question", "instructions & template"]


def test_the_component_names_the_template_column_as_the_engine_labels_it():
    from components.attention import OTHER
    from engine.llm.attention import OTHER as ENGINE_OTHER

    assert OTHER == ENGINE_OTHER  # the component reads saved traces, so it keeps its own copy of the label
