"""`methods`: each method with where it comes from, a plugin author's check that theirs loads."""

from __future__ import annotations

import argparse
import sys

from engine.cli.command import USAGE_ERROR, Command


def _run(args: argparse.Namespace) -> int:
    from engine.methods.base import METHODS, method_ids
    from engine.methods.plugins import load_plugins
    from engine.params import AnswerPolicy, param_specs

    plugins = load_plugins()
    policy = param_specs(AnswerPolicy)  # the run's answer policy: every method takes it
    for method_id in method_ids():
        cls = METHODS[method_id]
        print(f"{method_id:<16} {cls.label} ({plugins.source_of(method_id)})")
        print(f"{'':<16} -p " + " ".join(f"{s.name}={'none' if s.default is None else s.default}"
                                         for s in (*param_specs(cls.Params), *policy)))
    for problem in plugins.problems:
        print(f"error: {problem}", file=sys.stderr)
    return USAGE_ERROR if plugins.problems else 0


COMMAND = Command("methods", "list the methods, users' own (plugins) included, with their -p parameters; a plugin "
                             "that did not load is named on stderr (exit 2)", lambda parser: None, _run)
