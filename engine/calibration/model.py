"""The fitted logistic model and `settle`, which turns a raw offline answer into a calibrated one or a refusal."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path
from types import MappingProxyType
from typing import Any

from engine.calibration.features import FEATURES, Derived, answer_features, derived_support, statement
from engine.codec import loads_bounded
from engine.errors import CheckpointError
from engine.params import AnswerPolicy
from engine.tools.base import IDK
from engine.trace import AnswerStep, CalculationStep, DecisionStep, GraphDeltaStep, RetrievalStep, Step

MODEL_FILE = Path(__file__).with_name("model.json")
# The features whose direction is known before any data (issue 27): the sign their weight must have,
# +1 (may only raise the probability) or -1 (may only lower it). An unconstrained fit got two of them
# wrong off the packs it saw — a shape mismatch at +1.49, the method's own score near 0 — so the
# fitting script bounds them and a model that breaks one does not load.
SIGNS: Mapping[str, int] = MappingProxyType({
    "raw_logit": +1,       # the method's own score counts for its answer, never against it
    "shape_mismatch": -1,  # no number for 'how many' can only make the answer less likely right
    "answer_in_graph": +1,  # a graph fact tying a name of the question to the answer is evidence for it
    "answer_type_agrees": +1,  # the answer defined as the asked noun is the kind of thing asked for
    "answer_type_conflicts": -1,  # a person for 'which city' is not
    "answer_support": -1,  # an answer most retrieved documents state is usually the question's topic, not its answer
    "answer_beyond_top": +1,  # stated by a later document, not the first (the topic's own page): read past the topic
    "bridge_in_top": -1,   # a described entity's answer stated by the first document is that entity, one hop short
    "answer_calculated": +1,  # computed from numbers the text writes, not read off a sentence about something else
    "premise_refuted": +1,  # the run's own premise check found the question's premise false
    "asks_choice": +1,     # one of two options the question names: right at least half the time by construction
})


@dataclass(frozen=True)
class CalibrationModel:
    """p(right) = σ(intercept + Σ weight·feature), then two rules on how the retrieved text states the
    answer (features.statement). No term per method: a method's strength on one pack (hybrid's KG
    answers on the demo pack) is not its strength on another, and a user's own method is calibrated by
    the same features.

    The rules are monotone, each only raising or only lowering one kind of answer: an answer a
    retrieved clause states plainly is worth at least `plain_floor`; an answer no retrieved sentence
    supports is worth at most `unsupported_ceiling`, squeezed under it in order (`_below`). The fit
    cannot learn either: plain statements are a handful of the answers it sees, so the weights of
    "the first document states the answer" (more often the question's topic than its answer) decide
    them, and unsupported answers are mostly computed ones (an age from two dates, a premise judged
    false) that other cues score high. The fitting script sets each bound to what such answers were
    worth in its rows: (right + 1) / (n + 2) over their distinct question-answer pairs, the rule of
    succession. The defaults apply no rule.

    Constraints (issue 27): each feature in SIGNS has a weight of its sign or 0, and a plain statement
    can only raise (the floor is a max), an unsupported answer only fall (the ceiling squeezes), so a
    shape mismatch lowers the probability whatever else holds. A feature without a known sign is kept
    only when its weight has one sign on every pack the model is fitted on (scripts/fit_calibration.py)."""

    weights: Mapping[str, float]
    intercept: float
    fitted_on: Mapping[str, Any] = field(default_factory=dict)  # packs, question counts, held-out figures
    plain_floor: float = 0.0
    unsupported_ceiling: float = 1.0

    def __post_init__(self) -> None:
        wrong = {n: w for n, w in self.weights.items() if w * SIGNS.get(n, 0) < 0}
        if wrong:
            raise CheckpointError(f"calibration weights {wrong} break their sign constraints "
                                  f"{ {n: SIGNS[n] for n in wrong} } (+1: at least 0, -1: at most 0); refit with "
                                  "scripts/fit_calibration.py, which bounds them")

    def probability(self, question: str, answer: str, raw: float, evidence: Sequence[str] = (),
                    facts: Sequence[tuple[str, str]] = (), derived: Derived = Derived()) -> float:
        stated = statement(question, answer, evidence)
        supported = stated.supported or derived_support(question, answer, evidence, facts, derived)
        return self.settled(answer_features(question, answer, raw, evidence, facts, derived), supported=supported,
                            plain=stated.plain)

    def settled(self, values: Mapping[str, float], *, supported: bool, plain: bool) -> float:
        """The probability from feature values and how the text states the answer: the logistic model,
        then the two rules (monotone in the fitted value, so each feature's sign carries through; the
        property tests call this directly, over feature rows no text need produce)."""
        z = self.intercept + sum(w * values[n] for n, w in self.weights.items())
        fitted = 1.0 / (1.0 + math.exp(-max(-30.0, min(30.0, z))))
        if not supported:
            return _below(fitted, self.unsupported_ceiling)
        return max(fitted, self.plain_floor) if plain else fitted

    def to_dict(self) -> dict[str, Any]:
        return {"features": list(FEATURES), "weights": dict(self.weights), "intercept": self.intercept,
                "plain_floor": self.plain_floor, "unsupported_ceiling": self.unsupported_ceiling,
                "fitted_on": dict(self.fitted_on)}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> CalibrationModel:
        unknown = set(data["weights"]) - set(FEATURES)
        if unknown:
            raise CheckpointError(f"calibration model has weights for unknown features {sorted(unknown)}; "
                                  f"known: {', '.join(FEATURES)}")
        return cls(weights=MappingProxyType({k: float(v) for k, v in data["weights"].items()}),
                   intercept=float(data["intercept"]),
                   fitted_on=MappingProxyType(dict(data.get("fitted_on", {}))),
                   plain_floor=float(data.get("plain_floor", 0.0)),
                   unsupported_ceiling=float(data.get("unsupported_ceiling", 1.0)))


def _below(p: float, ceiling: float) -> float:
    """`p` squeezed under `ceiling`, keeping its order: the same below the knee (even odds, or the
    ceiling if lower), the rest of [knee, 1] mapped linearly onto [knee, ceiling]. Which answers are
    likelier right than wrong, and how they rank among themselves, stays as fitted."""
    knee = min(0.5, ceiling)
    return p if p <= knee else knee + (p - knee) * (ceiling - knee) / (1 - knee)


@lru_cache(maxsize=1)
def default_model() -> CalibrationModel:
    return CalibrationModel.from_dict(loads_bounded(MODEL_FILE.read_text(encoding="utf-8"), str(MODEL_FILE)))


def settle(step: AnswerStep, question: str, policy: AnswerPolicy | None, steps: Sequence[Step] = (),
           model: CalibrationModel | None = None) -> AnswerStep:
    """An offline answer with its calibrated confidence, read from the run's `steps` so far; below the
    `policy`'s min_confidence, a refusal that keeps the best guess and the threshold in their fields
    (`guess`, `min_confidence`) so the user sees what was held back and why."""
    if step.refused or step.backend != "offline":
        return step
    model = model or default_model()
    confidence = round(model.probability(question, step.text, step.confidence, retrieved_documents(steps),
                                         graph_facts(steps), derivations(steps)), 4)
    if policy is not None and confidence < policy.min_confidence:
        return replace(step, title=f"Refused: confidence {confidence:.2f} is below min_confidence "
                       f"{policy.min_confidence:.2f} (best guess: {step.text[:80]!r})",
                       text=IDK, refused=True, confidence=confidence, guess=step.text,
                       min_confidence=policy.min_confidence)
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


def derivations(steps: Sequence[Step]) -> Derived:
    """What the run concluded itself (features.Derived): every calculation that gave a result (a filtered or
    failed one gave none), and whether a decision step found the question's premise false."""
    return Derived(calculations=tuple((step.expression, step.result) for step in steps
                                      if isinstance(step, CalculationStep) and step.result is not None
                                      and not step.error and step.status in ("", "ok")),
                   false_premise=any(isinstance(step, DecisionStep) and step.action == "false_premise"
                                     for step in steps))
