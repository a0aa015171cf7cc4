"""The fitted logistic model and `settle`, which turns a raw offline answer into a calibrated one or a refusal."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from collections.abc import Mapping, Sequence
from typing import Any

from engine.calibration.features import FEATURES, answer_features
from engine.tools.base import IDK
from engine.trace import AnswerStep, GraphDeltaStep, RetrievalStep, Step

MODEL_FILE = Path(__file__).with_name("model.json")


@dataclass(frozen=True)
class CalibrationModel:
    """p(right) = σ(intercept + Σ weight·feature). No term per method: a method's strength on one pack
    (hybrid's KG answers on the demo pack) is not its strength on another, and a user's own method is
    calibrated by the same features."""

    weights: Mapping[str, float]
    intercept: float
    fitted_on: Mapping[str, Any] = field(default_factory=dict)  # packs, question counts, held-out figures

    def probability(self, question: str, answer: str, raw: float, evidence: Sequence[str] = (),
                    facts: Sequence[tuple[str, str]] = ()) -> float:
        values = answer_features(question, answer, raw, evidence, facts)
        z = self.intercept + sum(w * values[n] for n, w in self.weights.items())
        return 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))

    def to_dict(self) -> dict[str, Any]:
        return {"features": list(FEATURES), "weights": dict(self.weights), "intercept": self.intercept,
                "fitted_on": dict(self.fitted_on)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CalibrationModel:
        unknown = set(data["weights"]) - set(FEATURES)
        if unknown:
            raise ValueError(f"calibration model has weights for unknown features {sorted(unknown)}")
        return cls(weights=MappingProxyType({k: float(v) for k, v in data["weights"].items()}),
                   intercept=float(data["intercept"]),
                   fitted_on=MappingProxyType(dict(data.get("fitted_on", {}))))


@lru_cache(maxsize=1)
def default_model() -> CalibrationModel:
    return CalibrationModel.from_dict(json.loads(MODEL_FILE.read_text(encoding="utf-8")))


def settle(step: AnswerStep, question: str, min_confidence: float | None, steps: Sequence[Step] = (),
           model: CalibrationModel | None = None) -> AnswerStep:
    """An offline answer with its calibrated confidence, read from the run's `steps` so far; below
    `min_confidence`, a refusal that keeps the best guess in its title so the user sees what was held
    back and why."""
    if step.refused or step.backend != "offline":
        return step
    model = model or default_model()
    confidence = round(model.probability(question, step.text, step.confidence, retrieved_documents(steps),
                                         graph_facts(steps)), 4)
    if min_confidence is not None and confidence < min_confidence:
        return replace(step, title=f"Refused: confidence {confidence:.2f} is below min_confidence "
                       f"{min_confidence:.2f} (best guess: {step.text[:80]!r})",
                       text=IDK, refused=True, confidence=confidence)
    return replace(step, confidence=confidence)


def retrieved_documents(steps: Sequence[Step]) -> list[str]:
    """The text of every document the run's retrieval steps brought back, once each, in order of arrival."""
    texts: dict[str, list[str]] = {}
    for step in steps:
        if isinstance(step, RetrievalStep):
            for hit in step.hits:
                texts.setdefault(hit.doc_id, []).append(hit.text)
    return [" ".join(dict.fromkeys(parts)) for parts in texts.values()]


def graph_facts(steps: Sequence[Step]) -> list[tuple[str, str]]:
    """(source, target) names of every edge the run's graph steps added (ids are the names)."""
    return [(edge.source, edge.target) for step in steps if isinstance(step, GraphDeltaStep)
            for edge in step.added_edges]
