"""Method parameters: one dataclass per method whose field metadata holds bounds and help; and the
run's answer policy, which every method shares and none declares.

The UI builds sliders and the CLI builds flags from these fields (STYLE 8); nothing else
describes a method's parameters.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

from engine.errors import RagscopeError


@runtime_checkable
class OpenChoices(Protocol):
    """Choices known only when asked, e.g. `retriever=` with the user's own retrievers (issue 25): iterating
    gives the names a form offers now; `check` accepts those and any value the list cannot enumerate (a
    `module:factory`), and raises RagscopeError saying why for anything else."""

    def __iter__(self) -> Iterator[str]: ...

    def check(self, value: str) -> None: ...


def param(default: Any, *, help: str, min: float | None = None, max: float | None = None,
          choices: tuple[str, ...] | OpenChoices = (), kind: type | None = None) -> Any:
    """A field with its bounds and help. `kind` is the type of a field whose default is None (unset: e.g. no time
    limit), which "none" or an empty value sets again."""
    return field(default=default, metadata={"help": help, "min": min, "max": max, "choices": choices, "kind": kind})


@dataclass(frozen=True)
class ParamSpec:
    name: str
    type: type
    default: Any
    help: str
    min: float | None
    max: float | None
    choices: tuple[str, ...]  # as of when the spec was read, for open choices
    check: Callable[[str], None] | None = None  # an open choice's own check (replaces `in choices`)

    @property
    def optional(self) -> bool:
        """None (unset) is a value: the default is None and the field's type is `kind`."""
        return self.default is None


def param_specs(params_cls: type) -> tuple[ParamSpec, ...]:
    specs = []
    for f in dataclasses.fields(params_cls):
        meta = f.metadata
        declared = meta.get("choices", ())
        specs.append(ParamSpec(name=f.name, type=meta.get("kind") or type(f.default), default=f.default,
                               help=meta.get("help", ""), min=meta.get("min"), max=meta.get("max"),
                               choices=tuple(declared),
                               check=declared.check if isinstance(declared, OpenChoices) else None))
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


MAX_TIMEOUT_S = 86_400.0  # a day: a longer limit is a typo for no limit
DEFAULT_MIN_CONFIDENCE = 0.5  # answer only when right is likelier than wrong: a positive CRAG score per answer


@dataclass(frozen=True)
class AnswerPolicy:
    """How a run settles its final answer, whatever the method (issue 24): an offline answer whose calibrated
    confidence (engine.calibration) is below `min_confidence` becomes "I don't know", keeping the best guess it
    held back; a run still going after `timeout_s` seconds stops and refuses (issue 26). An option of the run,
    not of a method's `Params`; the trace's head records it, so a replay shows which policy refused. Its fields
    are params like a method's, so the UI and the CLI build inputs from them."""

    min_confidence: float = param(DEFAULT_MIN_CONFIDENCE, min=0.0, max=1.0,
                                  help="Offline: calibrated confidence below which the answer becomes \"I don't "
                                       "know\" (0.5: answer only when right is likelier than wrong; 0 never refuses).")
    timeout_s: float | None = param(None, kind=float, min=0.1, max=MAX_TIMEOUT_S,
                                    help="Wall-clock limit of the run in seconds (issue 26); at the limit the run "
                                         "stops, keeps its steps and refuses to answer. Empty or none: no limit.")


def split_policy(values: Mapping[str, Any] | None) -> tuple[dict[str, Any], AnswerPolicy | None]:
    """A params dict as the CLI's `-p`, a saved trace or an older form gives it → (the method's params, the
    answer policy its policy names set, or None when it names none). `-p min_confidence=0` keeps working."""
    names = {spec.name for spec in param_specs(AnswerPolicy)}
    values = dict(values or {})
    policy = {name: values.pop(name) for name in names & set(values)}
    return values, build_params(AnswerPolicy, policy) if policy else None


_TRUE, _FALSE = ("1", "true", "yes", "on"), ("0", "false", "no", "off")
_UNSET = ("", "none")  # an optional field's "not set", as -p NAME= or -p NAME=none writes it
_KIND = {bool: "true or false", int: "a whole number", float: "a number", str: "text"}


def _coerce(spec: ParamSpec, value: Any) -> Any:
    if spec.optional and (value is None or isinstance(value, str) and value.strip().lower() in _UNSET):
        return None
    kind = _KIND.get(spec.type, spec.type.__name__)
    try:
        coerced = _convert(spec.type, value)
    except (TypeError, ValueError, OverflowError):
        raise RagscopeError(f"parameter {spec.name}={_shown(value)} is not {kind}; allowed: {_allowed(spec)}") from None
    # nan fails every comparison below (all are False) and would pass them, so it is refused by name
    if isinstance(coerced, float) and not math.isfinite(coerced):
        raise RagscopeError(f"parameter {spec.name}={_shown(value)} is not a finite number; allowed: {_allowed(spec)}")
    if spec.check is not None:
        try:
            spec.check(coerced)
        except RagscopeError as exc:
            raise type(exc)(f"parameter {spec.name}={_shown(coerced)}: {exc}") from None
    elif spec.choices and coerced not in spec.choices:
        raise RagscopeError(f"parameter {spec.name}={_shown(coerced)}; allowed: {_allowed(spec)}")
    if spec.min is not None and coerced < spec.min or spec.max is not None and coerced > spec.max:
        raise RagscopeError(f"parameter {spec.name}={_shown(coerced)} outside [{spec.min}, {spec.max}]"
                            + ("; or none to leave it unset" if spec.optional else ""))
    return coerced


def _allowed(spec: ParamSpec) -> str:
    return _values(spec) + (" or none" if spec.optional else "")


def _values(spec: ParamSpec) -> str:
    if spec.choices:
        return ", ".join(spec.choices)
    if spec.min is not None or spec.max is not None:
        return f"[{spec.min}, {spec.max}]"
    if spec.type is bool:
        return "/".join(_TRUE) + " or " + "/".join(_FALSE)
    return _KIND.get(spec.type, spec.type.__name__)


def _shown(value: Any) -> str:
    """The value for a message, cut short: a 10,000-digit one must not flood the terminal (or fail to print)."""
    try:
        text = repr(value)
    except ValueError:  # an int past Python's 4,300-digit conversion limit
        text = "<a number too long to show>"
    return text if len(text) <= 40 else text[:39] + "…"


def _convert(kind: type, value: Any) -> Any:
    """CLI values arrive as text: booleans must say yes or no, and no other type may pass for a bool."""
    if kind is bool:
        text = str(value).strip().lower()
        if isinstance(value, bool) or text in _TRUE + _FALSE:
            return value if isinstance(value, bool) else text in _TRUE
        raise ValueError(value)
    if isinstance(value, bool):  # True is an int in Python; k=True is a mistake, not 1
        raise TypeError(value)
    return kind(value)
