"""The hybrid fields of the attributes and calculation steps reach their renderers."""

from __future__ import annotations

from components.calculation import status_badge
from engine.trace import AttributeLabel, AttributesStep, CalculationStep, step_from_dict, step_to_dict


def test_calculation_status_badges_colour_by_outcome() -> None:
    assert status_badge(CalculationStep(expression="1 + 1", result=2.0, status="ok")) == ":green-badge[ok]"
    assert status_badge(CalculationStep(expression="x", status="eval_error")).startswith(":red-badge[")
    assert status_badge(CalculationStep(expression="1 + 1", result=2.0)) == ""  # other methods set no status


def test_the_new_fields_round_trip_and_default_for_old_traces() -> None:
    step = AttributesStep(labels=(AttributeLabel("dynamism", "static", 0.9),), method="icl", votes=("a", "b"))
    assert step_from_dict(step_to_dict(step)) == step
    old = {"kind": "calculation", "iteration": 3, "title": "calculate", "elapsed_ms": 0.0, "expression": "1",
           "result": 1.0, "error": ""}
    assert step_from_dict(old).status == "" and step_from_dict(old).source == ""
