"""Tool interfaces. Methods call these and never branch on the backend (DESIGN §3).

Interfaces are Protocols, as in every method folder's tools.py: an implementation needs no base class.
Contract shared by every tool: it never raises on bad model output or unanswerable input; it
returns its result plus the steps worth recording (an `llm_call`, a `calculation`, an `error`
when a parser fell back), which the calling method yields as they are.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from engine.knowledge.records import Triple
from engine.trace import Hit, Step, require_bool

IDK = "I don't know"


@dataclass(frozen=True)
class AnswerType:
    """What kind of answer a question asks for; `options` holds A and B of 'A or B' questions."""

    kind: str  # person | place | date | number | entity | yes_no | choice | other
    options: tuple[str, ...] = ()
    order: str = ""  # for choice/number questions: "min" (first, earliest, fewest) or "max"


@dataclass(frozen=True)
class Reading:
    """An answer read from evidence. `citations` are doc ids the answer rests on."""

    answer: str
    citations: tuple[str, ...] = ()
    confidence: float = 0.0
    refused: bool = False
    rationale: str = ""
    steps: tuple[Step, ...] = ()

    def __post_init__(self) -> None:
        require_bool("refused", self.refused)


class QuestionClassifier(Protocol):
    """What kind of answer a question asks for."""

    def classify(self, question: str) -> AnswerType: ...


class Reader(Protocol):
    """Answer a question from ranked evidence chunks and optional KG facts (triples)."""

    def read(self, question: str, evidence: Sequence[Hit], facts: Sequence[Triple] = ()) -> Reading: ...


def echoes_question(question: str, answer: str, classifier: QuestionClassifier | None) -> bool:
    """An answer the question itself names is a hop not yet taken (or no answer at all), unless the
    question offers it as a choice ("A or B?", yes/no)."""
    if not answer or answer.lower() not in question.lower():
        return False
    kind = classifier.classify(question).kind if classifier else ""
    return kind not in ("choice", "yes_no")
