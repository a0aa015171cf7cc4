"""`ask`: answer one question and print the steps (or the trace JSON).

Exit status: 0 answered; 2 bad input or a run that failed on its own (untrained retriever, unusable checkpoint);
BACKEND_FAILED (3) the answer rests on a failed backend — a model server or vector store failed during the run."""

from __future__ import annotations

import argparse
import sys

from engine.cli.command import USAGE_ERROR, Command, add_model_options, add_param_option, parse_params, workbench
from engine.cli.evaluate import BACKEND_FAILED


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_options(parser)
    parser.add_argument("--method", default="vanilla", help="method id (default vanilla)")
    add_param_option(parser, "method parameter, repeatable (e.g. -p k=8)")
    parser.add_argument("--json", action="store_true", help="print the trace JSON instead of the steps")
    parser.add_argument("question")


def _run(args: argparse.Namespace) -> int:
    """A run that failed still prints its steps, then exits BACKEND_FAILED when a backend failed under its answer
    (also when a tool fell back and the run went on), else 2 when it could not go on (untrained retriever…)."""
    from engine.app import runs
    from engine.textview import format_step
    from engine.trace import ErrorStep

    run = runs.start(workbench(args), args.question, args.method, parse_params(args.param))
    for step in run:
        if not args.json:
            print(format_step(step), flush=True)
    if args.json:
        print(run.trace.to_json(indent=2))
    failure = runs.backend_failure(run.trace)
    if failure is not None:
        print(f"error: the answer rests on a failed backend: {failure.message}", file=sys.stderr)
        return BACKEND_FAILED
    fatal = [s for s in run.trace.steps if isinstance(s, ErrorStep) and not s.recoverable]
    if fatal:
        print(f"error: the run failed: {fatal[0].message}", file=sys.stderr)
        return USAGE_ERROR
    return 0


COMMAND = Command("ask", "answer one question and print the steps", _arguments, _run)
