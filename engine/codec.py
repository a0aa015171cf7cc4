"""Typed JSON conversion for frozen dataclasses, so every boundary object round-trips exactly."""

from __future__ import annotations

import dataclasses
import types
import typing
from functools import lru_cache
from typing import Any, TypeVar

T = TypeVar("T")


def to_jsonable(value: Any) -> Any:
    """Dataclasses become dicts, tuples become lists; everything else must already be JSON."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: to_jsonable(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, (list, tuple)):
        return [to_jsonable(v) for v in value]
    if isinstance(value, dict):
        return {str(k): to_jsonable(v) for k, v in value.items()}
    return value


@lru_cache(maxsize=None)
def _hints(cls: type) -> dict[str, Any]:
    return typing.get_type_hints(cls)


def from_jsonable(tp: Any, data: Any) -> Any:
    """Rebuild a value of type `tp` from `to_jsonable` output; unknown dict keys are ignored."""
    origin = typing.get_origin(tp)
    if tp is Any or tp is None or tp is type(None):
        return data
    if origin in (typing.Union, types.UnionType):
        if data is None:
            return None
        options = [a for a in typing.get_args(tp) if a is not type(None)]
        for option in options:
            if _matches(option, data):
                return from_jsonable(option, data)
        return data
    if dataclasses.is_dataclass(tp):
        hints = _hints(tp)
        known = {f.name for f in dataclasses.fields(tp) if f.init}
        kwargs = {k: from_jsonable(hints[k], v) for k, v in data.items() if k in known}
        return tp(**kwargs)
    if origin is tuple:
        args = typing.get_args(tp)
        if len(args) == 2 and args[1] is Ellipsis:
            return tuple(from_jsonable(args[0], v) for v in data)
        return tuple(from_jsonable(a, v) for a, v in zip(args, data))
    if origin is list:
        (arg,) = typing.get_args(tp) or (Any,)
        return [from_jsonable(arg, v) for v in data]
    if origin is dict:
        _, arg = typing.get_args(tp) or (str, Any)
        return {k: from_jsonable(arg, v) for k, v in data.items()}
    if tp is float and isinstance(data, int) and not isinstance(data, bool):
        return float(data)
    return data


def _matches(tp: Any, data: Any) -> bool:
    origin = typing.get_origin(tp) or tp
    if dataclasses.is_dataclass(tp):
        return isinstance(data, dict)
    if origin in (tuple, list):
        return isinstance(data, list)
    if origin is dict:
        return isinstance(data, dict)
    if tp is float:
        return isinstance(data, (int, float)) and not isinstance(data, bool)
    if tp is int:
        return isinstance(data, int) and not isinstance(data, bool)
    if isinstance(tp, type):
        return isinstance(data, tp)
    return True
