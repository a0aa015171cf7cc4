"""bench/offline_quality.py: the figures of issue 27's before/after table, on the mini pack and a twin of it."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from paths import MINI_PACK

METHODS = ("vanilla", "hybrid")


@pytest.fixture(scope="module")
def twin(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The mini pack under another folder name with the golds of half its questions wrong, so that a model
    fitted on either pack sees right and wrong answers."""
    folder = tmp_path_factory.mktemp("packs") / "twin"
    shutil.copytree(MINI_PACK, folder)
    lines = (folder / "questions.jsonl").read_text(encoding="utf-8").splitlines()
    questions = [json.loads(line) for line in lines if line.strip()]
    for question in questions[:3]:
        question["answers"] = ["Nowhere at all"]
    (folder / "questions.jsonl").write_text("".join(json.dumps(q) + "\n" for q in questions), encoding="utf-8")
    return folder


@pytest.fixture(scope="module")
def measured(twin: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, Path]:
    from bench.offline_quality import measure

    cache = tmp_path_factory.mktemp("quality")
    return measure({"mini": MINI_PACK, "twin": twin}, METHODS, cache=cache, workers=1), cache


def test_the_report_has_every_pack_method_and_figure_within_its_range(measured):
    report, _ = measured
    assert list(report["packs"]) == ["mini", "twin"]
    for entry in report["packs"].values():
        assert list(entry["methods"]) == list(METHODS)
        for figures in entry["methods"].values():
            assert figures["questions"] == 6
            assert set(figures["policies"]) == {"0.5", "0.0"}
            for policy in figures["policies"].values():
                assert 0 <= policy["em"] <= 1 and 0 <= policy["coverage"] <= 1
                assert 0 <= policy["factoid_coverage"] <= 1
                assert -1 <= policy["crag"] <= 1
            for name in ("auroc", "lopo_auroc"):
                assert figures[name] is None or 0 <= figures[name] <= 1
            held = figures["lopo_policy"]
            assert held["min_confidence"] == 0.5 and 0 <= held["coverage"] <= 1 and -1 <= held["crag"] <= 1
            assert set(figures["by_type"]) == {"factoid", "comparison", "multi_hop", "numeric", "false_premise"}
        assert entry["lopo_auroc_pooled"] is None or 0 <= entry["lopo_auroc_pooled"] <= 1
    assert set(report["lopo"]["per_method"]) == set(METHODS)
    # a policy that never refuses answers at least as often as the default one
    for entry in report["packs"].values():
        for figures in entry["methods"].values():
            assert figures["policies"]["0.0"]["coverage"] >= figures["policies"]["0.5"]["coverage"]


def test_vanilla_differs_from_itself_by_nothing_and_targets_are_checked_against_it(measured):
    report, _ = measured
    vanilla = report["packs"]["mini"]["methods"]["vanilla"]["by_type"]
    assert all(cell["delta_vanilla@0.5"] == 0 and cell["delta_vanilla@0.0"] == 0 for cell in vanilla.values())
    checked = {(c["pack"], c["method"], c["type"]) for c in report["target_check"]}
    assert ("mini", "hybrid", "numeric") in checked and not any(m == "vanilla" for _, m, _ in checked)


def test_the_figures_are_what_eval_reports_for_a_calibrated_run(measured, mini_workbench, mini_pack):
    from engine.evaluation.runner import aggregate, evaluate

    report, _ = measured
    results, _ = evaluate(mini_workbench, list(METHODS), mini_pack.questions)
    for method in METHODS:
        engine = aggregate([r for r in results if r.method == method])
        mine = report["packs"]["mini"]["methods"][method]
        at_default = mine["policies"]["0.5"]
        assert (at_default["em"], at_default["coverage"], at_default["crag"], mine["auroc"]) == (
            engine["em"], engine["coverage"], engine["crag_score"], engine["auroc"]), method


def test_a_rerun_on_unchanged_code_and_packs_asks_nothing(measured, twin, monkeypatch):
    import bench.offline_quality as quality

    report, cache = measured
    monkeypatch.setattr(quality, "collect", lambda *a, **k: pytest.fail("asked again with the rows cached"))
    again = quality.measure({"mini": MINI_PACK, "twin": twin}, METHODS, cache=cache)
    assert again["packs"] == report["packs"]


def test_markdown_has_a_row_per_method_and_the_columns(measured):
    from bench.offline_quality import markdown

    text = markdown(measured[0])
    header = [line for line in text.splitlines() if line.startswith("| method | EM")][0]
    assert [cell.strip() for cell in header.strip("|").split("|")] == [
        "method", "EM @0.5", "coverage @0.5", "CRAG @0.5", "factoid cov. @0.5",
        "EM @0", "coverage @0", "CRAG @0", "factoid cov. @0", "AUROC", "LOPO AUROC",
        "LOPO coverage @0.5", "LOPO CRAG @0.5", "LOPO factoid cov. @0.5"]
    for method in METHODS:
        assert text.count(f"| {method} |") == 4  # two packs × (figures, EM per type)


def test_leave_one_pack_out_needs_two_packs(measured, capsys):
    from bench.offline_quality import leave_one_pack_out, main

    with pytest.raises(ValueError, match="needs at least 2 packs; got 1 \\(mini\\)"):
        leave_one_pack_out({"mini": []}, {"mini": {}})
    with pytest.raises(SystemExit):
        main(["--packs", str(MINI_PACK), "--methods", "vanilla"])
    assert "needs at least 2 packs; got 1" in capsys.readouterr().err
