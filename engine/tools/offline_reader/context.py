"""What one read works from (question, type, scored sentences) and the helpers all answer paths share."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from functools import cached_property

from engine.tools.base import IDK, AnswerType, Reading
from engine.tools.offline_reader.answer_types import Asked, EntityType, defined_types
from engine.tools.offline_reader.lexicon import lower_words
from engine.tools.offline_reader.names import Gazetteer
from engine.tools.offline_reader.records import Sentence
from engine.tools.offline_reader.sentences import content_stems, idf_weights
from engine.trace import Step


@dataclass(frozen=True)
class Context:
    """Everything one read works from: the question, its type and the scored sentences."""

    question: str
    answer_type: AnswerType
    gazetteer: Gazetteer
    sentences: list[Sentence]

    @cached_property
    def idf(self) -> dict[str, float]:
        return idf_weights(self.sentences)

    @cached_property
    def question_words(self) -> frozenset[str]:
        words = lower_words(self.question)
        return frozenset(words + [p for w in words if "-" in w for p in w.split("-")])

    @cached_property
    def question_stems(self) -> frozenset[str]:
        return content_stems(self.question)

    @cached_property
    def proximity_stems(self) -> frozenset[str]:
        """The stems a candidate's nearness is measured to: the question's own (no built-in list of
        relations and their inverses — such a list only knows the domains it was written for)."""
        return self.question_stems

    @cached_property
    def asked(self) -> Asked:
        """The asked type beyond the kind: 'which country' → ('country',), and the question's own stems."""
        return Asked.of(self.question, self.answer_type.kind)

    @cached_property
    def entity_types(self) -> dict[str, EntityType]:
        """What each defined name in the evidence is ('a German conglomerate company' → company)."""
        return defined_types(self.sentences, self.gazetteer)

    def ranked(self) -> list[Sentence]:
        return sorted(self.sentences, key=lambda s: -s.score)


def cited(sentences: Iterable[Sentence | None]) -> tuple[str, ...]:
    """The documents behind these sentences, in order, once each; KG facts cite none."""
    return tuple(dict.fromkeys(s.doc_id for s in sentences if s is not None and s.doc_id))


def refusal(reason: str, steps: tuple[Step, ...] = ()) -> Reading:
    return Reading(answer=IDK, refused=True, confidence=0.0, rationale=reason, steps=steps)


def relevance(score: float) -> float:
    """Map a sentence score to [0, 1]: below ~0.2 the evidence is off topic."""
    return min(1.0, max(0.0, (score - 0.2) / 0.4))


def quote(text: str, limit: int = 160) -> str:
    return f"“{text[:limit]}{'…' if len(text) > limit else ''}”"


def fmt(value: float) -> str:
    return str(int(value)) if float(value).is_integer() else f"{value:g}"
