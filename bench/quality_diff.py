"""Before → after tables of two bench/offline_quality.py runs (their `--out` JSON files), pack by pack.

    python bench/quality_diff.py BEFORE.json AFTER.json

Per method: EM, coverage, CRAG and factoid coverage at the default policy (min_confidence 0.5), EM and CRAG
at 0, the shipped model's AUROC and the leave-one-pack-out AUROC; then, from AFTER alone where BEFORE lacks
them, the held-out CRAG and factoid coverage at 0.5 (the held-out pack scored by a model fitted on the
others). A pack or method missing from one side shows "—" there.
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

Row = dict[str, Any]
COLUMNS: tuple[tuple[str, Callable[[Row], float | None], str], ...] = (
    ("EM @0.5", lambda m: m["policies"]["0.5"]["em"], ".2f"),
    ("coverage @0.5", lambda m: m["policies"]["0.5"]["coverage"], ".2f"),
    ("CRAG @0.5", lambda m: m["policies"]["0.5"]["crag"], "+.2f"),
    ("factoid cov. @0.5", lambda m: m["policies"]["0.5"]["factoid_coverage"], ".2f"),
    ("EM @0", lambda m: m["policies"]["0.0"]["em"], ".2f"),
    ("CRAG @0", lambda m: m["policies"]["0.0"]["crag"], "+.2f"),
    ("AUROC", lambda m: m["auroc"], ".2f"),
    ("LOPO AUROC", lambda m: m["lopo_auroc"], ".2f"),
    ("held-out CRAG @0.5", lambda m: m["lopo_policy"]["crag"], "+.2f"),
    ("held-out factoid cov. @0.5", lambda m: m["lopo_policy"]["factoid_coverage"], ".2f"),
)


def _value(method: Row | None, read: Callable[[Row], float | None], spec: str) -> str:
    try:
        value = read(method) if method is not None else None
    except (KeyError, TypeError):
        value = None
    return "—" if value is None else format(value, spec)


def cell(before: Row | None, after: Row | None, read: Callable[[Row], float | None], spec: str) -> str:
    old, new = _value(before, read, spec), _value(after, read, spec)
    return new if old == "—" else f"{old} → {new}"


def tables(before: Row, after: Row) -> list[str]:
    lines: list[str] = []
    for pack, data in after["packs"].items():
        old_pack = before.get("packs", {}).get(pack, {})
        lines += [f"#### {pack} ({data['questions']} questions)", "",
                  "| method | " + " | ".join(name for name, _, _ in COLUMNS) + " |",
                  "|---" * (len(COLUMNS) + 1) + "|"]
        for method, figures in data["methods"].items():
            old = old_pack.get("methods", {}).get(method)
            lines.append(f"| {method} | " + " | ".join(cell(old, figures, read, spec)
                                                      for _, read, spec in COLUMNS) + " |")
        lines.append("")
    return lines


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args(argv)
    before, after = (json.loads(path.read_text(encoding="utf-8")) for path in (args.before, args.after))
    print("\n".join(tables(before, after)))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
