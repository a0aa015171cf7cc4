"""What a method class must declare, checked by `register` so a bad one fails where it is defined.

Users' own methods (engine.methods.plugins) pass the same gate as the built-ins. The messages
name the class and say how to fix it, because a plugin's author reads them in the app.
"""

from __future__ import annotations

import dataclasses
import inspect
import re

from engine.errors import MethodError, RagscopeError
from engine.params import AnswerPolicy, build_params, param_specs

# ids end up in widget keys, URLs (?method=) and CLI flags: keep them plain
_ID = re.compile(r"[a-z][a-z0-9_-]{0,39}")
_PARAM_TYPES = (bool, int, float, str)  # what the UI has widgets for and the CLI can parse


def check_method(cls: type) -> None:
    """Raise MethodError naming what `cls` lacks; the caller has checked it is a Method."""
    name = cls.__qualname__
    if inspect.isabstract(cls):
        raise MethodError(f"{name} does not define run(self, question, ctx), the generator of its steps")
    method_id = getattr(cls, "id", None)
    if not isinstance(method_id, str) or not _ID.fullmatch(method_id):
        raise MethodError(f"{name}.id is {method_id!r}; give 1-40 lower-case letters, digits, _ or -, starting "
                         "with a letter, e.g. id = 'my_rerank'")
    for attr in ("label", "description"):
        value = getattr(cls, attr, None)
        if not isinstance(value, str) or not value.strip():
            raise MethodError(f"{name}.{attr} is {value!r}; give a short text, the app shows it in the method list")
    _check_params(name, getattr(cls, "Params", None))


def _check_params(owner: str, params: object) -> None:
    """Frozen, every field defaulted with a type the UI and CLI can edit, and the defaults in bounds."""
    if not (isinstance(params, type) and dataclasses.is_dataclass(params)
            and params.__dataclass_params__.frozen):
        raise MethodError(f"{owner}.Params is {params!r}; give a @dataclass(frozen=True) class whose fields are "
                        "made with engine.params.param(default, help=...)")
    for field in dataclasses.fields(params):
        if type(field.default) not in _PARAM_TYPES:
            raise MethodError(f"{owner}.Params.{field.name} has default {field.default!r}; give every field a default "
                            "of type bool, int, float or str with engine.params.param(default, help=...)")
    taken = {spec.name for spec in param_specs(AnswerPolicy)} & {field.name for field in dataclasses.fields(params)}
    if taken:  # a params dict's min_confidence sets the run's policy (engine.params.split_policy), never this field
        raise MethodError(f"{owner}.Params.{min(taken)} is the run's answer policy (engine.params.AnswerPolicy), not "
                          "a method parameter; remove the field: the run applies it to every method")
    defaults = {spec.name: spec.default for spec in param_specs(params)}
    try:
        build_params(params, defaults)  # the bounds and choices checks a user's value gets
    except RagscopeError as exc:
        raise MethodError(f"{owner}.Params default: {exc}") from None
