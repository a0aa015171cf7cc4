"""R2AG where nothing can be injected: the bundle's reader over the R2-Former's re-ranked chunks, with a
decision step saying why (offline there is no model; a server takes text only; a checkpoint may have no
projection for the loaded model). A reading that only hands back its prompt is a recoverable error step and
the answer is "I don't know".
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace

from engine.methods.base import RunContext
from engine.methods.common import answer_step, reading_steps
from engine.methods.r2ag.tools import ITERATION, InjectionModel
from engine.tools.base import IDK
from engine.tools.llm_call import shorten
from engine.trace import DecisionStep, ErrorStep, Hit, LlmCallStep, Step

RERANK_ONLY = "R2AG — re-rank only, no injection"  # the run's label when nothing could be injected


def why_not_injected(model: InjectionModel | None, remote_backend: str) -> DecisionStep:
    if model is None and not remote_backend:
        detail = ("no embeddings were injected because no language model is loaded (R2AG injects vectors into "
                  "a local HF model's inputs_embeds); the offline reader answers from the R2-Former's "
                  "re-ranked chunks")
    elif model is None:
        detail = (f"no embeddings were injected: the {remote_backend} backend takes text only, not inputs_embeds "
                  "(load a local model with the hf backend); the LLM reader answers from the re-ranked chunks")
    else:
        detail = (f"no embeddings were injected: the R2-Former checkpoint has no projection trained for "
                  f"{model.llm_id} (train one with `python -m engine train-r2ag --pack DIR --backend hf "
                  "--model PATH`); the LLM reader answers from the re-ranked chunks instead")
    return DecisionStep(iteration=ITERATION, title=RERANK_ONLY, action="no_injection", detail=detail)


def read_reranked(question: str, ctx: RunContext, reranked: Sequence[Hit]) -> Iterator[Step]:
    """The reader over the re-ranked chunks; a reading that only hands back its prompt is no answer."""
    from engine.methods.r2ag.answer import instructions_of
    from engine.tools.short_answer import echo_of

    reading = ctx.tools.reader.read(question, reranked)
    yield from reading_steps(reading, iteration=ITERATION)
    answer = answer_step(reading, reranked, ctx.tools, iteration=ITERATION)
    calls = [s for s in reading.steps if isinstance(s, LlmCallStep)]
    documents = [h.text for h in reranked]
    instructions = instructions_of(calls[-1].prompt, question, documents) if calls else ""
    echoed = "" if reading.refused else echo_of(reading.answer, question, documents, instructions)
    why = " (refused: not enough evidence)" if reading.refused else ""
    if echoed:
        yield ErrorStep(iteration=ITERATION, title="R2AG answer refused",
                        message=f"the reader echoed {echoed} instead of answering: {shorten(reading.answer)}; "
                                "answered I don't know")
        answer, why = replace(answer, text=IDK, refused=True, citations=(), confidence=0.0), f" (refused: {echoed})"
    yield replace(answer, title=RERANK_ONLY + why)
