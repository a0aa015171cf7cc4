"""Every method folder registers exactly one method, named after the folder, and names are checked."""

from __future__ import annotations

import pkgutil

import pytest

import engine.methods
from engine.errors import UnknownNameError
from engine.methods.base import METHODS, get_method, method_ids


def test_every_method_folder_registers_exactly_one_method_with_the_folders_name():
    folders = {m.name for m in pkgutil.iter_modules(engine.methods.__path__) if m.ispkg}
    registered = [cls.__module__.split(".")[2] for cls in METHODS.values()]
    assert sorted(registered) == sorted(folders) == sorted(METHODS)


def test_the_package_exports_what_a_users_own_method_needs():
    from engine.methods import Method, RunContext, register

    assert (Method, RunContext, register) == (engine.methods.base.Method, engine.methods.base.RunContext,
                                              engine.methods.base.register)


def test_every_method_declares_label_paper_description_and_params():
    for method_id in method_ids():
        method = get_method(method_id)
        assert method.id == method_id and method.label and method.paper and method.description
        method.Params()  # defaults alone make a valid parameter set


def test_unknown_method_lists_the_known_ones():
    with pytest.raises(UnknownNameError, match=r"unknown method 'tog3'; known: .*vanilla"):
        get_method("tog3")
