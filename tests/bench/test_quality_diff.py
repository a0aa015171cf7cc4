"""bench/quality_diff.py: the before → after table of two offline_quality runs."""

from __future__ import annotations

import json
from pathlib import Path

from bench.quality_diff import main


def _run(em05: float, lopo: dict | None = None) -> dict:
    policies = {"0.5": {"em": em05, "coverage": 0.5, "crag": -0.05, "factoid_coverage": None},
                "0.0": {"em": 0.6, "coverage": 1.0, "crag": 0.2, "factoid_coverage": 1.0}}
    method = {"policies": policies, "auroc": 0.7, "lopo_auroc": 0.65}
    if lopo is not None:
        method["lopo_policy"] = lopo
    return {"packs": {"demo": {"questions": 3, "methods": {"vanilla": method}}}}


def test_each_figure_reads_before_arrow_after_and_a_missing_one_a_dash(tmp_path: Path, capsys) -> None:
    before, after = tmp_path / "before.json", tmp_path / "after.json"
    before.write_text(json.dumps(_run(0.25)))
    after.write_text(json.dumps(_run(0.5, lopo={"crag": 0.03, "factoid_coverage": 0.61})))
    assert main([str(before), str(after)]) == 0
    row = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("| vanilla"))
    cells = [c.strip() for c in row.strip("|").split("|")]
    assert cells[1] == "0.25 → 0.50"  # EM @0.5
    assert cells[3] == "-0.05 → -0.05"  # CRAG @0.5, signed
    assert cells[4] == "—"  # no factoid question on either side
    assert cells[-2:] == ["+0.03", "0.61"]  # held out: only the after run has them
