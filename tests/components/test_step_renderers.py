"""Every step kind has a renderer; one page with a step of every kind renders, escaping document text."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from components.answer import held_back
from components.attention import heatmap_figure
from components.attributes import attribute_badge
from components.calculation import calculation_line
from components.decision import code_span, decision_tone
from components.features import feature_records
from components.graph_delta import edge_lines
from components.llm_call import call_summary
from components.rules import rule_path
from components.steps import RENDERERS
from engine.trace import (
    STEP_TYPES,
    AnswerStep,
    AttentionStep,
    AttributeLabel,
    CalculationStep,
    DecisionStep,
    Edge,
    FeaturesStep,
    LlmCallStep,
    RuleMatch,
)


def test_every_step_kind_has_a_renderer():
    assert set(STEP_TYPES) <= set(RENDERERS)


HELD = "confidence 0.31 is below min_confidence 0.50 (best guess: '1906')"


def test_a_refusal_says_what_it_held_back_from_its_fields_and_an_old_trace_from_its_title():
    typed = AnswerStep(text="I don't know", refused=True, confidence=0.31, guess="1906", min_confidence=0.5,
                       title="Answer")  # the title plays no part: the card reads the fields
    saved_before = AnswerStep(text="I don't know", refused=True, confidence=0.31, title=f"Refused: {HELD}")
    other = AnswerStep(text="I don't know", refused=True, title="Refused: no evidence")
    assert (held_back(typed), held_back(saved_before), held_back(other)) == (HELD, HELD, "")


def test_a_rule_reads_head_from_body_with_inverse_relations_in_words():
    rule = RuleMatch("r1", "", "grandparent", ("parent", "~child"), 0.5, 3, 0.9)
    assert rule_path(rule) == "grandparent ⇐ parent → (inverse) child"


def test_stopped_and_capped_decisions_are_told_apart_from_plain_ones():
    assert decision_tone(DecisionStep(action="stopped", detail="by the user")) == "stopped"
    assert decision_tone(DecisionStep(action="answer", detail="iteration cap reached (5)")) == "capped"
    assert decision_tone(DecisionStep(action="max_iterations")) == "capped"
    assert decision_tone(DecisionStep(action="[SUBQ]", detail="capital of Poland")) == ""


def test_code_span_shows_backticks_and_newlines_verbatim_on_one_line():
    assert code_span("[SUBQ]") == "`[SUBQ]`"
    assert code_span("a `b` c") == "``a `b` c``"
    assert code_span("`x") == "`` `x ``"
    assert code_span("a\nb") == "`a b`"


def test_llm_call_summary_has_backend_tokens_and_latency():
    step = LlmCallStep(role="reader", prompt="", output="", tokens_in=1200, tokens_out=7, latency_ms=1500, backend="hf")
    assert call_summary(step) == "hf · 1,200 → 7 tokens · 1.50 s"


def test_heatmap_keeps_rows_with_repeated_labels_and_escapes_labels():
    step = AttentionStep(name="<b>attn</b>", matrix=((0.1, 0.9), (0.4,)), x_labels=("<doc>", "q"),
                         y_labels=("the", "the"))
    (trace,) = heatmap_figure(step).data
    assert [list(r) for r in trace.z] == [[0.1, 0.9], [0.4, None]]
    assert list(trace.y) == [0, 1]
    figure = heatmap_figure(step)
    assert figure.layout.title.text == "‹b›attn‹/b›"
    assert list(figure.layout.xaxis.ticktext) == ["‹doc›", "q"]
    assert "<doc>" not in str(trace.text) and "row: the<br>column: ‹doc›" == trace.text[0][0]
    assert heatmap_figure(AttentionStep(name="e", matrix=(), x_labels=(), y_labels=())) is None
    assert heatmap_figure(AttentionStep(name="e", matrix=((), ()), x_labels=(), y_labels=())) is None


def test_feature_records_keep_repeated_columns_and_pad_short_rows():
    step = FeaturesStep(columns=("doc", "r", "r"), rows=(("d1", 0.5, 0.2), ("d2", 1), ("d3", 1, 2, "extra")))
    assert feature_records(step) == [
        {"doc": "d1", "r": 0.5, "r (2)": 0.2, "column 4": None},
        {"doc": "d2", "r": 1, "r (2)": None, "column 4": None},
        {"doc": "d3", "r": 1, "r (2)": 2, "column 4": "extra"},
    ]


def test_a_column_mixing_numbers_and_text_is_shown_as_text():
    step = FeaturesStep(columns=("doc", "r", "flag"), rows=(("d1", 0.5, True), ("d2", "n/a", None), ("d3", 2, False)))
    assert [r["r"] for r in feature_records(step)] == ["0.5", "n/a", "2"]
    assert [r["flag"] for r in feature_records(step)] == [True, None, False]


def test_attribute_badges_cannot_be_closed_or_restyled_by_their_text():
    badge = attribute_badge(AttributeLabel("domain", "x] :red[y", 0.75))
    assert badge.startswith(":green-badge[") and "x\\] \\:red\\[y" in badge and badge.endswith("75%]")


def test_calculation_line_trims_float_noise():
    assert calculation_line(CalculationStep(expression="0.1 + 0.2", result=0.1 + 0.2)) == "0.1 + 0.2 = 0.3"
    assert calculation_line(CalculationStep(expression="1/0", error="division by zero")) == "1/0"


def test_delta_edges_are_listed_with_labels_and_a_count_of_the_rest():
    edges = tuple(Edge("a", "r", f"n{i}") for i in range(8))
    text = edge_lines(edges, {"a": "Ada"}, limit=2)
    assert text == "Ada –r→ n0\nAda –r→ n1\n… and 6 more"


def _page() -> None:
    """Run by AppTest as a script: one step of every kind, an unknown kind, and the graph."""
    from components.graph import render_graph
    from components.steps import render_step
    from engine.trace import (
        AnswerStep,
        AttentionStep,
        AttributeLabel,
        AttributesStep,
        CalculationStep,
        DecisionStep,
        Edge,
        ErrorStep,
        FeaturesStep,
        GraphDeltaStep,
        Hit,
        LlmCallStep,
        Node,
        RetrievalStep,
        RuleMatch,
        RulesMatchedStep,
        Segment,
        UnknownStep,
    )

    bad = "<script>alert(1)</script> **x**"
    steps = (
        RulesMatchedStep(title="rules", rules=(RuleMatch("r1", bad, "h", ("a", "~b"), 0.5, 3, 0.9),
                                               RuleMatch("r2", "weaker", "h", ("c",), 1.2, 1, -0.1))),
        RetrievalStep(iteration=1, title="chunks", query="alert x", retriever="hybrid",
                      hits=(Hit("d1", "d1#0", bad, bad, 0.5, 1, provenance=bad),)),
        GraphDeltaStep(iteration=1, title="graph", added_nodes=(Node("a", bad, score=0.3),),
                       added_edges=(Edge("a", bad, "b", 1.0),), pruned_nodes=(Node("c", "C"),), focus=("a",)),
        DecisionStep(iteration=1, action="[SUBQ]", detail=bad),
        DecisionStep(iteration=1, action="stopped", detail="stopped by the user"),
        LlmCallStep(iteration=1, role="reader", prompt=bad, output=bad, tokens_in=3, tokens_out=2, backend="hf"),
        LlmCallStep(iteration=1, role="planner", prompt="p", output="o"),
        AttentionStep(iteration=1, name="attn", matrix=((0.1, 0.9), (0.5, 0.5)), x_labels=(bad, "q"),
                      y_labels=("L0", "L1"), segments=(Segment(bad, 0, 4),), note=bad),
        AttentionStep(iteration=1, name="empty", matrix=(), x_labels=(), y_labels=()),
        FeaturesStep(iteration=1, columns=("doc", "r", "flag"), rows=(("d1", 0.5, True), ("d2", "n/a", None))),
        AttributesStep(labels=(AttributeLabel("domain", bad, 0.7), AttributeLabel("type", "set", 0.2))),
        CalculationStep(expression="1 + 2", result=3.0),
        CalculationStep(expression="2 ** 999999", error=bad),
        ErrorStep(message=bad, recoverable=True),
        ErrorStep(message="backend down", recoverable=False),
        AnswerStep(text=bad, citations=("d1",), backend="offline"),
        UnknownStep(original_kind="hologram", data={"x": 1}),
    )
    for i, step in enumerate(steps):
        render_step(step, key=f"s{i}")
    render_graph(steps, 1, key="graph")
    render_graph(steps[:2], 1, key="nograph")


def test_one_step_of_every_kind_renders_with_a_chart_an_iframe_and_escaped_text():
    at = AppTest.from_function(_page, default_timeout=60).run()
    assert not at.exception
    assert len(at.get("plotly_chart")) == 1 and len(at.get("iframe")) == 1
    markdown = [m.value for m in at.markdown] + [c.value for c in at.caption] + [w.value for w in at.warning]
    assert all("<script>" not in text and "**x**" not in text for text in markdown)
    assert any("&lt;script&gt;alert\\(1\\)&lt;/script&gt; \\*\\*x\\*\\*" in text for text in markdown)
    assert any(c.value == "<script>alert(1)</script> **x**" for c in at.code)  # prompts stay literal
    assert any("stopped" in m.value for m in at.markdown)
    assert any("the run could not go on" in e.value for e in at.error)
    assert any("nothing to show" in c.value for c in at.caption)
    assert any(c.value == "this method builds no graph" for c in at.caption)
    assert [e.label for e in at.expander].count("Prompt") == 2


def _big_graph() -> None:
    from components.graph import render_graph
    from engine.trace import Edge, GraphDeltaStep, Node

    nodes = tuple(Node(f"n{i}", f"node {i}", score=i / 150) for i in range(150))
    render_graph((GraphDeltaStep(iteration=1, added_nodes=nodes,
                                 added_edges=tuple(Edge("n0", "r", n.id) for n in nodes[1:])),), 1, key="big")


def test_a_large_graph_is_capped_until_show_all_is_switched_on():
    at = AppTest.from_function(_big_graph, default_timeout=60).run()
    assert not at.exception
    assert at.toggle[0].label == "Show all 150 nodes" and at.toggle[0].key == "big.all"
    assert any(c.value.startswith("100 of 150 nodes") for c in at.caption)  # 100 stay readable (issue 14)
    at.toggle[0].set_value(True)
    at.run()
    assert any(c.value.startswith("150 of 150 nodes") for c in at.caption)
    assert len(at.get("iframe")) == 1


def test_crowded_heatmap_labels_stand_upright_and_hundreds_are_left_to_hover():
    def step(n: int) -> AttentionStep:
        return AttentionStep(name="m", matrix=(tuple(0.1 for _ in range(n)),),
                             x_labels=tuple(f"t{i}" for i in range(n)), y_labels=("layer 0",))

    few, many, token_view = (heatmap_figure(step(n)).layout.xaxis for n in (5, 21, 300))
    assert few.tickangle == -35 and many.tickangle == -90 and many.showticklabels
    assert not token_view.showticklabels and "hover" in token_view.title.text


def _jargon() -> None:
    from components.decision import render_decision
    from components.features import render_features
    from components.retrieval import render_retrieval
    from engine.trace import DecisionStep, FeaturesStep, Hit, RetrievalStep

    render_decision(DecisionStep(iteration=3, title="Depth cap reached", action="depth_cap"), key="d")
    render_decision(DecisionStep(iteration=1, title="Planner: [SUBQ]", action="subq"), key="s")
    render_retrieval(RetrievalStep(iteration=1, query="q", retriever="bm25",
                                   hits=(Hit("d1", "d1#0", "T", "text", 1.0, 1, provenance="question"),)), key="r")
    render_features(FeaturesStep(iteration=1, columns=("doc", "r", "γ", "ζ"), rows=(("d1", 0.5, 1.0, 0.4),)), key="f")


def test_jargon_comes_with_a_plain_language_hint():
    at = AppTest.from_function(_jargon).run()
    assert not at.exception
    hints = [m.help for m in at.markdown if m.help]
    assert any("maximum depth" in h for h in hints) and any("new sub-question" in h for h in hints)
    retrieval, features = at.dataframe
    assert "matched the question itself" in retrieval.proto.columns  # the help travels in the column config
    assert "precedent similarity" in features.proto.columns and "neighbour similarity" in features.proto.columns
