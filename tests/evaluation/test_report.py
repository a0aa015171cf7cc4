"""The evaluation report: the CLI's tables and metrics.json carry calibration (ECE and reliability bins)."""

from __future__ import annotations

import json

from engine.cli import main
from engine.evaluation.report import format_tables
from paths import MINI_PACK


def test_the_table_has_an_ece_column_with_a_dash_when_nothing_was_answered():
    report = {"vanilla": {"overall": {"n": 2, "ece": 0.25}, "by_type": {"factoid": {"n": 1, "ece": None}}}}
    header, overall, factoid = format_tables(report).splitlines()[1:]
    column = header.split().index("ece")
    assert overall.split()[column] == "0.250" and factoid.split()[column] == "–"


def test_eval_reports_ece_and_reliability_bins_for_every_method(ragscope_home, tmp_path, capsys):
    out = tmp_path / "eval"
    assert main(["eval", "--pack", str(MINI_PACK), "--method", "vanilla,rulerag", "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert list(metrics) == ["vanilla", "rulerag"]
    for method, parts in metrics.items():
        diagram = parts["reliability"]
        assert parts["overall"]["ece"] == diagram["ece"] and 0.0 <= diagram["ece"] <= 1.0, method
        assert len(diagram["bins"]) == 10 and diagram["bins"][-1]["upper"] == 1.0
        assert sum(b["count"] for b in diagram["bins"]) == diagram["answered"]
        assert diagram["answered"] + diagram["refused"] == parts["overall"]["n"] == 6
    assert " ece " in capsys.readouterr().out


def test_the_table_shows_mrr_and_ndcg_beside_map_and_a_dash_for_a_report_written_before_them():
    now = {"n": 2, "map": 0.75, "mrr": 0.5, "ndcg@5": 0.625, "ndcg@10": 0.6875}
    before = {"n": 2, "map": 0.75}  # a metrics.json written before issue 28
    report = {"vanilla": {"overall": now, "by_type": {}}, "ras": {"overall": before, "by_type": {}}}
    first, second = format_tables(report).split("\n\n")
    header, overall = first.splitlines()[1:]
    start = header.split().index("map")
    assert header.split()[start:start + 4] == ["map", "mrr", "ndcg@5", "ndcg@10"]
    assert overall.split()[start:start + 4] == ["0.750", "0.500", "0.625", "0.688"]
    assert second.splitlines()[2].split()[start:start + 4] == ["0.750", "–", "–", "–"]
