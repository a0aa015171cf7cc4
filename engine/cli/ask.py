"""`ask`: answer one question and print the steps (or the trace JSON).

Exit status: 0 answered; 2 bad input or a run that failed on its own (untrained retriever, unusable checkpoint);
BACKEND_FAILED (3) the answer rests on a failed backend — a model server or vector store failed during the run.

`--graph-out PATH` also writes the query-specific graph of one round (`--graph-round N`, default the last) as
GraphML or JSON (engine/graph/export.py). A method that builds no graph (vanilla, r2ag, rulerag) is a usage
error (exit 2, nothing written): asking it for a graph is a mistake. A graph method whose graph is empty as of
that round (hybrid found no entity) writes the empty graph, with a warning: that is a result, not a mistake."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from engine.cli.command import USAGE_ERROR, Command, add_model_options, add_param_option, parse_params, workbench
from engine.cli.evaluate import BACKEND_FAILED
from engine.errors import RagscopeError

if TYPE_CHECKING:
    from engine.trace import Trace


def _arguments(parser: argparse.ArgumentParser) -> None:
    add_model_options(parser)
    parser.add_argument("--method", default="vanilla", help="method id (default vanilla)")
    add_param_option(parser, "method parameter, repeatable (e.g. -p k=8)")
    parser.add_argument("--json", action="store_true", help="print the trace JSON instead of the steps")
    parser.add_argument("--graph-out", type=Path, metavar="PATH",
                        help="also write the graph of one round to PATH: .graphml (Gephi, networkx) or .json")
    parser.add_argument("--graph-round", type=int, metavar="N",
                        help="the round --graph-out writes (default: the run's last round)")
    parser.add_argument("question")


def _run(args: argparse.Namespace) -> int:
    """A run that failed still prints its steps, then exits BACKEND_FAILED when a backend failed under its answer
    (also when a tool fell back and the run went on), else 2 when it could not go on (untrained retriever…)."""
    from engine.app import runs
    from engine.textview import format_step
    from engine.trace import ErrorStep

    _check_graph_options(args)
    run = runs.start(workbench(args), args.question, args.method, parse_params(args.param))
    for step in run:
        if not args.json:
            print(format_step(step), flush=True)
    if args.json:
        print(run.trace.to_json(indent=2))
    graph_status = _graph_out(run.trace, args) if args.graph_out is not None else 0
    failure = runs.backend_failure(run.trace)
    if failure is not None:
        print(f"error: the answer rests on a failed backend: {failure.message}", file=sys.stderr)
        return BACKEND_FAILED
    fatal = [s for s in run.trace.steps if isinstance(s, ErrorStep) and not s.recoverable]
    if fatal:
        print(f"error: the run failed: {fatal[0].message}", file=sys.stderr)
        return USAGE_ERROR
    return graph_status


def _check_graph_options(args: argparse.Namespace) -> None:
    """Before the run, what can be checked without it: the file's suffix, and a round with no file to go to."""
    from engine.trace_graph.export import graph_format

    if args.graph_out is None:
        if args.graph_round is not None:
            raise RagscopeError("--graph-round needs --graph-out PATH (the file to write the graph to)")
        return
    graph_format(args.graph_out)
    if args.graph_round is not None and args.graph_round < 0:
        raise RagscopeError(f"--graph-round {args.graph_round} is negative; rounds count from 0 (set-up)")


def _graph_out(trace: Trace, args: argparse.Namespace) -> int:
    """Write the graph file; after the run, so a bad round or a method with no graph is a message, not a crash."""
    from engine.trace_graph.export import builds_graph, checked_round, write_graph

    if not builds_graph(trace):
        print(f"error: method {trace.method} builds no graph (no graph_delta step); {args.graph_out} not written",
              file=sys.stderr)
        return USAGE_ERROR
    try:
        iteration = checked_round(trace, args.graph_round)
    except RagscopeError as exc:
        print(f"error: {exc}; {args.graph_out} not written", file=sys.stderr)
        return USAGE_ERROR
    view = write_graph(trace, iteration, args.graph_out)
    summary = f"{len(view.nodes)} nodes, {len(view.edges)} edges as of round {iteration}"
    if not view.nodes:
        print(f"warning: the graph is empty as of round {iteration}; wrote an empty graph to {args.graph_out}",
              file=sys.stderr)
    else:
        print(f"graph: {summary} written to {args.graph_out}", file=sys.stderr)
    return 0


COMMAND = Command("ask", "answer one question and print the steps", _arguments, _run)
