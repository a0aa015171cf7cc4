"""R2AG's injected generation (spec §2.4, §3 steps 7-11): the R2-Former's vectors written into a local HF
model's prompt before each document, greedy decoding, and a plain-RAG run over the same documents to compare.

An output that only hands the prompt back (`answer.parse_output`) is a recoverable error step and the answer
is "I don't know". torch is imported only when a generation runs (`injection`, `views`).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any

from engine.errors import BackendError
from engine.methods.base import RunContext
from engine.methods.common import distinct_docs
from engine.methods.r2ag.checkpoint import llm_identity
from engine.methods.r2ag.tools import ITERATION, InjectionModel, Scored
from engine.tools.base import IDK
from engine.tools.llm_call import shorten
from engine.trace import AnswerStep, DecisionStep, ErrorStep, Hit, LlmCallStep, Step

if TYPE_CHECKING:
    from engine.methods.r2ag.method import R2agParams


def injection_model(chat: Any) -> InjectionModel | None:
    """Injection needs the model's embedding table: only the HF backend has one."""
    if not all(hasattr(chat, name) for name in ("model_obj", "tokenizer", "exclusive", "config")):
        return None
    width = int(chat.model_obj.get_input_embeddings().weight.shape[1])
    return InjectionModel(chat=chat, llm_id=llm_identity(chat.config.path, chat.model_obj.config), hidden_size=width)


def generate(question: str, ctx: RunContext, params: R2agParams, model: InjectionModel, former: Any, scored: Scored,
              ordered: Sequence[Hit], reranked: Sequence[Hit], gold: set[str]) -> Iterator[Step]:
    from engine.methods.r2ag.answer import parse_output
    from engine.methods.r2ag.prompt import PromptDoc, document_text, prompt_pieces, tokenize_prompt

    chat, tokenizer = model.chat, model.chat.tokenizer
    docs = [PromptDoc(h.title, h.text) for h in ordered]
    highlight = tuple(f"doc {n}" for n, h in enumerate(ordered, start=1) if h.doc_id in gold)
    runs = [("R2AG", True)] + ([("plain RAG", False)] if params.compare_plain else [])
    parsed = None
    for group, slots in runs:
        pieces = prompt_pieces(question, docs, slots)
        prompt = tokenize_prompt(tokenizer, pieces, params.max_prompt_tokens)
        if slots and len(prompt.slots) != len(docs):  # spec §3.8: one slot per document, none lost
            raise BackendError(f"the R2AG prompt kept {len(prompt.slots)} slots for {len(docs)} documents")
        generation = _decode(chat, former, scored, prompt, params, inject=slots)
        yield LlmCallStep(iteration=ITERATION, title=f"{group} generation", role=group.lower(), prompt=prompt.text,
                          output=generation.text, tokens_in=len(prompt.ids), tokens_out=len(generation.tokens),
                          latency_ms=generation.latency_ms, backend=f"{chat.backend}: {chat.model}")
        if slots:  # the answer is R2AG's; the plain run is shown for comparison only
            instructions = "".join(p.text for p in pieces if p.kind == "other")
            parsed = parse_output(generation.text, question, instructions, [document_text(d) for d in docs])
            if parsed.problem:
                yield ErrorStep(iteration=ITERATION, title="R2AG answer refused",
                                message=f"{parsed.problem}: {shorten(generation.text)}; answered I don't know")
        if prompt.cut_tokens:
            yield DecisionStep(iteration=ITERATION, action="truncate",
                               detail=f"{prompt.cut_tokens} document tokens cut to fit {params.max_prompt_tokens}; "
                                      "every placeholder slot was kept")
        if generation.prompt_last is not None and generation.per_token is not None:
            from engine.methods.r2ag.views import Generated, llm_attention_steps

            shown = tokenizer.batch_decode([[t] for t in prompt.ids])  # one call, not one per token
            yield from llm_attention_steps(generation.prompt_last, Generated(generation.per_token, generation.tokens,
                                           generation.pieces), prompt.segments, shown, group, highlight, ITERATION)
        ctx.check()
    answer = parsed.answer if parsed else ""
    refused = not answer or answer.lower().startswith(IDK.lower())
    yield AnswerStep(iteration=ITERATION, title="Answer (R2AG)" + (" (refused)" if refused else ""),
                     text=IDK if refused else answer, refused=refused, backend=chat.backend, model=chat.model,
                     evidence=distinct_docs(reranked))


def _decode(chat: Any, former: Any, scored: Scored, prompt: Any, params: R2agParams, inject: bool) -> Any:
    import torch

    from engine.methods.r2ag.injection import greedy_decode, prompt_embeddings

    with chat.exclusive(), torch.no_grad():
        vectors = former.project(scored.hidden)[0] if inject else None  # (n, hidden)
        embeds = prompt_embeddings(chat.model_obj, prompt, vectors)
        return greedy_decode(chat.model_obj, chat.tokenizer, embeds, params.max_new_tokens, params.attention)
