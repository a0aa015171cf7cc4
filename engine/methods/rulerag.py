"""RuleRAG-ICL: match rules, retrieve once per rule with question ∘ rule, read with the rules.

Spec: shared/methods/rulerag.md. Iteration 0 is rule matching plus the question-only retrieval
(Standard RAG, kept for comparison); round 1 is the per-rule retrievals, their merge and the
rule-guided reading. No rule above θ: a set-up decision step says so, and round 1 is Standard RAG
(the question-only retrieval read by the plain reader, spec §2 Step 0).
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, replace

from engine.methods.base import Method, RunContext, register
from engine.methods.common import answer_step, reading_steps, retrieve_and_read
from engine.params import param
from engine.retrieval.suite import RETRIEVER_NAMES
from engine.rules.matching import RELATION_BONUS, THETA, TOP_N, MatchConfig, RuleMatching, ScoredRule, match_rules
from engine.rules.text import rule_sentence, rule_text
from engine.tools.rule_reader import LlmRuleReader, OfflineRuleReader, RuleReader
from engine.trace import DecisionStep, Hit, RetrievalStep, RulesMatchedStep, Step


@dataclass(frozen=True)
class RuleRagParams:
    theta: float = param(THETA, min=0.0, max=1.0, help="Rules need a similarity above θ to be used (paper: 0.7).")
    top_n: int = param(TOP_N, min=1, max=10, help="At most this many matched rules, one retrieval each (paper: 3).")
    k: int = param(10, min=1, max=30, help="Chunks per retrieval and in the merged list (paper: 10).")
    retriever: str = param("hybrid", choices=RETRIEVER_NAMES,
                           help="hybrid = RRF of dense MiniLM and BM25; or either alone.")
    relation_bonus: float = param(RELATION_BONUS, min=0.0, max=1.0,
                                  help="Added to a rule's similarity when its head is the question's relation.")
    query_rule: str = param("sentence", choices=("sentence", "brackets"),
                            help="Rule form appended to the question for retrieval: the rule's sentence or "
                                 "the paper's [X, r1, Z] … leads to … form.")


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
                               MatchConfig(params.theta, params.top_n, params.relation_bonus))
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
            query = f"{question} {_rule_query(scored, params)}"
            hits = ctx.retrieval.search(query, k=params.k, retriever=params.retriever,
                                        provenance=f"rule {scored.rule.id}")
            per_rule.append((scored, hits))
            yield RetrievalStep(iteration=1, title=f"Rule {scored.rule.id}: top {len(hits)}", query=query,
                                retriever=params.retriever, hits=hits)
            ctx.check()
        merged = merge_hits(per_rule, params.k)
        yield RetrievalStep(iteration=1, title=f"Merged: {len(merged)} chunks from {len(per_rule)} rules",
                            query=question, retriever=params.retriever, hits=merged)
        # §2 Step N+1: rule-guided reading
        reader = _rule_reader(ctx)
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
            if hit.chunk_id not in best or hit.score > best[hit.chunk_id].score:
                best[hit.chunk_id] = hit
    order = {chunk: n for n, chunk in enumerate(sources)}
    ranked = sorted(best.values(), key=lambda h: (-h.score, order[h.chunk_id]))[:k]
    return tuple(replace(h, rank=n, provenance="; ".join(sources[h.chunk_id])) for n, h in enumerate(ranked, start=1))


def _rule_query(scored: ScoredRule, params: RuleRagParams) -> str:
    # [decide] spec §2: q ∘ r joined by one space; the sentence form reads better for BM25 and MiniLM
    if params.query_rule == "brackets":
        return rule_text(scored.rule.head, scored.rule.body)
    return rule_sentence(scored.rule)


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
    yield DecisionStep(iteration=0, title="Degrade to Standard RAG", action="standard_rag",
                       detail=f"{why}; retrieving for the question alone and reading without rules (spec §2 Step 0)")
    yield from retrieve_and_read(question, ctx, params.k, params.retriever,
                                 title="Standard retrieval: top {n} for the question alone")


def _attribution(rule_id: str, path: tuple[str, ...], rationale: str) -> DecisionStep:
    if rule_id:
        return DecisionStep(iteration=1, title=f"Answered by rule {rule_id}", action="answer",
                            detail=f"rule {rule_id}: " + " → ".join(path))
    return DecisionStep(iteration=1, title="No rule produced the answer", action="answer",
                        detail=rationale or "the reader answered without a rule path")
