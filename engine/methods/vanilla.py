"""Vanilla RAG: retrieve the top-k chunks once, then read the answer from them (the baseline)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from engine.methods.base import Method, RunContext, register
from engine.methods.common import answer_step, reading_steps
from engine.params import param
from engine.retrieval.suite import RETRIEVER_NAMES
from engine.trace import RetrievalStep, Step


@dataclass(frozen=True)
class VanillaParams:
    k: int = param(5, min=1, max=30, help="How many chunks are retrieved and read.")
    retriever: str = param("hybrid", choices=RETRIEVER_NAMES,
                           help="hybrid = RRF of dense MiniLM and BM25; or either alone.")


@register
class VanillaMethod(Method):
    id = "vanilla"
    label = "Vanilla RAG"
    paper = "Lewis et al., Retrieval-Augmented Generation for Knowledge-Intensive NLP Tasks (2020)"
    description = "Retrieve once, read once: the baseline every other method is compared with."
    Params = VanillaParams

    def run(self, question: str, ctx: RunContext) -> Iterator[Step]:
        params: VanillaParams = ctx.params
        # Retrieve: one query, the question itself
        hits = ctx.retrieval.search(question, k=params.k, retriever=params.retriever, provenance="question")
        yield RetrievalStep(iteration=1, title=f"Top {len(hits)} chunks ({params.retriever})",
                            query=question, retriever=params.retriever, hits=hits)
        ctx.check()
        # Read: answer from the retrieved chunks
        reading = ctx.tools.reader.read(question, hits)
        yield from reading_steps(reading, iteration=1)
        yield answer_step(reading, hits, ctx.tools, iteration=1)
