"""scripts/fit_calibration.py (issue 27): the fit keeps known signs, leaves out features that flip between
packs, and `refit` fits on packs' cached rows with each pack also reported left out."""

from __future__ import annotations

import json

import numpy as np
import pytest

import scripts.fit_calibration as fitting
from calibration.rows import row
from engine.calibration.features import FEATURES
from engine.calibration.model import SIGNS, CalibrationModel


def _counts(pack: str, n: int = 40) -> list[dict]:
    """'How many …' questions where the answer with no number is right and the number wrong, and the
    method scores the wrong ones higher: an unconstrained fit gets both known signs wrong."""
    out = []
    for i in range(n):
        question = f"How many mills stood on the Aber stream {pack} in year {1800 + i}?"
        if i % 2:
            out.append(row(pack, i, question, "several", right=True, raw=0.3 + (i % 5) / 50))
        else:
            out.append(row(pack, i, question, str(3 + i % 4), right=False, raw=0.8 + (i % 5) / 50))
    return out


def test_known_signs_hold_after_a_fit_on_rows_where_the_unconstrained_fit_gets_them_wrong():
    groups = [_counts("north"), _counts("south")]
    x, y = fitting._matrix([r for g in groups for r in g])
    free = dict(zip(FEATURES, fitting.logistic(x, y, 1.0, [(None, None)] * len(FEATURES))))
    assert free["shape_mismatch"] > 0 and free["raw_logit"] < 0  # the data is built to mislead
    weights = fitting.fit_model(groups).model.weights
    assert weights["shape_mismatch"] <= 0 and weights["raw_logit"] >= 0
    for name, sign in SIGNS.items():
        assert weights[name] * sign >= 0, name


def _yes_no(pack: str, yes_no_right: bool, n: int = 40) -> list[dict]:
    """Yes/no questions right on one pack and wrong on the other (the other questions the other way round):
    asks_yes_no, the one feature with no sign known beforehand, flips between the two."""
    out = []
    for i in range(n):
        if i % 2 == 0:
            out.append(row(pack, i, f"Was the sail loft number {i} of {pack} founded by Anne?", "yes",
                           right=yes_no_right))
        else:
            out.append(row(pack, i, f"Who founded the sail loft number {i} of {pack}?", "Anne",
                           right=not yes_no_right))
    return out


def test_a_feature_whose_weight_flips_between_packs_is_left_out_and_the_rest_keep_one_sign():
    unsigned = [name for name in FEATURES if name not in SIGNS]
    assert unsigned == ["asks_yes_no"]  # every other feature has a direction argued beforehand (model.SIGNS)
    fitted = fitting.fit_model([_yes_no("east", True), _yes_no("west", False)])
    assert fitted.model.weights["asks_yes_no"] == 0.0 and fitted.bounds["asks_yes_no"] == (0.0, 0.0)
    east, west = fitted.flipped["asks_yes_no"]
    assert east > fitting.TOLERANCE and west < -fitting.TOLERANCE
    for name, (low, high) in fitted.bounds.items():  # every kept weight lies within the bounds it was fitted under
        weight = fitted.model.weights[name]
        assert (low is None or weight >= low) and (high is None or weight <= high), name


def test_one_group_fits_under_the_known_signs_only():
    fitted = fitting.fit_model([_counts("alone")])
    assert fitted.flipped == {} and fitted.strength == 1.0
    assert fitted.model.weights["shape_mismatch"] <= 0


def test_refit_fits_on_every_packs_rows_and_reports_each_pack_left_out(tmp_path, monkeypatch, capsys):
    import bench.offline_quality as quality

    rows = {"north": _counts("north"), "south": _counts("south"), "east": _yes_no("east", True)}
    monkeypatch.setattr(quality, "resolve_packs", lambda names: {n: tmp_path / n for n in names})
    monkeypatch.setattr(quality, "pack_rows", lambda folder, methods, **_: rows[folder.name])
    out = tmp_path / "model.json"
    assert fitting.main(["refit", "--packs", "north,south,east", "--out", str(out)]) == 0
    saved = json.loads(out.read_text())
    model = CalibrationModel.from_dict(saved)
    assert model.fitted_on["packs"] == ["north", "south", "east"] and model.fitted_on["answers"] == 120
    assert {f"{p} (fitted)" for p in rows} | {f"{p} (left out)" for p in rows} == set(model.fitted_on["report"])
    assert set(model.fitted_on["signs"]) <= set(FEATURES)
    assert "left out (weight per group fitted alone)" in capsys.readouterr().out


def test_the_bounded_fit_matches_an_unbounded_one_when_no_bound_binds():
    rng = np.random.default_rng(7)
    x = rng.normal(size=(200, 3))
    y = (x @ np.array([1.0, -2.0, 0.5]) + rng.normal(size=200) > 0).astype(float)
    free = fitting.logistic(x, y, 1.0, [(None, None)] * 3)
    loose = fitting.logistic(x, y, 1.0, [(-10.0, 10.0)] * 3)
    assert free == pytest.approx(loose, abs=1e-4) and free[0] > 0 > free[1]
