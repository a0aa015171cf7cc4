"""Every step kind round-trips through JSON exactly; unknown kinds load as raw data."""

from __future__ import annotations

import json

from engine.trace import (
    STEP_TYPES,
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
    Trace,
    Totals,
    UnknownStep,
)

HIT = Hit(doc_id="d1", chunk_id="d1#0", title="T <b>", text="x < y & z", score=0.25, rank=1,
          retriever="dense", provenance="rule r1")
ONE_OF_EACH = (
    RulesMatchedStep(iteration=0, title="rules", rules=(RuleMatch("r1", "text", "h", ("a", "~b"), 0.5, 3, 0.9),)),
    RetrievalStep(iteration=1, title="r", query="q", retriever="hybrid", hits=(HIT,), elapsed_ms=1.5),
    GraphDeltaStep(iteration=1, added_nodes=(Node("a", "A", score=0.3),), added_edges=(Edge("a", "r", "b", 1.0, "d1"),),
                   pruned_nodes=(Node("c", "C"),), pruned_edges=(Edge("c", "r", "a"),), focus=("a",)),
    DecisionStep(iteration=2, action="[SUBQ]", detail="next"),
    LlmCallStep(iteration=2, role="reader", prompt="p", output="o", tokens_in=3, tokens_out=2, latency_ms=4.0,
                backend="hf"),
    AttentionStep(iteration=2, name="a", matrix=((0.1, 0.9), (0.5, 0.5)), x_labels=("d1", "q"), y_labels=("L0", "L1"),
                  segments=(Segment("d1", 0, 4), Segment("q", 4, 6, "question")), note="head mean"),
    FeaturesStep(iteration=1, columns=("doc", "r", "flag"), rows=(("d1", 0.5, True), ("d2", 1, None))),
    AttributesStep(iteration=0, labels=(AttributeLabel("domain", "finance", 0.7),)),
    CalculationStep(iteration=3, expression="1 + 2", result=3.0),
    ErrorStep(iteration=3, message="parser fell back", recoverable=True),
    AnswerStep(iteration=3, text="Warsaw", citations=("d1",), confidence=0.8, backend="offline", evidence=("d1", "d2")),
)


def test_every_step_kind_is_covered_by_the_round_trip_fixture():
    assert {s.kind for s in ONE_OF_EACH} == set(STEP_TYPES)


def test_trace_round_trips_exactly_through_json_for_every_step_kind():
    trace = Trace(id="t1", question="q?", method="vanilla", backend="offline", model="m", pack="demo",
                  params={"k": 5, "retriever": "hybrid"}, started="2026-01-01T00:00:00+00:00",
                  steps=ONE_OF_EACH, totals=Totals(12.5, 1, 3, 2), question_id="q001")
    again = Trace.from_json(trace.to_json())
    assert again == trace
    assert again.to_json() == trace.to_json()
    assert again.answer.text == "Warsaw"


def test_unknown_step_kind_loads_as_raw_data_and_saves_back_unchanged():
    data = json.loads(Trace(id="t", question="q", method="m", backend="b", model="", pack="p").to_json())
    data["steps"] = [{"kind": "hologram", "iteration": 2, "title": "future", "payload": [1, 2]}]
    trace = Trace.from_dict(data)
    (step,) = trace.steps
    assert isinstance(step, UnknownStep) and step.original_kind == "hologram" and step.iteration == 2
    assert json.loads(trace.to_json())["steps"] == data["steps"]


def test_trace_totals_are_summed_from_llm_calls():
    steps = (LlmCallStep(role="a", prompt="", output="", tokens_in=5, tokens_out=1),
             LlmCallStep(role="b", prompt="", output="", tokens_in=2, tokens_out=3))
    trace = Trace(id="t", question="q", method="m", backend="b", model="", pack="p").with_steps(steps, 9.0)
    assert trace.totals == Totals(latency_ms=9.0, llm_calls=2, tokens_in=7, tokens_out=4)
    assert trace.answer is None


def test_refused_is_a_bool_or_nothing():
    import pytest

    from engine.trace import AnswerStep

    with pytest.raises(TypeError, match="refused must be True or False"):
        AnswerStep(iteration=1, title="Answer", text="Carlow", refused="the answer rests on h2")  # type: ignore[arg-type]
