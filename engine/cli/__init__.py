"""Command line: one module per command, each exposing a `Command`; the parser is built from COMMANDS.
Bad input prints a clear message and exits 2."""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

from engine.cli import (
    ask,
    compare_evals,
    diff,
    evaluate,
    export_traces,
    importers,
    index,
    ingest,
    merge_evals,
    methods,
    mine_rules,
    train_r2ag,
    train_retriever,
)
from engine.cli.command import USAGE_ERROR, Command
from engine.codec import SURROGATE
from engine.disk import disk_full, is_disk_full
from engine.errors import RagscopeError

# In the order `python -m engine --help` lists them.
COMMANDS: tuple[Command, ...] = (methods.COMMAND, ask.COMMAND, evaluate.COMMAND, merge_evals.COMMAND,
                                 compare_evals.COMMAND, index.COMMAND, ingest.COMMAND,
                                 *importers.COMMANDS, mine_rules.COMMAND, train_retriever.COMMAND,
                                 train_r2ag.COMMAND, export_traces.COMMAND, diff.COMMAND)


def main(argv: Sequence[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = build_parser(COMMANDS)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    try:
        _check_utf8(argv)
        args = parser.parse_args(argv)
        return args.run(args)
    except (RagscopeError, OSError) as exc:  # OSError: a full disk, a name too long — the path and why, no traceback
        print(f"error: {_for_user(exc)}", file=sys.stderr)
        return USAGE_ERROR
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130


def _for_user(exc: Exception) -> Exception:
    """A full disk met outside the writes that name their folder (DiskFull) is said the same way."""
    if isinstance(exc, OSError) and exc.filename and is_disk_full(exc):
        return disk_full(Path(exc.filename).parent, exc)
    return exc


def build_parser(commands: Sequence[Command]) -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m engine", description="ragscope engine")
    sub = parser.add_subparsers(required=True, metavar="COMMAND")
    for command in commands:
        options = sub.add_parser(command.name, help=command.help)
        command.add_arguments(options)
        options.set_defaults(run=command.run)
    return parser


def _check_utf8(argv: Sequence[str]) -> None:
    """Undecodable argument bytes arrive as lone surrogates (PEP 383) and crash whatever prints or
    stores them later; refuse them here, where the user can still see which argument is at fault."""
    for position, arg in enumerate(argv, start=1):
        bad = SURROGATE.search(arg)
        if bad:
            code = ord(bad.group())
            what = f"byte 0x{code - 0xDC00:02x}" if 0xDC80 <= code <= 0xDCFF else f"lone surrogate U+{code:04X}"
            shown = arg.encode("utf-8", "backslashreplace").decode("utf-8")
            raise RagscopeError(f"argument {position} '{shown[:80]}' is not valid UTF-8 text: {what} at "
                                f"character {bad.start() + 1}; retype it, or rename the file to a UTF-8 name")
