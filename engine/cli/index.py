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
    from engine.knowledge.loader import load_pack
    from engine.retrieval.index import IndexProgress, with_eta
    from engine.retrieval.suite import open_retrieval
    from engine.settings import Settings

    def show(p: IndexProgress) -> None:
        print(f"\rindexing: {p.describe()}", end="\n" if p.done >= p.total else "", file=sys.stderr, flush=True)

    retrieval = open_retrieval(load_pack(args.pack), Settings())
    started = time.perf_counter()
    # sync, not ensure_index: that reports nothing when this process already synced the pack
    report = retrieval.index.sync(retrieval.chunks, with_eta(show))
    seconds = time.perf_counter() - started
    print(f"index {retrieval.index.name}: {len(retrieval.chunks)} chunks; embedded {report.added}, "
          f"kept {report.kept}, removed {report.removed} in {seconds:.1f} s")
    return 0


COMMAND = Command("index", "build or update the pack's dense index", _arguments, _run)
