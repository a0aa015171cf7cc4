"""`ingest`: build a new pack from text, HTML, PDF, JSONL and triple files."""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.cli.command import Command


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--name", default="", help="pack name (default: the out folder's name)")


def _run(args: argparse.Namespace) -> int:
    from engine.app import packs

    pack = packs.ingest(args.paths, args.out, args.name)  # --out checked before the files are read
    print(f"wrote pack {args.out}: {len(pack.documents)} documents, {len(pack.triples)} triples")
    return 0


COMMAND = Command("ingest", "build a new pack from .txt/.md/.html/.pdf/.jsonl/.tsv/.csv files", _arguments, _run)
