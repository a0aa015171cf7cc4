"""The refusal policy (spec §2.3 gate, §2.8): dynamic questions get "I don't know", false premises
get "invalid question".

Decision on spec §8.4: the 4 dynamism classes collapse to 2 at a configurable threshold; the default
"fast-changing" counts {fast-changing, real-time} as dynamic, as [C] does; "off" never gates.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.methods.hybrid.attributes import Attributes, is_dynamic
from engine.knowledge.records import INVALID_QUESTION
from engine.tools.base import IDK

GATE_CHOICES = ("fast-changing", "real-time", "slow-changing", "off")


@dataclass(frozen=True)
class Verdict:
    """What the policy says: `answer` is empty when the pipeline should go on."""

    answer: str
    route: str  # continue | dynamic_gate | false_premise
    reason: str


def dynamic_gate(attributes: Attributes, threshold: str) -> Verdict:
    """Predicted dynamic → "I don't know" before any later module runs (spec §2.3)."""
    if threshold != "off" and is_dynamic(attributes.dynamism, threshold):
        return Verdict(IDK, "dynamic_gate",
                       f"predicted {attributes.dynamism} ({attributes.dynamism_confidence:.0%}); questions at least "
                       f"as dynamic as {threshold} get {IDK!r} — retrieved pages may be out of date")
    return Verdict("", "continue", f"predicted {attributes.dynamism}: answer from the references")


def false_premise(reason: str) -> Verdict:
    return Verdict(INVALID_QUESTION, "false_premise", reason)
