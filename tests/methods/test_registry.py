"""Every method module registers exactly one method, and names are checked."""

from __future__ import annotations

import pkgutil

import pytest

import engine.methods
from engine.errors import UnknownNameError
from engine.methods.base import METHODS, get_method, method_ids

HELPER_MODULES = {"base", "common"}


def test_every_method_module_registers_exactly_one_method():
    modules = {m.name for m in pkgutil.iter_modules(engine.methods.__path__)} - HELPER_MODULES
    registered = [cls.__module__.rsplit(".", 1)[-1] for cls in METHODS.values()]
    assert sorted(registered) == sorted(modules)


def test_every_method_declares_label_paper_description_and_params():
    for method_id in method_ids():
        method = get_method(method_id)
        assert method.id == method_id and method.label and method.paper and method.description
        method.Params()  # defaults alone make a valid parameter set


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(UnknownNameError, match=r"unknown method 'tog3'; known: .*vanilla"):
        get_method("tog3")
