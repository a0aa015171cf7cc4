"""The refusal policy (spec §2.3 gate, §2.8): dynamic questions get "I don't know", false premises
get "invalid question".

Decision on spec §8.4: the 4 dynamism classes collapse to 2 at a configurable threshold; the default
"fast-changing" counts {fast-changing, real-time} as dynamic, as [C] does; "off" never gates.
Deliberate deviation (issue 23): on LLM backends a question is refused unread only when the ICL vote
and the embedding classifier (the paper's own SVM alternative, which it found the more accurate, §2.3)
both call it dynamic; SmolLM2-135M labelled 2 of 10 static questions "fast-changing", and one weak
label should not throw away a whole answer.
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.knowledge.records import INVALID_QUESTION
from engine.methods.hybrid.attributes import Attributes, is_dynamic
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
    if threshold == "off" or not is_dynamic(attributes.dynamism, threshold):
        return Verdict("", "continue", f"predicted {attributes.dynamism}: answer from the references")
    second = attributes.second_dynamism
    if second and not is_dynamic(second, threshold):
        return Verdict("", "continue", f"the model predicted {attributes.dynamism} but the embedding classifier "
                       f"{second}: a question is refused unread only when both call it dynamic")
    also = f", the embedding classifier {second}" if second else ""
    return Verdict(IDK, "dynamic_gate",
                   f"predicted {attributes.dynamism} ({attributes.dynamism_confidence:.0%}){also}; questions at "
                   f"least as dynamic as {threshold} get {IDK!r} — retrieved pages may be out of date")


def false_premise(reason: str) -> Verdict:
    return Verdict(INVALID_QUESTION, "false_premise", reason)
