"""`import-hotpot`, `import-2wiki`, `import-musique`: a public dataset file → a pack; one command per
importer in engine.evaluation.importers.DATASETS."""

from __future__ import annotations

import argparse
from functools import partial
from pathlib import Path

from engine.cli.command import Command
from engine.evaluation.importers import DATASETS


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("file", type=Path)
    parser.add_argument("--out", type=Path, required=True)
    parser.add_argument("--limit", type=int, default=0, help="first N questions only (default 0: all)")


def _run(dataset: str, args: argparse.Namespace) -> int:
    from engine.evaluation.importers import import_dataset
    from engine.knowledge.writer import check_target, write_pack

    check_target(args.out)  # before parsing the dataset, which may take long
    imported = import_dataset(args.file, dataset, name=args.out.name, limit=args.limit)
    pack = imported.pack
    write_pack(pack, args.out)
    skipped = "".join(f", skipped {n} {reason}" for reason, n in imported.skipped.items())
    print(f"wrote pack {args.out}: {len(pack.documents)} documents, {len(pack.questions)} questions, "
          f"{len(pack.triples)} triples{skipped}")
    return 0


COMMANDS = tuple(Command(f"import-{dataset.name}", f"{dataset.title} → pack", _arguments, partial(_run, dataset.name))
                 for dataset in DATASETS.values())
