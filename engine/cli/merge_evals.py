"""`merge-evals`: the reports of `eval --shard I/N` joined into the one a whole run writes (engine.evaluation.merge).

Refuses (exit 2, naming the field and both values) shards that differ in pack, methods, parameters, policy,
backend or model, that overlap, or that lack a run card; missing shards only with --partial."""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.cli.command import Command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("shards", nargs="+", type=Path, metavar="DIR",
                        help="the shards' report folders (eval --shard I/N --out DIR), in any order")
    parser.add_argument("--out", type=Path, required=True,
                        help="folder for the merged metrics.json, results.csv, traces.jsonl and run_card.json")
    parser.add_argument("--partial", action="store_true",
                        help="merge even though some shards are missing; the run card names them")


def _run(args: argparse.Namespace) -> int:
    from engine.evaluation.merge import merge_shards
    from engine.evaluation.report import format_tables
    from engine.evaluation.runner import write_report
    from engine.evaluation.saved import read_evaluation
    from engine.knowledge.writer import check_target, staged

    check_target(args.out)
    shards = [read_evaluation(folder) for folder in args.shards]
    merged = merge_shards(shards, partial=args.partial, out=str(args.out))
    for note in merged.notes:
        print(f"note: {note}")
    with staged(args.out) as folder:
        report = write_report(folder, merged.results, merged.traces)
        merged.card.write(folder)
    print(format_tables(report))
    missing = f" (missing: {', '.join(merged.card.missing_shards)})" if merged.card.missing_shards else ""
    print(f"\n{merged.card.shard}{missing}: {len(merged.card.questions)} question(s) × "
          f"{len(merged.card.methods)} method(s); wrote {args.out}")
    return 0


COMMAND = Command("merge-evals", "join the reports of eval --shard I/N into one", _arguments, _run)
