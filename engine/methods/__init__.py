"""Reasoning methods, one folder each; importing this package registers every one of them.

The public API for writing a method of your own (README "Write your own method"):

    from engine.methods import Method, RunContext, register
    from engine.trace import AnswerStep, RetrievalStep, Step

A method is a `Method` subclass with `id`, `label`, `description` (`paper` if any), a frozen `Params`
dataclass and a `run(question, ctx)` generator of steps, decorated with `@register`. Put its
file in `$RAGSCOPE_HOME/methods/`, or ship it in a package with a `ragscope.methods` entry point:
`plugins.py` loads both the first time methods are listed (`method_ids`, `get_method`).
"""

import importlib
import pkgutil

from engine.methods.base import METHODS, Method, RunContext, get_method, method_ids, register

__all__ = ["METHODS", "Method", "RunContext", "get_method", "method_ids", "register"]

for _module in pkgutil.iter_modules(__path__):
    if _module.ispkg:  # each method is a package whose __init__ registers it
        importlib.import_module(f"{__name__}.{_module.name}")
