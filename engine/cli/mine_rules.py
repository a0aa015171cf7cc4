"""`mine-rules`: closed-path rules (body length 1-2) mined from the pack's triples."""

from __future__ import annotations

import argparse
from pathlib import Path

from engine.cli.command import Command, progress_bar
from engine.errors import RagscopeError


def _arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--pack", type=Path, required=True, help="knowledge pack folder")
    parser.add_argument("--min-conf", type=float, default=0.3, help="minimum standard confidence (default 0.3)")
    parser.add_argument("--min-support", type=int, default=3, help="minimum support (default 3)")
    parser.add_argument("--min-head-coverage", type=float, default=0.0, help="minimum head coverage (default 0)")
    parser.add_argument("--max-rules", type=int, default=500, help="keep at most this many, best first (default 500)")
    parser.add_argument("--temporal", action="store_true",
                        help="thresholds on temporal support: body facts must not postdate the head fact")
    parser.add_argument("--out", type=Path, default=None,
                        help="rules.jsonl to write (default PACK/rules.mined.jsonl; never the pack's rules.jsonl "
                             "unless named here)")


def _run(args: argparse.Namespace) -> int:
    from engine.knowledge.loader import load_pack
    from engine.knowledge.writer import check_target
    from engine.rules.mining import MiningConfig, mine_rules, write_mined_rules

    if not (0.0 <= args.min_conf <= 1.0 and 0.0 <= args.min_head_coverage <= 1.0) \
            or args.min_support < 1 or args.max_rules < 1:
        raise RagscopeError("--min-conf and --min-head-coverage must lie in [0, 1]; --min-support and --max-rules "
                            "must be at least 1")
    pack = load_pack(args.pack)
    if not pack.triples:
        raise RagscopeError(f"pack {args.pack} has no triples.tsv; rules are mined from the KG's triples")
    out = args.out or args.pack / "rules.mined.jsonl"
    check_target(out, folder=False)  # a folder or an unwritable path fails before mining, leaving nothing
    config = MiningConfig(min_support=args.min_support, min_confidence=args.min_conf,
                          min_head_coverage=args.min_head_coverage, max_rules=args.max_rules,
                          temporal=args.temporal)
    with progress_bar("body") as bar:
        mined = mine_rules(pack.triples, config,
                           progress=lambda done, total: (setattr(bar, "total", total), bar.update(done - bar.n)))
    write_mined_rules(mined, out)
    print(f"wrote {len(mined)} rules to {out}")
    return 0


COMMAND = Command("mine-rules", "mine closed-path rules (body length 1-2) from the pack's triples", _arguments, _run)
