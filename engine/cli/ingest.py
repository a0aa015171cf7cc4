"""`ingest`: build a new pack from text, HTML, PDF, JSONL and triple files, CSV/JSON as documents, or any
LangChain document loader, optionally cut by a LangChain text splitter."""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.cli.command import Command
from engine.errors import IngestError
from engine.knowledge.splitters import SPLITTERS


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="*", type=Path, help="files and folders (not with --loader)")
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--name", default="", help="pack name (default: the out folder's name)")
    parser.add_argument("--glob", default="", help="only the files of a folder matching this, e.g. '*.md'")
    parser.add_argument("--loader", default="", metavar="MODULE:FACTORY",
                        help="a LangChain BaseLoader class or factory, e.g. "
                             "langchain_community.document_loaders:TextLoader")
    parser.add_argument("--loader-arg", action="append", default=[], metavar="NAME=VALUE",
                        help="an argument for --loader (JSON values such as 3 or true are parsed)")
    parser.add_argument("--splitter", choices=SPLITTERS, default=None,
                        help="cut text with a LangChain splitter (default: ragscope's paragraphs and sentence windows)")
    parser.add_argument("--chunk-size", type=int, default=0,
                        help="with --splitter: characters (recursive, sentence) or word pieces (tokens)")
    parser.add_argument("--chunk-overlap", type=int, default=-1, help="with --splitter: the overlap, same unit")
    parser.add_argument("--csv-columns", default="", metavar="A,B",
                        help=".csv rows become documents of these columns (CSVLoader); default: .csv holds triples")
    parser.add_argument("--csv-metadata", default="", metavar="C,D",
                        help="with --csv-columns: columns kept as metadata; a 'title' column titles the row")
    parser.add_argument("--json-path", default="",
                        help="read .json files: the items this jq-like path selects, e.g. '.items[]'")


def _run(args: argparse.Namespace) -> int:
    from engine.app import packs

    if bool(args.paths) == bool(args.loader):
        raise IngestError(["give files or folders to ingest, or --loader MODULE:FACTORY, not both or neither"])
    if args.splitter is None and (args.chunk_size or args.chunk_overlap >= 0):
        raise IngestError(["--chunk-size and --chunk-overlap need --splitter recursive, sentence or tokens"])
    if args.csv_metadata and not args.csv_columns:
        raise IngestError(["--csv-metadata needs --csv-columns: the columns that hold each row's text"])
    options = packs.IngestOptions(
        splitter=packs.SplitterConfig(args.splitter, args.chunk_size, args.chunk_overlap) if args.splitter else None,
        csv_columns=_names(args.csv_columns), csv_metadata=_names(args.csv_metadata), json_path=args.json_path)
    pack = packs.ingest(args.paths, args.out, args.name, options, glob=args.glob, loader=args.loader,
                        loader_args=packs.parse_loader_args(args.loader_arg))
    print(f"wrote pack {args.out}: {len(pack.documents)} documents, {len(pack.triples)} triples")
    return 0


def _names(text: str) -> tuple[str, ...]:
    return tuple(name.strip() for name in text.split(",") if name.strip())


COMMAND = Command("ingest", "build a new pack from files (.txt/.md/.html/.pdf/.jsonl/.tsv/.csv/.json) or a "
                            "LangChain loader", _arguments, _run)
