"""Typed JSON conversion for frozen dataclasses, so every boundary object round-trips exactly, and
bounded decoding of untrusted JSON text (packs, exports, saved traces)."""

from __future__ import annotations

import dataclasses
import json
import re
import types
import typing
from functools import cache
from typing import Any

from engine.errors import PackError

# Far beyond any real record (a trace nests about 6 deep) and far below Python's recursion limit,
# so nothing that walks the decoded value recursively (to_jsonable, repr, a renderer) can overflow.
MAX_JSON_DEPTH = 64
# Every integer in ragscope data is a count, rank or offset; 18 digits stay inside SQLite's int64,
# and rejecting longer literals here keeps Python's 4,300-digit ValueError from surfacing (issue 15).
MAX_INT_DIGITS = 18
# A lone UTF-16 surrogate decodes fine but cannot be encoded as UTF-8: SQLite, file writes and
# the UI would fail on it later, far from the input that carried it (issue 15, item 7).
SURROGATE = re.compile("[\ud800-\udfff]")
# The pre-scan reads each character once (issue 26, item 3): every pattern is matched anchored where the
# scan stands, always matches (possibly empty) and is possessive, so it never backtracks nor re-reads the
# rest of the text from a later start, as a search for a closing quote did on `\"\"\"…` (quadratic).
_BETWEEN = re.compile(r'[^"\[\]{}0-9-]*+')  # what cannot start a token: skipped
_STRING_BODY = re.compile(r'(?:[^"\\]++|\\[\s\S])*+')  # up to the closing quote, or the end of the text
_NUMBER = re.compile(r"-?([0-9]*+)(\.[0-9]++)?+([eE][-+]?[0-9]++)?+")  # JSON's grammar, leading zeros allowed

def to_jsonable(value: Any) -> Any:
    """Dataclasses become dicts, tuples become lists; everything else must already be JSON."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value


def loads_bounded(text: str, label: str, first_line: int = 1) -> Any:
    """`json.loads` for untrusted text: too deep, too large or unencodable input is a PackError.

    Python's own decoder crashes on these (RecursionError, a 4,300-digit ValueError) or lets them
    through (lone surrogates), so one linear pre-scan rejects them first; any other ValueError of the
    decoder is a PackError too, so callers catch one type. Every message reads `label:line: problem`;
    `first_line` is the line `text` starts on (a JSONL record's line).
    """
    problem, position = _scan(text)
    if problem:
        line = first_line + text.count("\n", 0, position)
        raise PackError([f"{label}:{line}: {problem}"])
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        line = first_line + exc.lineno - 1
        raise PackError([f"{label}:{line}: not valid JSON ({exc.msg} at column {exc.colno})"]) from None
    except ValueError as exc:  # what the pre-scan let through, if anything: still the caller's one error type
        raise PackError([f"{label}:{first_line}: not valid JSON ({exc})"]) from None


def _scan(text: str) -> tuple[str, int]:
    """The first structural problem of `text` and where it starts, or ("", 0).

    One pass, token by token: strings (checked for lone surrogate escapes), brackets (counted for depth)
    and numbers (an integer part with no fraction or exponent is one `int()` would parse). Whatever else
    is there is skipped; the full parse reports it.
    """
    depth, position, end = 0, 0, len(text)
    while (position := _BETWEEN.match(text, position).end()) < end:
        start, first = position, text[position]
        if first == '"':
            position = _STRING_BODY.match(text, start + 1).end() + 1  # past the closing quote
            if text.find("\\u", start, position) >= 0 and _has_lone_surrogate(text[start:position]):
                return ("a string contains a lone UTF-16 surrogate (an escape in \\ud800-\\udfff without "
                        "its pair), which is not text; remove it", start)
        elif first in "[{":
            depth, position = depth + 1, start + 1
            if depth > MAX_JSON_DEPTH:
                return f"nested deeper than {MAX_JSON_DEPTH} levels; flatten the data", start
        elif first in "]}":
            depth, position = depth - 1, start + 1
        else:
            number = _NUMBER.match(text, start)
            position = number.end()
            digits, fraction, exponent = number.groups()
            if len(digits) > MAX_INT_DIGITS and fraction is None and exponent is None:
                return (f"integer with {len(digits)} digits; at most {MAX_INT_DIGITS} are allowed "
                        "(write a larger number as a string)", start)
    return "", 0


def _has_lone_surrogate(token: str) -> bool:
    """Whether a JSON string token decodes to text with a lone surrogate (which UTF-8 cannot encode)."""
    try:
        json.loads(token).encode("utf-8")
    except UnicodeEncodeError:
        return True
    except ValueError:
        return False  # a malformed string: the full parse reports it with its column
    return False


@cache
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_jsonable(tp: Any, data: Any, path: str = "value") -> Any:
    """Rebuild a value of type `tp` from `to_jsonable` output, checking every type on the way.

    Saved traces are files anyone can edit: a wrong type raises TypeError naming where it sits
    (`steps[2].hits[0].score`) instead of a crash later in a renderer or in SQLite. Unknown keys are
    ignored, so a file written by a newer version still opens.
    """
    origin = typing.get_origin(tp)
    if tp is Any:
        return data
    if origin in (typing.Union, types.UnionType):
        return _from_union(tp, data, path)
    if dataclasses.is_dataclass(tp):
        return _from_dataclass(tp, _expect(dict, data, path), path)
    if origin is tuple:
        arg = typing.get_args(tp)[0]  # tuple[X, ...]: the only tuple shape the trace uses
        return tuple(from_jsonable(arg, v, f"{path}[{i}]") for i, v in enumerate(_expect(list, data, path)))
    if origin is dict:
        _, arg = typing.get_args(tp)
        return {k: from_jsonable(arg, v, f"{path}.{k}") for k, v in _expect(dict, data, path).items()}
    if tp is float:
        return _as_float(data, path)
    return _expect(tp, data, path)


def _from_union(tp: Any, data: Any, path: str) -> Any:
    options = typing.get_args(tp)
    for option in options:
        try:
            return from_jsonable(option, data, path)
        except TypeError:
            continue
    wanted = " or ".join(_type_name(o) for o in options)
    raise TypeError(f"{path} must be {wanted}, got {_type_name(type(data))}")


def _from_dataclass(tp: type, data: dict[str, Any], path: str) -> Any:
    hints = _hints(tp)
    fields = [f for f in dataclasses.fields(tp) if f.init]
    missing = [f.name for f in fields if f.name not in data and f.default is dataclasses.MISSING
               and f.default_factory is dataclasses.MISSING]
    if missing:
        raise TypeError(f"{path} is missing {', '.join(repr(m) for m in missing)}")
    return tp(**{f.name: from_jsonable(hints[f.name], data[f.name], f"{path}.{f.name}")
                 for f in fields if f.name in data})


def _as_float(data: Any, path: str) -> float:
    if isinstance(data, bool) or not isinstance(data, (int, float)):
        raise TypeError(f"{path} must be a number, got {_type_name(type(data))}")
    try:
        return float(data)
    except OverflowError:
        raise TypeError(f"{path} is a number too large for a float") from None


def _expect(tp: type, data: Any, path: str) -> Any:
    """`data` itself when it is a `tp`; a bool is never an int here, though Python says it is."""
    if tp is type(None) and data is None:
        return data
    if isinstance(data, tp) and not (isinstance(data, bool) and tp is not bool):
        return data
    raise TypeError(f"{path} must be {_type_name(tp)}, got {_type_name(type(data))}")


def _type_name(tp: Any) -> str:
    """JSON's names, which are what a person editing the file sees."""
    names = {str: "a string", int: "an integer", float: "a number", bool: "true or false",
             type(None): "null", list: "a list", tuple: "a list", dict: "an object"}
    origin = typing.get_origin(tp) or tp
    if dataclasses.is_dataclass(origin):
        return "an object"
    return names.get(origin, getattr(origin, "__name__", str(origin)))
