"""The safe calculator: plain arithmetic works, everything else is refused with a clear message."""

from __future__ import annotations

import ast

import pytest

from engine.errors import CalculationError
from engine.tools import calculator
from engine.tools.calculator import calculate, calculation_step
from engine.trace import CalculationStep, step_from_dict, step_to_dict


@pytest.mark.parametrize(
    ("expression", "expected"),
    [
        ("1 + 2 * 3", 7.0),
        ("(1 + 2) * 3", 9.0),
        ("2 ** 10", 1024.0),
        ("2 ** -1", 0.5),
        ("7 // 2", 3.0),
        ("7 % 3", 1.0),
        ("7 / 2", 3.5),
        ("-(3)", -3.0),
        ("+4", 4.0),
        ("1.5e3", 1500.0),
        ("abs(-2.5)", 2.5),
        ("round(3.14159, 2)", 3.14),
        ("round(2.6)", 3.0),
        ("min(1867, 1859)", 1859.0),
        ("max(1, 2, 3)", 3.0),
        ("1934 - 1867", 67.0),
        ("10 ** 18", 1e18),
    ],
)
def test_calculate_evaluates_plain_arithmetic(expression: str, expected: float) -> None:
    assert calculate(expression) == pytest.approx(expected)


def test_calculate_always_returns_a_float() -> None:
    assert isinstance(calculate("2 + 2"), float)


@pytest.mark.parametrize(
    ("expression", "named"),
    [
        ("__import__('os').system('x')", "attribute access '.system'"),
        ("__import__('os')", "name '__import__'"),
        ("().__class__", "attribute access '.__class__'"),
        ("open('/etc/passwd')", "name 'open'"),
        ("x", "name 'x'"),
        ("'a' * 3", "constant 'a'"),
        ("True + 1", "constant True"),
        ("[1][0]", "subscript"),
        ("lambda: 1", "lambda"),
        ("[x for x in ()]", "listcomp"),
        ("{1: 2}", "dict"),
        ("1 if 1 else 2", "ifexp"),
        ("1 < 2", "operator Lt"),
        ("1 and 2", "operator And"),
        ("3 @ 4", "operator MatMult"),
        ("1j", "constant 1j"),
        ("9 ** 9 ** 9", "exponent"),
        ("10 ** 19", "magnitude"),
        ("1e308 * 10", "magnitude"),
        ("999999999999 * 9999999999", "magnitude"),
        ("1 / 0", "division by zero"),
        ("5 % 0", "division by zero"),
        ("0 ** -1", "division by zero"),
        ("(-8) ** 0.5", "no real value"),
        ("abs(x=1)", "plain arguments"),
        ("min(*[1])", "plain arguments"),
        ("min()", "at least one number"),
        ("abs(1, 2)", "exactly one number"),
        ("round(1, 2.5)", "whole number"),
        ("1 +", "not valid arithmetic"),
        ("", "empty expression"),
    ],
)
def test_calculate_rejects_anything_but_arithmetic_and_names_what_was_not_allowed(
    expression: str, named: str
) -> None:
    with pytest.raises(CalculationError) as caught:
        calculate(expression)
    assert named in str(caught.value)


def test_calculate_rejects_a_10_kb_expression_by_its_length() -> None:
    with pytest.raises(CalculationError, match="characters long; at most 500"):
        calculate("1+" * 5000 + "1")


def test_calculate_rejects_an_expression_with_too_many_parts() -> None:
    with pytest.raises(CalculationError, match="parts; at most 100"):
        calculate("+".join(["1"] * 120))


def test_calculate_rejects_deep_nesting_without_crashing() -> None:
    with pytest.raises(CalculationError):
        calculate("(" * 240 + "1" + ")" * 240)


def test_calculate_rejects_text_that_is_not_a_string() -> None:
    with pytest.raises(CalculationError, match="must be text"):
        calculate(42)  # type: ignore[arg-type]


def test_calculate_stops_when_the_wall_clock_limit_is_spent(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(calculator, "TIME_LIMIT_S", -1.0)
    with pytest.raises(CalculationError, match="took longer"):
        calculate("1 + 1")


def test_calculation_step_holds_the_result() -> None:
    step = calculation_step("min(1867, 1859)", iteration=2)
    assert isinstance(step, CalculationStep)
    assert (step.expression, step.result, step.error, step.iteration) == ("min(1867, 1859)", 1859.0, "", 2)


@pytest.mark.parametrize("expression", ["__import__('os').system('x')", "9**9**9", "1/0", "x" * 10_000, None])
def test_calculation_step_records_the_error_and_never_raises(expression: object) -> None:
    step = calculation_step(expression)  # type: ignore[arg-type]
    assert step.result is None
    assert step.error
    assert len(step.expression) <= calculator.MAX_CHARS


def test_calculation_step_round_trips_through_json() -> None:
    step = calculation_step("2023 - 1999")
    assert step_from_dict(step_to_dict(step)) == step


@pytest.mark.parametrize(
    ("expression", "named"),
    [
        ("(1e-10)**-50", "1e-10 ** -50 exceeds the magnitude limit"),  # issue 15: OverflowError before
        ("(-1e-10)**-51", "(-1e-10) ** -51 exceeds the magnitude limit"),
        ("0.5 ** -99.5", "0.5 ** -99.5 exceeds the magnitude limit"),
        ("9" * 400, "intermediate value of about 10^400 exceeds"),  # a 400-digit literal has no float form
        ("1" * 309 + " - 1", "intermediate value of about 10^308 exceeds"),
        ("0x" + "f" * 300, "intermediate value of about 10^361 exceeds"),
        ("1" * 310 + ".0", "not a finite number"),
        ("10**10**10", "exponent 10000000000 is too large"),
        ("2 ** (10 ** 18)", "exponent 1000000000000000000 is too large"),
        ("1e18 // 1e-300", "not a finite number"),
        ("(-8) ** (1 / 3)", "has no real value"),
        ("1.5 // 0", "division by zero"),
        ("0.0 ** -0.5", "division by zero"),
    ],
)
def test_overflowing_arithmetic_is_refused_with_the_calculators_own_error(expression: str, named: str) -> None:
    with pytest.raises(CalculationError) as caught:
        calculate(expression)
    assert named in str(caught.value)


def test_tiny_results_underflow_to_zero_rather_than_fail() -> None:
    assert calculate("(1e-200) ** 2") == 0.0 and calculate("0.5 ** 100") == pytest.approx(7.888609052210118e-31)


def test_an_error_no_check_foresaw_still_comes_out_as_a_calculation_error(monkeypatch: pytest.MonkeyPatch) -> None:
    def overflow(a: float, b: float) -> float:
        raise OverflowError("(34, 'Numerical result out of range')")

    monkeypatch.setitem(calculator._BINARY, ast.Add, overflow)
    with pytest.raises(CalculationError, match=r"cannot be evaluated: OverflowError"):
        calculate("1 + 1")
