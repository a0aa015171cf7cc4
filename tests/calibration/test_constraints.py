"""The calibration model's sign constraints (issue 27): what they forbid, that a shape mismatch only ever
lowers the probability, that the shipped model keeps them, and the features they rest on."""

from __future__ import annotations

import random

import pytest

from engine.calibration import FEATURES, CalibrationModel, answer_features, default_model
from engine.calibration.model import SIGNS
from engine.errors import CheckpointError


def test_a_model_whose_weight_breaks_a_known_sign_does_not_load():
    with pytest.raises(CheckpointError, match="shape_mismatch.*sign constraints"):
        CalibrationModel.from_dict({"weights": {"shape_mismatch": 1.49}, "intercept": 0.0})
    with pytest.raises(CheckpointError, match="raw_logit"):
        CalibrationModel(weights={"raw_logit": -0.1}, intercept=0.0)
    assert CalibrationModel(weights={"shape_mismatch": -1.0, "raw_logit": 0.0}, intercept=0.0)


def _random_model(rng: random.Random) -> CalibrationModel:
    weights = {name: rng.uniform(-3, 3) for name in FEATURES}
    weights |= {name: abs(weights[name]) * sign for name, sign in SIGNS.items()}
    return CalibrationModel(weights=weights, intercept=rng.uniform(-3, 3), plain_floor=rng.uniform(0, 1),
                            unsupported_ceiling=rng.uniform(0, 1))


@pytest.mark.parametrize("seed", range(5))
def test_a_shape_mismatch_never_raises_the_probability_whatever_else_holds(seed):
    rng = random.Random(seed)
    for model in (default_model(), *(_random_model(rng) for _ in range(20))):
        for _ in range(50):
            values = {name: rng.choice((0.0, 1.0, rng.random())) for name in FEATURES}
            values["raw_logit"] = rng.uniform(-4.6, 4.6)
            supported, plain = rng.random() < 0.8, rng.random() < 0.2
            matched = model.settled({**values, "shape_mismatch": 0.0}, supported=supported, plain=plain)
            mismatched = model.settled({**values, "shape_mismatch": 1.0}, supported=supported, plain=plain)
            assert mismatched <= matched + 1e-12, (values, supported, plain)


def test_the_shipped_model_keeps_every_known_sign_and_was_fitted_on_four_packs_each_also_left_out():
    model = default_model()
    for name, sign in SIGNS.items():
        assert model.weights[name] * sign >= 0, name
    assert model.weights["raw_logit"] > 0  # the method's own score counts
    assert {"demo", "geo", "hotpot"} <= set(model.fitted_on["packs"]) and any(
        p.endswith("spaceflight") for p in model.fitted_on["packs"])
    report = model.fitted_on["report"]
    assert {"demo (left out)", "geo (left out)", "hotpot (left out)", "spaceflight (left out)"} <= set(report)
    for name in model.fitted_on["flipped"]:  # a feature left out weighs nothing
        assert model.weights[name] == 0.0, name
    for name, sign in model.fitted_on["signs"].items():
        assert {"≥ 0": model.weights[name] >= 0, "≤ 0": model.weights[name] <= 0, "free": True}[sign], name


def test_the_premise_checks_verdict_is_no_shape_mismatch_and_a_count_may_be_a_word():
    question = "How many lighthouses did Yann Kerbrat build?"
    assert answer_features(question, "invalid question", 0.5)["shape_mismatch"] == 0.0
    assert answer_features("When did Yann Kerbrat open his loft?", "invalid question", 0.5)["shape_mismatch"] == 0.0
    assert answer_features("How many times did the Trieux flood?", "twice", 0.5)["shape_mismatch"] == 0.0
    assert answer_features(question, "first", 0.5)["shape_mismatch"] == 1.0  # an ordinal is no count


def test_beyond_top_is_an_answer_only_documents_after_the_first_state():
    question, answer = "Where was Anne Riou born?", "Tréguier"
    topic, stating = "Anne Riou was a weaver in Paimpol.", "Anne Riou was born in Tréguier."
    assert answer_features(question, answer, 0.5, [topic, stating])["answer_beyond_top"] == 1.0
    assert answer_features(question, answer, 0.5, [stating, topic, stating])["answer_beyond_top"] == 0.0
    assert answer_features(question, answer, 0.5, [topic])["answer_beyond_top"] == 0.0
    assert answer_features(question, answer, 0.5)["answer_beyond_top"] == 0.0
