"""Small pieces every method uses to turn tool results into steps."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from engine.tools.base import Reading
from engine.tools.bundle import ToolBundle
from engine.trace import AnswerStep, Hit, Step


def distinct_docs(hits: Sequence[Hit]) -> tuple[str, ...]:
    """Doc ids in first-seen order: a method's evidence list for recall@k (DESIGN §10)."""
    return tuple(dict.fromkeys(h.doc_id for h in hits))


def reading_steps(reading: Reading, iteration: int) -> Iterator[Step]:
    """The steps a tool recorded (calculations, LLM calls, parser fallbacks), placed in this round."""
    for step in reading.steps:
        yield replace(step, iteration=iteration)


def answer_step(reading: Reading, evidence: Sequence[Hit], tools: ToolBundle, iteration: int) -> AnswerStep:
    return AnswerStep(
        iteration=iteration,
        title="Refused: not enough evidence" if reading.refused else "Answer",
        text=reading.answer,
        citations=reading.citations,
        confidence=reading.confidence,
        refused=reading.refused,
        backend=tools.backend,
        model=tools.model,
        evidence=distinct_docs(evidence),
    )
