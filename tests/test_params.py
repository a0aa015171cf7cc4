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
