"""Method parameters: one dataclass per method whose field metadata holds bounds and help.

The UI builds sliders and the CLI builds flags from these fields (STYLE 8); nothing else
describes a method's parameters.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass, field
from typing import Any

from engine.errors import RagscopeError


def param(default: Any, *, help: str, min: float | None = None, max: float | None = None,
          choices: tuple[str, ...] = ()) -> Any:
    return field(default=default, metadata={"help": help, "min": min, "max": max, "choices": choices})


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: type
    default: Any
    help: str
    min: float | None
    max: float | None
    choices: tuple[str, ...]


def param_specs(params_cls: type) -> tuple[ParamSpec, ...]:
    specs = []
    for f in dataclasses.fields(params_cls):
        meta = f.metadata
        specs.append(ParamSpec(name=f.name, type=type(f.default), default=f.default,
                               help=meta.get("help", ""), min=meta.get("min"), max=meta.get("max"),
                               choices=tuple(meta.get("choices", ()))))
    return tuple(specs)


def build_params(params_cls: type, values: dict[str, Any] | None = None) -> Any:
    """Coerce and bound-check user values; unknown names and out-of-range values are errors."""
    values = dict(values or {})
    specs = {s.name: s for s in param_specs(params_cls)}
    unknown = sorted(set(values) - set(specs))
    if unknown:
        raise RagscopeError(f"unknown parameter(s) {', '.join(unknown)}; known: {', '.join(specs)}")
    kwargs = {name: _coerce(specs[name], value) for name, value in values.items()}
    return params_cls(**kwargs)


def _coerce(spec: ParamSpec, value: Any) -> Any:
    try:
        if spec.type is bool and isinstance(value, str):
            coerced: Any = value.strip().lower() in ("1", "true", "yes", "on")
        else:
            coerced = spec.type(value)
    except (TypeError, ValueError):
        raise RagscopeError(f"parameter {spec.name}={value!r} is not a {spec.type.__name__}") from None
    if spec.choices and coerced not in spec.choices:
        raise RagscopeError(f"parameter {spec.name}={coerced!r}; allowed: {', '.join(spec.choices)}")
    if spec.min is not None and coerced < spec.min or spec.max is not None and coerced > spec.max:
        raise RagscopeError(f"parameter {spec.name}={coerced} outside [{spec.min}, {spec.max}]")
    return coerced
