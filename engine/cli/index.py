"""`index`: build or update the pack's dense index, showing its rate and time left."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from engine.cli.command import Command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pack", type=Path, required=True)


def _run(args: argparse.Namespace) -> int:
    from engine.app import packs
    from engine.retrieval.suite import open_retrieval
    from engine.settings import Settings

    line_open = [False]  # a progress line without its newline yet: an error must not be printed onto it

    def show(p: packs.IndexProgress) -> None:
        line_open[0] = p.done < p.total
        print(f"\rindexing: {p.describe()}", end="" if line_open[0] else "\n", file=sys.stderr, flush=True)

    pack, settings = packs.load(args.pack), Settings()
    retrieval = open_retrieval(pack, settings)
    started = time.perf_counter()
    try:
        # a fresh sync, not the shared retrieval's ensure_index: that reports nothing once this process synced
        report = packs.sync_index(pack, settings, show, shared=retrieval)
    finally:
        if line_open[0]:
            print(file=sys.stderr)
    seconds = time.perf_counter() - started
    status = packs.index_status(retrieval)
    print(f"index {status.name}: {status.chunks} chunks; embedded {report.added}, "
          f"kept {report.kept}, removed {report.removed} in {seconds:.1f} s")
    return 0


COMMAND = Command("index", "build or update the pack's dense index", _arguments, _run)
