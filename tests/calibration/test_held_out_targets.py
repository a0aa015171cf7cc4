"""bench/offline_quality.py's held-out figures (issue 27): each pack scored by a model fitted on the others,
the default policy's coverage, CRAG and factoid coverage from those scores, and the targets checked on them."""

from __future__ import annotations

import pytest

import bench.offline_quality as quality
from calibration.rows import row
from scripts.fit_calibration import fit_model, probability


def _pack(name: str, n: int = 12) -> tuple[list[dict], dict[str, str]]:
    """A factoid pack: right answers scored high by their method, wrong ones low."""
    rows = [row(name, i, f"Who built mill {i} of {name}?", f"Miller{i}", right=i % 3 != 0,
                raw=0.9 if i % 3 else 0.2) for i in range(n)]
    return rows, {r["question_id"]: "factoid" for r in rows}


def test_each_pack_is_scored_by_a_model_fitted_on_the_other_packs_only():
    packs = {name: _pack(name) for name in ("aber", "elorn", "odet")}
    rows, types = {n: r for n, (r, _) in packs.items()}, {n: t for n, (_, t) in packs.items()}
    held = quality.leave_one_pack_out(rows, types)
    model = fit_model([rows["aber"], rows["elorn"]]).model
    assert [r.confidence for r in held["odet"]] == [round(probability(model, r), 4) for r in rows["odet"]]
    at = quality.policy_figures(held["odet"], 0.5)
    kept = [r for r in held["odet"] if r.confidence >= 0.5]
    assert at.coverage == pytest.approx(round(len(kept) / 12, 4)) and at.factoid_coverage == at.coverage
    assert at.crag == pytest.approx(round((sum(r.right for r in kept) - sum(not r.right for r in kept)) / 12, 4))


def _report(pooled: float, factoid: float | None, crag: float) -> dict:
    at = {"coverage": 0.5, "crag": crag, "factoid_coverage": factoid}
    return {"packs": {"aber": {"lopo_auroc_pooled": pooled, "methods": {"vanilla": {"lopo_policy": at}}}}}


def test_the_targets_are_met_or_missed_on_the_held_out_figures():
    checks = quality.calibration_targets(_report(0.8, 0.7, 0.0))
    assert [(c["target"], c["met"]) for c in checks] == [
        ("LOPO AUROC >= 0.75", True), ("LOPO factoid coverage >= 0.6", True), ("LOPO CRAG >= 0.0", True)]
    missed = quality.calibration_targets(_report(0.74, 0.59, -0.01))
    assert not any(c["met"] for c in missed)
    no_factoids = quality.calibration_targets(_report(0.8, None, 0.1))
    assert [c["target"] for c in no_factoids] == ["LOPO AUROC >= 0.75", "LOPO CRAG >= 0.0"]


def test_the_markdown_says_whether_each_target_is_met():
    report = _report(0.74, 0.7, 0.1) | {"target_check": []}
    report["calibration_targets"] = quality.calibration_targets(report)
    report["packs"]["aber"] |= {"questions": 12, "methods": {}}
    text = quality.markdown(report)
    assert "Target LOPO AUROC >= 0.75 (held out, @0.5): NOT MET, 0 of 1; missed: aber pooled 0.74" in text
    assert "Target LOPO CRAG >= 0.0 (held out, @0.5): MET, 1 of 1; missed: none" in text
