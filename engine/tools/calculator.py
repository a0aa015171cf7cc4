"""A safe arithmetic calculator: an AST whitelist walk with size, magnitude and time limits (DESIGN §12).

Model-written and reader-written expressions are never handed to `eval`; they are parsed with
`ast.parse(mode="eval")` and every node is checked against a short whitelist while it is evaluated.
"""

from __future__ import annotations

import ast
import math
import operator
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass

from engine.errors import CalculationError
from engine.trace import CalculationStep

Number = int | float

MAX_CHARS = 500
MAX_NODES = 100
MAX_MAGNITUDE = 1e18
MAX_EXPONENT = 100
MAX_ROUND_DIGITS = 15
TIME_LIMIT_S = 0.05

ALLOWED = ("numbers, + - * / // % **, unary + -, parentheses and the calls abs, round, min, max, sum, len, "
           "float, int (a list or tuple of numbers only as a call's argument)")
MAX_ITEMS = 50  # numbers in one list argument

_BINARY: dict[type[ast.operator], Callable[[Number, Number], Number]] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
    ast.Mod: operator.mod,
}
_UNARY: dict[type[ast.unaryop], Callable[[Number], Number]] = {
    ast.UAdd: operator.pos,
    ast.USub: operator.neg,
}
_CALLS = ("abs", "round", "min", "max", "sum", "len", "float", "int")
_LIST_CALLS = ("min", "max", "sum", "len")  # the calls that may take one list or tuple


@dataclass(frozen=True)
class _Budget:
    """The wall-clock deadline one evaluation must finish by."""

    deadline: float

    def check(self) -> None:
        if time.perf_counter() > self.deadline:
            raise CalculationError(f"calculation took longer than {TIME_LIMIT_S * 1000:.0f} ms; simplify it")


def calculate(expression: str) -> float:
    """Evaluate plain arithmetic and return a float; anything else raises `CalculationError`, and only that:
    one bad model-written expression must not abort a whole run (issue 15)."""
    tree = _parse(expression)
    budget = _Budget(time.perf_counter() + TIME_LIMIT_S)
    try:
        return float(_evaluate(tree.body, budget))
    except (ArithmeticError, ValueError, TypeError, RecursionError, MemoryError) as exc:
        # the checks below bound every operation first; this is the backstop for one they missed
        raise CalculationError(f"expression {expression[:60]!r} cannot be evaluated: {type(exc).__name__}: "
                               f"{exc}") from None


def calculation_step(expression: str, iteration: int = 0) -> CalculationStep:
    """A `calculation` step holding the result or the error; never raises."""
    started = time.perf_counter()
    text = expression if isinstance(expression, str) else repr(expression)
    try:
        result: float | None = calculate(expression)
        error = ""
    except CalculationError as exc:
        result, error = None, str(exc)
    except Exception as exc:  # noqa: BLE001 — the step must exist even if the walk itself breaks unexpectedly
        result, error = None, f"calculation failed: {type(exc).__name__}: {exc}"
    return CalculationStep(
        iteration=iteration,
        title="calculate",
        elapsed_ms=(time.perf_counter() - started) * 1000,
        expression=text[:MAX_CHARS],
        result=result,
        error=error,
    )


def _parse(expression: str) -> ast.Expression:
    if not isinstance(expression, str):
        raise CalculationError(f"expression must be text, got {type(expression).__name__}")
    if not expression.strip():
        raise CalculationError("empty expression; write arithmetic such as 2023 - 1999")
    if len(expression) > MAX_CHARS:
        raise CalculationError(
            f"expression is {len(expression)} characters long; at most {MAX_CHARS} are allowed"
        )
    try:
        with warnings.catch_warnings():  # "1e3x" warns before it fails; the error message says enough
            warnings.simplefilter("ignore", SyntaxWarning)
            tree = ast.parse(expression.strip(), mode="eval")
    except (SyntaxError, ValueError, RecursionError, MemoryError) as exc:
        raise CalculationError(f"expression {expression[:60]!r} is not valid arithmetic: {exc}") from None
    count = sum(1 for _ in ast.walk(tree))
    if count > MAX_NODES:
        raise CalculationError(f"expression has {count} parts; at most {MAX_NODES} are allowed")
    return tree


def _evaluate(node: ast.AST, budget: _Budget) -> Number:
    budget.check()
    if isinstance(node, ast.Constant):
        return _checked(_constant(node.value))
    if isinstance(node, ast.BinOp) and (type(node.op) in _BINARY or isinstance(node.op, ast.Pow)):
        return _binary(node, budget)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _UNARY:
        return _checked(_UNARY[type(node.op)](_evaluate(node.operand, budget)))
    if isinstance(node, ast.Call):
        return _call(node, budget)
    raise CalculationError(f"{_describe(node)} is not allowed in a calculation; allowed: {ALLOWED}")


def _constant(value: object) -> Number:
    # bool is an int subclass, so `True + 1` would otherwise slip through as arithmetic
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CalculationError(f"constant {value!r} is not allowed in a calculation; allowed: {ALLOWED}")
    return value


def _binary(node: ast.BinOp, budget: _Budget) -> Number:
    left = _evaluate(node.left, budget)
    right = _evaluate(node.right, budget)
    if isinstance(node.op, ast.Pow):
        return _checked(_power(left, right))
    try:
        return _checked(_BINARY[type(node.op)](left, right))
    except ZeroDivisionError:
        raise CalculationError(f"division by zero in {left!r} {_symbol(node.op)} {right!r}") from None


def _power(base: Number, exponent: Number) -> Number:
    """base ** exponent, its size bounded before it is computed: (1e-10) ** -50 raised OverflowError (issue 15)."""
    if abs(exponent) > MAX_EXPONENT:
        raise CalculationError(
            f"exponent {exponent!r} is too large; |exponent| ≤ {MAX_EXPONENT} is allowed"
        )
    if base == 0:
        if exponent < 0:
            raise CalculationError(f"division by zero in 0 ** {exponent!r}")
        return base**exponent
    shown = f"({base!r})" if base < 0 else repr(base)
    if base < 0 and not float(exponent).is_integer():
        raise CalculationError(f"{shown} ** {exponent!r} has no real value")
    if exponent * math.log10(abs(base)) > math.log10(MAX_MAGNITUDE):
        raise CalculationError(f"{shown} ** {exponent!r} exceeds the magnitude limit {MAX_MAGNITUDE:.0e}")
    return base**exponent


def _call(node: ast.Call, budget: _Budget) -> Number:
    name = node.func.id if isinstance(node.func, ast.Name) else ""
    if name not in _CALLS:
        raise CalculationError(f"{_describe(node.func)} cannot be called; allowed calls: {', '.join(_CALLS)}")
    if node.keywords or any(isinstance(a, ast.Starred) for a in node.args):
        raise CalculationError(f"{name}() takes plain arguments only (no keywords or *args)")
    if name in _LIST_CALLS and len(node.args) == 1 and isinstance(node.args[0], (ast.List, ast.Tuple)):
        items = node.args[0].elts
        if len(items) > MAX_ITEMS:
            raise CalculationError(f"{name}() got {len(items)} numbers; at most {MAX_ITEMS} are allowed")
        return _checked(_apply_list(name, [_evaluate(a, budget) for a in items]))
    if name in ("sum", "len"):
        raise CalculationError(f"{name}() takes one list or tuple of numbers, e.g. {name}([1, 2, 3])")
    args = [_evaluate(a, budget) for a in node.args]
    return _checked(_apply(name, args))


def _apply_list(name: str, items: list[Number]) -> Number:
    if name == "len":
        return len(items)
    if name == "sum":
        return sum(items)
    return _apply(name, items)


def _apply(name: str, args: list[Number]) -> Number:
    if name in ("min", "max"):
        if not args:
            raise CalculationError(f"{name}() needs at least one number")
        return min(args) if name == "min" else max(args)
    if name in ("abs", "float", "int"):
        if len(args) != 1:
            raise CalculationError(f"{name}() takes exactly one number, got {len(args)}")
        return {"abs": abs, "float": float, "int": int}[name](args[0])
    if len(args) not in (1, 2):
        raise CalculationError(f"round() takes a number and optional digits, got {len(args)} arguments")
    if len(args) == 2 and (not float(args[1]).is_integer() or abs(args[1]) > MAX_ROUND_DIGITS):
        raise CalculationError(
            f"round() digits must be a whole number within ±{MAX_ROUND_DIGITS}, got {args[1]!r}"
        )
    return round(args[0], int(args[1])) if len(args) == 2 else round(args[0])


def _checked(value: Number) -> Number:
    if isinstance(value, float) and not math.isfinite(value):
        raise CalculationError(f"result {value!r} is not a finite number")
    if abs(value) > MAX_MAGNITUDE:
        raise CalculationError(
            f"intermediate value {_size(value)} exceeds the magnitude limit {MAX_MAGNITUDE:.0e}"
        )
    return value


def _size(value: Number) -> str:
    """A huge number in a few characters; a 400-digit int has no float form (`:.3g` raised OverflowError)."""
    return f"{value:.3g}" if abs(value) < 1e300 else f"of about 10^{math.log10(abs(value)):.0f}"


def _describe(node: ast.AST) -> str:
    if isinstance(node, ast.Name):
        return f"name {node.id!r}"
    if isinstance(node, ast.Attribute):
        return f"attribute access '.{node.attr}'"
    if isinstance(node, (ast.BinOp, ast.UnaryOp, ast.BoolOp, ast.Compare)):
        op = getattr(node, "op", None) or getattr(node, "ops", [None])[0]
        return f"operator {type(op).__name__}"
    return f"{type(node).__name__.lower()} expression"


def _symbol(op: ast.operator) -> str:
    return {ast.Div: "/", ast.FloorDiv: "//", ast.Mod: "%"}.get(type(op), type(op).__name__)
