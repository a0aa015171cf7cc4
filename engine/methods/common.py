"""Small pieces every method uses to turn tool results into steps."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.methods.base import RunContext

from engine.tools.base import Reading
from engine.tools.bundle import ToolBundle
from engine.trace import AnswerStep, Hit, RetrievalStep, Step


def distinct_docs(hits: Sequence[Hit]) -> tuple[str, ...]:
    """Doc ids in first-seen order: a method's evidence list for recall@k (DESIGN §10)."""
    return tuple(dict.fromkeys(h.doc_id for h in hits))


def placed(steps: Sequence[Step], iteration: int) -> Iterator[Step]:
    """The steps a tool recorded (calculations, LLM calls, parser fallbacks), placed in this round."""
    for step in steps:
        yield replace(step, iteration=iteration)


def reading_steps(reading: Reading, iteration: int) -> Iterator[Step]:
    return placed(reading.steps, iteration)


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


def retrieve_and_read(question: str, ctx: RunContext, k: int, retriever: str, title: str,
                      iteration: int = 1) -> Iterator[Step]:
    """Standard RAG in one round: retrieve for the question alone, read, answer.

    `title` may hold `{n}`, the number of chunks that came back.
    """
    hits = ctx.retrieval.search(question, k=k, retriever=retriever, provenance="question")
    yield RetrievalStep(iteration=iteration, title=title.format(n=len(hits)), query=question,
                        retriever=retriever, hits=hits)
    ctx.check()
    reading = ctx.tools.reader.read(question, hits)
    yield from reading_steps(reading, iteration=iteration)
    yield answer_step(reading, hits, ctx.tools, iteration=iteration)
