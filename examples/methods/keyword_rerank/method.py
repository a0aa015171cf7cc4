"""Keyword re-rank: BM25 fetches a wide pool, the chunks sharing most words with the question are read."""
from collections.abc import Iterator
from dataclasses import dataclass, replace

from engine.methods import Method, RunContext, register
from engine.params import param
from engine.trace import AnswerStep, RetrievalStep, Step


@dataclass(frozen=True)
class Params:
    pool: int = param(20, min=5, max=50, help="How many chunks BM25 fetches before re-ranking.")
    k: int = param(4, min=1, max=10, help="How many of the best-overlapping chunks are read.")


@register
class KeywordRerank(Method):
    id, label, Params = "keyword_rerank", "Keyword re-rank", Params
    description = "BM25 fetches a wide pool; the chunks sharing most words with the question are read."

    def run(self, question: str, ctx: RunContext) -> Iterator[Step]:
        pool = ctx.retrieval.search(question, k=ctx.params.pool, retriever="bm25")
        yield RetrievalStep(iteration=1, title="BM25 pool", query=question, retriever="bm25", hits=pool)
        words = set(question.lower().split())
        ranked = sorted(pool, key=lambda hit: -len(words & set(hit.text.lower().split())))
        best = tuple(replace(hit, rank=rank) for rank, hit in enumerate(ranked[: ctx.params.k], start=1))
        yield RetrievalStep(iteration=1, title="Most shared words", query=question, retriever="rerank", hits=best)
        reading = ctx.tools.reader.read(question, best)  # offline, or the chosen language model
        yield from (replace(step, iteration=1) for step in reading.steps)
        yield AnswerStep(iteration=1, text=reading.answer, citations=reading.citations, refused=reading.refused,
                         confidence=reading.confidence, backend=ctx.tools.backend, model=ctx.tools.model)
