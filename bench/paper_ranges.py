"""Re-measure the expected ranges of the reproduce-a-paper cards (engine/methods/*/paper_card.toml).

Runs each card's `eval` command on the pack it names (an import-hotpot / import-2wiki / import-musique pack given
here), takes the per-question metric the card is about, and prints its mean with the bootstrap 95 % interval
(engine.evaluation.bootstrap.mean_interval: percentile, 2000 resamples, seed 0); --write puts them back into the
cards' [expected] tables. A card whose pack is not given is left as it is ("not measured here").

    python -m engine import-hotpot /work/shared/data/hotpotadv_public.json --out bench/out/packs/hotpot
    python bench/paper_ranges.py --hotpot bench/out/packs/hotpot --write
"""

from __future__ import annotations

import argparse
import datetime
import os
import re
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import bench.common  # noqa: F401 — sets HF_HUB_OFFLINE first
from engine.cli import main as engine_main
from engine.evaluation.bootstrap import mean_interval
from engine.evaluation.saved import read_evaluation
from engine.methods.paper_cards import PaperCard, card_path, paper_cards, question_scores
from engine.version import VERSION

DATASETS = ("hotpot", "2wiki", "musique")  # the card commands' --pack packs/<name>


def measure(card: PaperCard, pack: Path, scratch: Path) -> str:
    """The card's command on `pack`, into a scratch folder: the [expected] table it measured."""
    argv = card.argv()
    argv[argv.index("--pack") + 1] = str(pack)
    out = scratch / card.method
    argv[argv.index("--out") + 1] = str(out)
    if card.expected.backend != "offline":
        argv += ["--backend", card.expected.backend]
    code = engine_main(argv)
    if code not in (0, 3):
        raise SystemExit(f"{card.method}: eval exited {code}")
    results = [r for r in read_evaluation(out).results if r.method == card.method]
    interval = mean_interval(question_scores(results, card.expected.metric))
    today = datetime.datetime.now(datetime.UTC).date().isoformat()
    note = (f"bootstrap 95 % interval (percentile, 2000 resamples, seed 0) of the per-question {card.expected.metric}, "
            f"measured {today} with ragscope {VERSION} by bench/paper_ranges.py")
    return (f'[expected]\nbackend = "{card.expected.backend}"\nmetric = "{card.expected.metric}"\nmeasured = true\n'
            f'note = "{note}"\nestimate = {interval.estimate:.4f}\nlow = {interval.low:.4f}\n'
            f'high = {interval.high:.4f}\nn = {interval.n}\n')


def dataset_of(card: PaperCard) -> str:
    pack = Path(card.argv()[card.argv().index("--pack") + 1]).name
    if pack not in DATASETS:
        raise SystemExit(f"{card.method}: --pack {pack} is none of packs/{', packs/'.join(DATASETS)}")
    return pack


def write_expected(card: PaperCard, table: str) -> None:
    path = card_path(card.method)
    text = path.read_text(encoding="utf-8")
    path.write_text(re.sub(r"\[expected\]\n.*\Z", lambda _: table, text, flags=re.S), encoding="utf-8")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name in DATASETS:
        parser.add_argument(f"--{name}", type=Path, default=None, help=f"the import-{name} pack to run on")
    parser.add_argument("--method", action="append", default=None, help="only these cards (repeatable)")
    parser.add_argument("--write", action="store_true", help="write the ranges into the cards")
    args = parser.parse_args()
    # a throwaway data folder: indexes are built fresh, the user's are not touched
    os.environ["RAGSCOPE_HOME"] = tempfile.mkdtemp(prefix="paper-ranges-home-")
    scratch = Path(tempfile.mkdtemp(prefix="paper-ranges-"))
    for method, card in paper_cards(args.method).items():
        pack = getattr(args, dataset_of(card))
        if pack is None:
            print(f"{method}: not measured (give --{dataset_of(card)})")
            continue
        table = measure(card, pack, scratch)
        print(f"== {method} ({card.expected.metric}; paper {card.number})\n{table}")
        if args.write:
            write_expected(card, table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
