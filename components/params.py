"""Parameter widgets built from a method's Params dataclass (the only parameter schema, STYLE 8)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import streamlit as st

from engine.params import ParamSpec


def param_inputs(specs: Sequence[ParamSpec], *, key: str) -> dict[str, Any]:
    """One widget per field: choices → selectbox, bounded numbers → slider, bool → toggle, a number that may be
    unset (default None) → a box left empty for none."""
    values: dict[str, Any] = {}
    for spec in specs:
        wkey = f"{key}.{spec.name}"
        label = spec.name.replace("_", " ")
        if spec.choices:
            values[spec.name] = st.selectbox(label, spec.choices, index=spec.choices.index(spec.default),
                                             key=wkey, help=spec.help)
        elif spec.type is bool:
            values[spec.name] = st.toggle(label, value=spec.default, key=wkey, help=spec.help)
        elif spec.optional:  # empty means unset (e.g. no time limit): a box that may stay empty, not a slider
            values[spec.name] = st.number_input(label, value=None, min_value=spec.min, max_value=spec.max, key=wkey,
                                                help=spec.help, placeholder="none")
        elif spec.type in (int, float) and spec.min is not None and spec.max is not None:
            cast = spec.type
            values[spec.name] = st.slider(label, cast(spec.min), cast(spec.max), cast(spec.default), key=wkey,
                                          help=spec.help)
        elif spec.type in (int, float):
            values[spec.name] = st.number_input(label, value=spec.default, key=wkey, help=spec.help)
        else:
            values[spec.name] = st.text_input(label, value=str(spec.default), key=wkey, help=spec.help)
    return values


def widget_values(specs: Sequence[ParamSpec], params: Mapping[str, Any], *, key: str) -> dict[str, Any]:
    """Widget key → value that makes `param_inputs(specs, key=key)` show `params` (a run's recorded
    parameters). A value a widget cannot show (unknown choice, out of range, wrong type: a trace from an
    older version or another tool) is left out, so the widget keeps its own."""
    values: dict[str, Any] = {}
    for spec in specs:
        if spec.name not in params:
            continue
        value = params[spec.name]
        if value is None:
            ok = spec.optional
        elif spec.choices:
            ok = value in spec.choices
        elif spec.type is bool:
            ok = isinstance(value, bool)
        elif spec.type in (int, float):
            ok = isinstance(value, (int, float)) and not isinstance(value, bool) and (
                (spec.min is None or value >= spec.min) and (spec.max is None or value <= spec.max))
            value = spec.type(value) if ok else value
        else:
            ok, value = True, str(value)
        if ok:
            values[f"{key}.{spec.name}"] = value
    return values
