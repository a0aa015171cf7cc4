"""`compare-evals BEFORE AFTER`: two `eval --out` reports compared question by question (a regression view)."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from engine.cli.command import Command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("before", type=Path, help="the folder eval --out wrote for the baseline")
    parser.add_argument("after", type=Path, help="the folder eval --out wrote for the run compared with it")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON instead of tables")
    parser.add_argument("--seed", type=_seed, default=0, help="the bootstrap's seed (default 0): the same seed, the "
                                                            "same intervals")


def _seed(text: str) -> int:
    """A bootstrap seed: numpy takes whole numbers from 0 up."""
    try:
        seed = int(text)
    except ValueError:
        seed = -1
    if seed < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is not a seed; give a whole number from 0 up, e.g. --seed 0")
    return seed


def _run(args: argparse.Namespace) -> int:
    from engine.evaluation.regression import compare_evaluations, format_comparison, saved_setting
    from engine.evaluation.saved import TRACES, read_evaluation

    before, after = read_evaluation(args.before), read_evaluation(args.after)
    comparison = compare_evaluations(before.results, after.results, seed=args.seed,
                                     settings=(saved_setting(before), saved_setting(after)))
    if args.json:
        print(json.dumps({"before": str(args.before), "after": str(args.after), **comparison.to_dict()},
                         indent=2, ensure_ascii=False))
    else:
        print(format_comparison(comparison, str(args.before), str(args.after)))
        if comparison.flips:  # the next question is why: the two runs of a flip, step by step
            first = comparison.flips[0]
            print(f"\nwhy a question flipped, step by step: python -m engine diff "
                  f"{args.before / TRACES}#{first.trace_before} {args.after / TRACES}#{first.trace_after}")
    return 0


# argparse %-formats help lines: a percent sign is written %%.
COMMAND = Command("compare-evals", "two eval --out reports compared per method and question type: metric deltas "
                                   "with a paired bootstrap 95 %% interval, and the questions that flipped",
                  _arguments, _run)
