"""RuleRAG-ICL: match rules, retrieve once per rule with question ∘ rule, read with the rules.

Spec: shared/methods/rulerag.md. Iteration 0 is rule matching plus the question-only retrieval
(Standard RAG, kept for comparison); round 1 is the per-rule retrievals, their merge and the
rule-guided reading. No rule above θ: a set-up decision step says so, and round 1 is Standard RAG
(the question-only retrieval read by the plain reader, spec §2 Step 0).

Defaults are the paper's: θ = 0.7, top 3 rules, k = 10, the bracketed rule form appended to the
question for retrieval. Rule matching defaults to the masked score (engine.rules.matching), with
the paper's plain cosine as `matching=paper`. `adapter` runs the rule reader with a RuleRAG-FT LoRA
adapter (scripts/finetune_generator_lora.py) on the hf backend.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, replace

from engine.errors import BackendError
from engine.methods.base import Method, RunContext, register
from engine.methods.common import answer_step, reading_steps, retrieve_and_read
from engine.methods.rulerag.llm import LlmRuleReader
from engine.methods.rulerag.offline import OfflineRuleReader
from engine.methods.rulerag.tools import RuleReader
from engine.params import param
from engine.retrieval.suite import RETRIEVER_NAMES
from engine.rules.matching import (
    MATCHING_MODES,
    RELATION_BONUS,
    THETA,
    TOP_N,
    MatchConfig,
    RuleMatching,
    ScoredRule,
    match_rules,
)
from engine.rules.text import RULE_QUERY_FORMS, rule_query
from engine.tools.llm_call import error_step
from engine.trace import DecisionStep, Hit, RetrievalStep, RulesMatchedStep, Step

MATCHING_HELP = (
    "How a rule's similarity to the question is scored. masked (default): the question with its entities "
    "replaced by X, compared with the rule's sentence, plus a bonus when the rule's head is the relation the "
    "question asks about. paper: the paper's plain cosine of the question and the bracketed rule text. The "
    "default differs because with the small local encoder the plain cosine stays far below θ = 0.7 (0.2–0.4 "
    "for the right rule on the demo pack: entity names carry no rule signal), so almost no rule would ever "
    "be used and RuleRAG would fall back to Standard RAG."
)


@dataclass(frozen=True)
class RuleRagParams:
    theta: float = param(THETA, min=0.0, max=1.0, help="Rules need a similarity above θ to be used (paper: 0.7).")
    top_n: int = param(TOP_N, min=1, max=10, help="At most this many matched rules, one retrieval each (paper: 3).")
    k: int = param(10, min=1, max=30, help="Chunks per retrieval and in the merged list (paper: 10).")
    retriever: str = param("hybrid", choices=RETRIEVER_NAMES,
                           help="hybrid = RRF of dense MiniLM and BM25; or either alone.")
    relation_bonus: float = param(RELATION_BONUS, min=0.0, max=1.0,
                                  help="masked matching: added to a rule's similarity when its head is the "
                                       "question's relation.")
    matching: str = param("masked", choices=MATCHING_MODES, help=MATCHING_HELP)
    query_rule: str = param("brackets", choices=RULE_QUERY_FORMS,
                            help="Rule form appended to the question for retrieval: the paper's "
                                 "[X, r1, Z] … leads to [X, r, Y] form, or the rule's plain sentence.")
    adapter: str = param("", help="hf backend only: folder of a LoRA adapter trained by "
                                  "scripts/finetune_generator_lora.py (RuleRAG-FT's generator); the rule reader "
                                  "runs with it, other calls use the base model. Empty = the base model.")


@register
class RuleRagMethod(Method):
    id = "rulerag"
    label = "RuleRAG"
    paper = ("Chen et al., RuleRAG: Rule-Guided Retrieval-Augmented Generation with Language Models "
             "for Question Answering (2024)")
    description = "Match KG rules to the question, retrieve once per rule, answer with the rules as a guide."
    Params = RuleRagParams

    def run(self, question: str, ctx: RunContext) -> Iterator[Step]:
        params: RuleRagParams = ctx.params
        # §2 Step 0: rule matching (similarity only; confidence shown, not ranked on)
        matching = match_rules(question, ctx.pack.rules, ctx.tools.kg, ctx.retrieval.embedder,
                               MatchConfig(params.theta, params.top_n, params.relation_bonus, params.matching))
        yield _matched_step(matching, params)
        if not matching.matched:
            yield from _standard_rag(question, matching, ctx)
            return
        # Standard RAG retrieval (question alone), recorded for comparison
        standard = ctx.retrieval.search(question, k=params.k, retriever=params.retriever, provenance="question")
        yield RetrievalStep(iteration=0, title=f"Standard retrieval: top {len(standard)} for the question alone",
                            query=question, retriever=params.retriever, hits=standard)
        ctx.check()
        # §2 Step 1..|R_q|: one retrieval per rule with question ∘ rule, merged by max score
        per_rule = []
        for scored in matching.matched:
            query = f"{question} {rule_query(scored.rule, params.query_rule)}"
            hits = ctx.retrieval.search(query, k=params.k, retriever=params.retriever,
                                        provenance=f"rule {scored.rule.id}")
            per_rule.append((scored, hits))
            yield RetrievalStep(iteration=1, title=f"Rule {scored.rule.id}: top {len(hits)}", query=query,
                                retriever=params.retriever, hits=hits)
            ctx.check()
        merged = merge_hits(per_rule, params.k)
        yield RetrievalStep(iteration=1, title=f"Merged: {len(merged)} chunks from {len(per_rule)} rules",
                            query=question, retriever=params.retriever, hits=merged)
        # §2 Step N+1: rule-guided reading (RuleRAG-FT: with the LoRA generator adapter on the hf backend)
        reader = _rule_reader(ctx)
        notes, scope = _adapter_scope(ctx, params)
        yield from notes
        with scope:
            result = reader.read(question, merged, matching.matched)
        yield from reading_steps(result.reading, iteration=1)
        yield _attribution(result.rule_id, result.path, result.reading.rationale)
        yield answer_step(result.reading, merged, ctx.tools, iteration=1)


def merge_hits(per_rule: Sequence[tuple[ScoredRule, Sequence[Hit]]], k: int) -> tuple[Hit, ...]:
    """Union of the per-rule lists [decide, spec §2]: dedupe by chunk, max score, sort, cut to k.

    Provenance names every rule that pulled the chunk with its rank there ("rule r01, rank 2");
    ties keep the order of first appearance (matching order, then rank).
    """
    best: dict[str, Hit] = {}
    sources: dict[str, list[str]] = {}
    for scored, hits in per_rule:
        for hit in hits:
            sources.setdefault(hit.chunk_id, []).append(f"rule {scored.rule.id}, rank {hit.rank}")
            if hit.chunk_id not in best or _weakness(hit) < _weakness(best[hit.chunk_id]):
                best[hit.chunk_id] = hit
    order = {chunk: n for n, chunk in enumerate(sources)}
    ranked = sorted(best.values(), key=lambda h: (_weakness(h), order[h.chunk_id]))[:k]
    return tuple(replace(h, rank=n, provenance="; ".join(sources[h.chunk_id])) for n, h in enumerate(ranked, start=1))


def _weakness(hit: Hit) -> tuple[float, float]:
    """Sort key, strongest first: the retriever's score; its rank when it gives none (a user's LangChain
    retriever, issue 25), after every scored hit."""
    return (-hit.score, 0.0) if hit.score is not None else (math.inf, float(hit.rank))


def _adapter_scope(ctx: RunContext, params: RuleRagParams) -> tuple[tuple[Step, ...], AbstractContextManager]:
    """Steps saying what happens to `adapter`, and the block the rule reader runs in.

    The adapter needs a local transformers model (HfChatModel.adapter); elsewhere a decision step says
    so. One that does not load is a recoverable backend failure: the rule reader reads with the base model, so
    the answer is not RuleRAG-FT's (an evaluation counts it failed, issue 26).
    """
    path = params.adapter.strip()
    if not path:
        return (), nullcontext()
    chat = ctx.tools.chat
    if chat is None or not callable(getattr(chat, "adapter", None)):
        backend = ("offline backend reads symbolically" if chat is None
                   else f"{ctx.tools.backend} backend takes text only")
        return (DecisionStep(iteration=1, title="LoRA adapter not used", action="no_adapter",
                             detail=f"adapter {path} needs the hf backend (a local transformers model to load it "
                                    f"into); the {backend}, so the rule reader runs without it"),), nullcontext()
    try:
        chat.load_adapter(path)
    except BackendError as exc:
        failed = error_step("rule reader", f"the LoRA adapter could not be loaded ({exc}); "
                                           "the rule reader reads with the base model")
        return (replace(failed, backend_failure=True),), nullcontext()
    return (DecisionStep(iteration=1, title="Rule reader with the LoRA adapter", action="adapter",
                         detail=f"the rule reader's calls run with the LoRA adapter {path} on {ctx.tools.model} "
                                "(RuleRAG-FT's generator); other calls use the base model"),), chat.adapter(path)


def _rule_reader(ctx: RunContext) -> RuleReader:
    return ctx.tools.twin(lambda chat: LlmRuleReader(chat, ctx.tools.kg),
                          lambda: OfflineRuleReader(ctx.tools.kg, ctx.tools.reader))


def _matched_step(matching: RuleMatching, params: RuleRagParams) -> RulesMatchedStep:
    if matching.matched:
        title = f"{len(matching.matched)} rules matched (θ = {params.theta}, top {params.top_n})"
    elif matching.scored:
        best = matching.scored[0]
        title = f"No rule above θ = {params.theta} (best {best.rule.id}: {best.similarity:.2f})"
    else:
        title = "The pack has no rules"
    return RulesMatchedStep(iteration=0, title=title, rules=tuple(s.to_match() for s in matching.matched))


def _standard_rag(question: str, matching: RuleMatching, ctx: RunContext) -> Iterator[Step]:
    """No rule injected: the question-only retrieval is round 1 and the plain reader reads it."""
    params: RuleRagParams = ctx.params
    why = "the pack has no rules" if not matching.scored else "no rule is similar enough to the question"
    unused = "; the LoRA adapter is for the rule reader and is not used" if params.adapter.strip() else ""
    yield DecisionStep(iteration=0, title="Degrade to Standard RAG", action="standard_rag",
                       detail=f"{why}; retrieving for the question alone and reading without rules "
                              f"(spec §2 Step 0){unused}")
    yield from retrieve_and_read(question, ctx, params.k, params.retriever,
                                 title="Standard retrieval: top {n} for the question alone")


def _attribution(rule_id: str, path: tuple[str, ...], rationale: str) -> DecisionStep:
    if rule_id:
        return DecisionStep(iteration=1, title=f"Answered by rule {rule_id}", action="answer",
                            detail=f"rule {rule_id}: " + " → ".join(path))
    return DecisionStep(iteration=1, title="No rule produced the answer", action="answer",
                        detail=rationale or "the reader answered without a rule path")
