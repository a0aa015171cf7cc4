"""Method parameters are coerced and bound-checked from their dataclass metadata."""

from __future__ import annotations

import pytest

from engine.errors import RagscopeError
from engine.methods.vanilla.method import VanillaParams
from engine.params import build_params, param_specs


def test_param_specs_expose_defaults_bounds_and_help():
    specs = {s.name: s for s in param_specs(VanillaParams)}
    assert specs["k"].default == 5 and specs["k"].min == 1 and specs["k"].help
    assert "hybrid" in specs["retriever"].choices


def test_build_params_coerces_strings_from_the_cli():
    assert build_params(VanillaParams, {"k": "8"}).k == 8


@pytest.mark.parametrize("values", [{"k": 0}, {"k": "many"}, {"retriever": "grep"}, {"depth": 3}])
def test_build_params_rejects_bad_values_with_a_clear_message(values):
    with pytest.raises(RagscopeError, match="parameter"):
        build_params(VanillaParams, values)


@pytest.mark.parametrize("value", ["nan", "NaN", "inf", "-inf", "1e999", float("nan")])
def test_a_float_that_is_not_finite_is_refused_by_name(value):
    from engine.methods.rulerag.method import RuleRagParams

    # nan fails both bound comparisons, so without its own check it slipped through as theta=nan
    with pytest.raises(RagscopeError, match=r"parameter theta=.* is not a finite number; allowed: \[0.0, 1.0\]"):
        build_params(RuleRagParams, {"theta": value})


@pytest.mark.parametrize("values, message", [
    ({"k": True}, "k=True is not a whole number"),
    ({"k": "1.5"}, "k='1.5' is not a whole number; allowed: [1, 30]"),
    ({"k": 10**5000}, "k=<a number too long to show> outside [1, 30]"),  # past Python's 4,300-digit repr limit
    ({"k": "9" * 5000}, "k='99999999999999999999999999999999999999… is not a whole number"),
])
def test_bad_values_are_named_briefly_with_what_is_allowed(values, message):
    with pytest.raises(RagscopeError) as caught:
        build_params(VanillaParams, values)
    assert message in str(caught.value) and len(str(caught.value)) < 200


def test_a_boolean_must_say_yes_or_no():
    from engine.methods.r2ag.method import R2agParams

    assert build_params(R2agParams, {"attention": "off", "compare_plain": "Yes"}).attention is False
    with pytest.raises(RagscopeError, match="attention='maybe' is not true or false; allowed: 1/true/yes/on or"):
        build_params(R2agParams, {"attention": "maybe"})
