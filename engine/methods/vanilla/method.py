"""Vanilla RAG: retrieve the top-k chunks once, then read the answer from them (the baseline)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from engine.methods.base import Method, RunContext, register
from engine.methods.common import retrieve_and_read
from engine.params import param
from engine.retrieval.suite import RETRIEVER_NAMES
from engine.trace import Step


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
        # Retrieve once for the question, then read the answer from those chunks
        yield from retrieve_and_read(question, ctx, params.k, params.retriever,
                                     title=f"Top {{n}} chunks ({params.retriever})")
