"""Every step kind round-trips through JSON exactly; unknown kinds load as raw data."""

from __future__ import annotations

import json

import pytest

from engine.codec import to_jsonable
from engine.errors import PackError, RagscopeError
from engine.params import AnswerPolicy
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
    Totals,
    Trace,
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
REFUSAL = AnswerStep(iteration=3, title="Refused: confidence 0.31 is below min_confidence 0.50 (best guess: '1906')",
                     text="I don't know", confidence=0.31, refused=True, backend="offline", guess="1906",
                     min_confidence=0.5)


def test_every_step_kind_is_covered_by_the_round_trip_fixture():
    assert {s.kind for s in ONE_OF_EACH} == set(STEP_TYPES)


def test_trace_round_trips_exactly_through_json_for_every_step_kind():
    trace = Trace(id="t1", question="q?", method="vanilla", backend="offline", model="m", pack="demo",
                  params={"k": 5, "retriever": "hybrid"}, started="2026-01-01T00:00:00+00:00",
                  steps=(*ONE_OF_EACH, REFUSAL), totals=Totals(12.5, 1, 3, 2), question_id="q001",
                  policy=AnswerPolicy(0.5))
    again = Trace.from_json(trace.to_json())
    assert again == trace
    assert again.to_json() == trace.to_json()
    assert again.answer == REFUSAL and again.policy == AnswerPolicy(0.5)


def test_a_trace_saved_before_the_run_level_answer_policy_loads_with_none():
    """Issue 24: older traces have no `policy` in the head nor `min_confidence` on the answer (their title says it)."""
    data = json.loads(Trace(id="t1", question="q?", method="vanilla", backend="offline", model="m", pack="demo",
                            steps=(REFUSAL,)).to_json())
    del data["policy"], data["steps"][0]["min_confidence"]
    old = Trace.from_dict(data)
    assert old.policy is None and old.answer.min_confidence is None and old.answer.guess == "1906"


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
    with pytest.raises(TypeError, match="refused must be True or False"):
        AnswerStep(iteration=1, title="Answer", text="Carlow", refused="the answer rests on h2")  # type: ignore[arg-type]


# ---- a saved trace is untrusted input (issue 15) -------------------------------------------------


def _saved(**changes) -> dict:
    data = json.loads(Trace(id="t", question="q", method="m", backend="b", model="", pack="p",
                            steps=(RetrievalStep(query="q", retriever="bm25", hits=(HIT,)),
                                   AnswerStep(text="a"))).to_json())
    return {**data, **changes}


@pytest.mark.parametrize("change, message", [
    ({"id": 7}, "trace.id must be a string, got an integer"),
    ({"model": None}, "trace.model must be a string, got null"),
    ({"totals": {"llm_calls": 1.5}}, "trace.totals.llm_calls must be an integer, got a number"),
    ({"totals": {"tokens_in": True}}, "trace.totals.tokens_in must be an integer, got true or false"),
    ({"params": []}, "trace.params must be an object, got a list"),
    ({"steps": {"kind": "answer"}}, "trace.steps must be a list, got an object"),
    ({"pack": "p", "method": ["m"]}, "trace.method must be a string, got a list"),
])
def test_a_wrong_type_in_the_trace_head_is_named_by_its_path(change, message):
    with pytest.raises(RagscopeError, match="^replay.json: not a ragscope trace: " + message.replace(".", r"\.")):
        Trace.from_dict(_saved(**change), "replay.json")


@pytest.mark.parametrize("step_change, message", [
    ({"hits": [{**to_jsonable(HIT), "score": "high"}]},
     "trace.steps[0].hits[0].score must be a number or null, got a string"),  # None: a retriever gave no score
    ({"hits": "none"}, "trace.steps[0].hits must be a list, got a string"),
    ({"hits": [[1, 2]]}, "trace.steps[0].hits[0] must be an object, got a list"),
    ({"query": None}, "trace.steps[0].query must be a string, got null"),
    ({"iteration": "1"}, "trace.steps[0].iteration must be an integer, got a string"),
    ({"kind": 3}, "trace.steps[0].kind must be a string, got an integer"),
])
def test_a_wrong_type_inside_a_step_is_named_by_its_path(step_change, message):
    data = _saved()
    data["steps"][0].update(step_change)
    with pytest.raises(RagscopeError, match=message.replace(".", r"\.").replace("[", r"\[")):
        Trace.from_dict(data)


def test_a_missing_required_field_and_a_non_bool_flag_are_errors_not_crashes():
    data = _saved()
    del data["steps"][0]["query"]
    with pytest.raises(RagscopeError, match=r"trace\.steps\[0\] is missing 'query'"):
        Trace.from_dict(data)
    data = _saved()
    data["steps"][1]["refused"] = "the evidence was thin"
    with pytest.raises(RagscopeError, match=r"trace\.steps\[1\]\.refused must be true or false, got a string"):
        Trace.from_dict(data)
    with pytest.raises(RagscopeError, match="trace must be an object, got a list"):
        Trace.from_dict([])
    with pytest.raises(RagscopeError, match=r"trace\.steps\[0\] must be an object, got a string"):
        Trace.from_dict({**_saved(), "steps": ["answer"]})


def test_optional_and_union_fields_accept_each_allowed_type_only():
    good = Trace(id="t", question="q", method="m", backend="b", model="", pack="p",
                 steps=(CalculationStep(expression="1/0", result=None, error="division by zero"),
                        FeaturesStep(columns=("a", "b", "c", "d"), rows=(("x", 1, 2.5, False),))))
    assert Trace.from_json(good.to_json()) == good
    data = json.loads(good.to_json())
    data["steps"][0]["result"] = "3"
    with pytest.raises(RagscopeError, match=r"steps\[0\]\.result must be a number or null, got a string"):
        Trace.from_dict(data)
    data = json.loads(good.to_json())
    data["steps"][1]["rows"] = [[{"cell": 1}]]
    with pytest.raises(RagscopeError, match=r"rows\[0\]\[0\] must be a string or an integer or a number or "
                                            r"true or false or null, got an object"):
        Trace.from_dict(data)


def test_an_unknown_step_kind_is_kept_but_its_header_is_checked():
    data = _saved()
    data["steps"].append({"kind": "hologram", "iteration": "soon"})
    with pytest.raises(RagscopeError, match=r"trace\.steps\[2\]\.iteration must be an integer, got a string"):
        Trace.from_dict(data)


@pytest.mark.parametrize("text, problem", [
    ('{"id": ' + "[" * 10_000, "trace.json:1: nested deeper than 64 levels"),
    ('{"id": "t",\n"iteration": ' + "7" * 4301 + "}", "trace.json:2: integer with 4301 digits"),
    ('{"id": "\\udfff"}', "trace.json:1: a string contains a lone UTF-16 surrogate"),
    ('{"id": ', "trace.json:1: not valid JSON (Expecting value at column 8)"),
])
def test_hostile_trace_json_is_a_clear_error_with_its_line(text, problem):
    with pytest.raises(PackError) as caught:
        Trace.from_json(text, "trace.json")
    assert caught.value.problems[0].startswith(problem)
