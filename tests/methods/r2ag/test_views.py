"""Attention steps of a run (pure numpy) and their heatmaps: head toggle, gold marks, paper view."""

from __future__ import annotations

import numpy as np

from components.attention import heatmap_figure
from engine.methods.r2ag.views import Generated, former_attention_step, llm_attention_steps
from engine.trace import Segment

SEGMENTS = (Segment("e_R 1", 2, 3, "placeholder"), Segment("doc 1", 3, 6, "document"),
            Segment("e_R 2", 7, 8, "placeholder"), Segment("doc 2", 8, 10, "document"),
            Segment("question", 11, 13, "question"))


def test_former_heads_are_kept_and_the_heatmap_can_show_one_head():
    attention = np.random.default_rng(0).dirichlet(np.ones(3), size=(4, 3))  # (heads, k, k)
    step = former_attention_step(attention, ["1 · A", "2 · B", "3 · C"], ["2 · B"], iteration=1)
    assert len(step.heads) == 4 and np.allclose(step.matrix, attention.mean(axis=0), atol=1e-4)
    figure = heatmap_figure(step, head=2)
    assert np.allclose(figure.data[0].z, attention[2], atol=1e-4)
    assert "★ 2 · B" in figure.layout.xaxis.ticktext[1]


def test_llm_views_sum_segment_mass_and_cut_the_paper_view_to_the_top_documents():
    rng = np.random.default_rng(1)
    last = rng.dirichlet(np.ones(14), size=(3, 2))                   # (layers, heads, L)
    per_token = 0.8 * rng.dirichlet(np.ones(14), size=(2, 3, 2))     # (T, layers, heads, L), 0.2 on the answer
    tokens = [f"t{i}" for i in range(14)]
    by_segment, paper, by_token = llm_attention_steps(last, Generated(per_token, (7, 9), ("A", "B")), SEGMENTS,
                                                      tokens, "R2AG", ["doc 2"], iteration=1)
    assert by_segment.x_labels == ("e_R 1", "doc 1", "e_R 2", "doc 2", "question", "other")
    assert np.allclose(np.sum(by_segment.matrix, axis=1), 1.0, atol=1e-3)
    # the first generated token's own row, as a share of its attention over the prompt
    first = per_token[0, 0].mean(axis=0)
    assert by_segment.matrix[0][1] == round(float(first[3:6].sum() / first.sum()), 5)
    assert (by_segment.token, by_segment.token_id) == ("A", 7)
    assert paper.x_labels == tuple(tokens[2:10]) and paper.segments[0] == Segment("e_R 1", 0, 1, "placeholder")
    assert np.allclose(paper.matrix, last.mean(axis=1)[:, 2:10], atol=1e-4)  # the paper's view: last prompt token
    assert len(by_token.matrix) == 2 and by_token.y_labels == ("A", "B") and by_token.group == "R2AG"
