"""The CLI package: one module per command, each listed once in COMMANDS, and the parser built from them."""

from __future__ import annotations

import argparse
import importlib
import pkgutil

import engine.cli
from engine.cli import COMMANDS, build_parser
from engine.cli.command import Command


def _subcommands(parser: argparse.ArgumentParser) -> list[str]:
    """The subcommand names in the order `--help` lists them."""
    action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return list(action.choices)


def test_every_command_module_is_listed_in_commands_and_no_name_twice():
    names = [m.name for m in pkgutil.iter_modules(engine.cli.__path__) if m.name != "command"]
    for name in names:
        module = importlib.import_module(f"engine.cli.{name}")
        exposed = getattr(module, "COMMANDS", None) or (module.COMMAND,)
        assert exposed and all(command in COMMANDS for command in exposed), name
    assert len({c.name for c in COMMANDS}) == len(COMMANDS)
    assert _subcommands(build_parser(COMMANDS)) == [c.name for c in COMMANDS]


def test_a_command_is_its_name_help_arguments_and_run():
    hello = Command("hello", "say hello", lambda parser: parser.add_argument("--name", default="you"),
                    lambda args: len(args.name))
    args = build_parser([hello]).parse_args(["hello", "--name", "Ada"])
    assert args.run(args) == 3
    assert "say hello" in build_parser([hello]).format_help()


def test_merge_evals_is_listed_right_after_eval():
    names = _subcommands(build_parser(COMMANDS))
    assert names.index("merge-evals") == names.index("eval") + 1
