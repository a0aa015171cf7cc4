"""The features added for issue 27's second calibration pass, on made-up text of a domain no pack uses
(tidal locks and cheese fairs): answer-type agreement and conflict, a bridge question answered by the
first document, an answer a calculation gave, the premise check's verdict; and that the two type features
keep their signs."""

from __future__ import annotations

import random
import subprocess
import sys
from pathlib import Path

import pytest

from engine.calibration import FEATURES, CalibrationModel, Derived, answer_features, default_model
from engine.calibration.answer_kind import answer_kind
from engine.calibration.features import _items, statement
from engine.calibration.model import SIGNS
from engine.errors import CheckpointError

GUILD = "Hallam Guild is a craft guild of lock builders in Ferrow. It built the Saltmarsh Lock in 1702."
CHEESEMAKER = "Marta Oban (born 1961 in Dunmore) is a Scottish cheesemaker who founded the Kelpwick cheese fair."
DAIRY = "Kelpwick Dairy is a farm shop near Dunmore."
BREWERY = "Ferrow Ales is a brewery in Ferrow. It paid for the Saltmarsh Lock."


def _typed(question: str, answer: str, evidence: list[str]) -> tuple[float, float]:
    values = answer_features(question, answer, 0.5, evidence)
    return values["answer_type_agrees"], values["answer_type_conflicts"]


def test_an_answer_defined_as_the_asked_noun_agrees():
    assert _typed("Which guild built the Saltmarsh Lock?", "Hallam Guild", [GUILD]) == (1.0, 0.0)
    assert _typed("Who founded the Kelpwick cheese fair?", "Marta Oban", [CHEESEMAKER]) == (1.0, 0.0)  # born → person


def test_an_answer_of_another_coarse_class_conflicts():
    assert _typed("Which town hosts the Kelpwick cheese fair?", "Marta Oban", [CHEESEMAKER]) == (0.0, 1.0)
    assert _typed("Who runs the Kelpwick cheese fair?", "Kelpwick Dairy", [DAIRY]) == (0.0, 1.0)


def test_another_thing_or_an_undefined_answer_is_neither():
    # a brewery for 'which guild' is a thing of another head noun: weaker, and it flipped sign between packs
    assert _typed("Which guild paid for the Saltmarsh Lock?", "Ferrow Ales", [BREWERY]) == (0.0, 0.0)
    assert _typed("Which town hosts the Kelpwick cheese fair?", "Dunmore", [CHEESEMAKER]) == (0.0, 0.0)
    assert answer_kind("Which guild built it?", ["Hallam Guild"], "entity", []).agrees is False


def test_a_listed_answer_agrees_when_every_item_does_and_conflicts_when_one_does():
    founders = "Who founded the Kelpwick cheese fair?"
    other = "Ewan Rusk (born 1958) is a Scottish shepherd."
    assert _typed(founders, "Marta Oban and Ewan Rusk", [CHEESEMAKER, other]) == (1.0, 0.0)
    assert _typed(founders, "Marta Oban and Kelpwick Dairy", [CHEESEMAKER, DAIRY]) == (0.0, 1.0)
    assert _typed(founders, "Marta Oban and Ewan Rusk", [CHEESEMAKER]) == (0.0, 0.0)  # Rusk is not defined


def test_bridge_in_top_needs_a_described_entity_and_the_first_document():
    town = "Dunmore is a fishing town on the Ferrow estuary."
    described = "In which town was the founder of the Kelpwick cheese fair born?"
    named = "In which town was Marta Oban born?"
    assert answer_features(described, "Marta Oban", 0.5, [CHEESEMAKER, town])["bridge_in_top"] == 1.0
    assert answer_features(named, "Dunmore", 0.5, [CHEESEMAKER, town])["bridge_in_top"] == 0.0  # names only
    assert answer_features(described, "Dunmore", 0.5, [GUILD, town])["bridge_in_top"] == 0.0  # a later document


def test_answer_calculated_needs_a_calculation_over_stated_numbers():
    question = "How many years after the Saltmarsh Lock was built was Marta Oban born?"
    evidence = [GUILD, CHEESEMAKER]
    stated = Derived(calculations=(("1961 - 1702", 259.0),))
    made_up = Derived(calculations=(("1961 - 1700", 261.0),))
    assert answer_features(question, "259", 0.5, evidence, (), stated)["answer_calculated"] == 1.0
    assert answer_features(question, "261", 0.5, evidence, (), made_up)["answer_calculated"] == 0.0
    assert answer_features(question, "259", 0.5, evidence)["answer_calculated"] == 0.0
    model = default_model()
    assert model.probability(question, "259", 0.5, evidence, (), stated) >= model.probability(question, "259", 0.5,
                                                                                             evidence)


def test_premise_refuted_is_the_premise_checks_own_verdict():
    question = "Which guild built the Saltmarsh Lock on the Moon?"
    refuted = Derived(false_premise=True)
    assert answer_features(question, "invalid question", 0.0, [GUILD], (), refuted)["premise_refuted"] == 1.0
    assert answer_features(question, "invalid question", 0.0, [GUILD])["premise_refuted"] == 0.0  # no check ran
    assert answer_features(question, "Hallam Guild", 0.0, [GUILD], (), refuted)["premise_refuted"] == 0.0


def test_the_type_features_keep_their_signs():
    assert SIGNS["answer_type_agrees"] == +1 and SIGNS["answer_type_conflicts"] == -1
    with pytest.raises(CheckpointError, match="answer_type_conflicts"):
        CalibrationModel(weights={"answer_type_conflicts": 0.5}, intercept=0.0)
    with pytest.raises(CheckpointError, match="answer_type_agrees"):
        CalibrationModel.from_dict({"weights": {"answer_type_agrees": -0.5}, "intercept": 0.0})


@pytest.mark.parametrize("name", sorted(SIGNS))
def test_a_signed_feature_moves_the_shipped_model_only_its_way(name):
    rng, model = random.Random(name), default_model()
    for _ in range(200):
        values = {feature: rng.choice((0.0, 1.0, rng.random())) for feature in FEATURES}
        supported, plain = rng.random() < 0.8, rng.random() < 0.2
        low = model.settled({**values, name: 0.0}, supported=supported, plain=plain)
        high = model.settled({**values, name: 1.0}, supported=supported, plain=plain)
        assert (high - low) * SIGNS[name] >= -1e-12, values


def test_the_shipped_model_reads_the_new_features():
    model = default_model()
    assert {"answer_type_agrees", "answer_type_conflicts", "bridge_in_top", "answer_calculated",
            "premise_refuted"} <= set(FEATURES)
    assert set(model.weights) == set(FEATURES)


def test_a_number_with_a_thousands_separator_is_one_item_not_a_list():
    lock = "The Saltmarsh Lock is 1,047 m long."
    assert statement("How long is the Saltmarsh Lock?", "1,047 m", [lock]).supported
    assert _items("1,047 m") == ["1,047 m"] and _items("Ferrow, Dunmore and Oban") == ["Ferrow", "Dunmore", "Oban"]
    assert _items("1702, 1961") == ["1702", "1961"]


def test_the_calibration_loads_no_method():
    """The bridge detector is RAS's; importing it at the top would load every built-in method."""
    code = "import sys, engine.calibration; print(sorted(m for m in sys.modules if m.startswith('engine.methods')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=Path(__file__).resolve().parents[2])
    assert done.stdout.strip() == "[]"
