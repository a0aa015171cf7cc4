"""Symbolic rule application: walk matched rule bodies from the question's entity (RuleRAG spec §7).

For a query (s, head, ?) and each matched rule `head ⇐ body`, the body path is followed from s in
the KG; every path end is a candidate. A candidate's score is Σ over rules of
`confidence × paths × exp((similarity − best similarity) / τ)` [decide]: the paper's symbolic
answerer sums confidence × count, but on the demo pack two rules with the same head disagree
("citizen by birth" vs "at death") and the higher-confidence one would always win; the match
weight lets the rule the question is about lead (τ = 0.05: a rule 0.08 behind weighs ~5× less).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from engine.graph.kg import KnowledgeGraph
from engine.rules.matching import ScoredRule

VOTE_TEMPERATURE = 0.05


@dataclass(frozen=True)
class RulePath:
    rule_id: str
    entities: tuple[str, ...]  # start, intermediates, end


@dataclass(frozen=True)
class Candidate:
    answer: str
    score: float
    rule_id: str  # the rule that contributed most to the score
    paths: tuple[RulePath, ...]


def follow_body(kg: KnowledgeGraph, start: str, body: Sequence[str]) -> list[tuple[str, ...]]:
    """Every path from `start` along `body` (`~r` backwards), ending elsewhere than `start`."""
    paths: list[tuple[str, ...]] = [(start,)]
    for relation in body:
        paths = [p + (nxt,) for p in paths for nxt in kg.follow(p[-1], relation)]
        if not paths:
            return []
    return [p for p in paths if p[-1] != start]


def apply_rules(kg: KnowledgeGraph, entity: str, rules: Sequence[ScoredRule],
                temperature: float = VOTE_TEMPERATURE) -> tuple[Candidate, ...]:
    """Candidates from walking each rule's body from `entity`, best first (ties by name)."""
    if not rules:
        return ()
    best = max(s.similarity for s in rules)
    votes: dict[str, dict[str, float]] = {}
    paths: dict[str, list[RulePath]] = {}
    for scored in rules:
        weight = scored.rule.confidence * math.exp((scored.similarity - best) / max(temperature, 1e-6))
        for path in follow_body(kg, entity, scored.rule.body):
            end = path[-1]
            votes.setdefault(end, {}).setdefault(scored.rule.id, 0.0)
            votes[end][scored.rule.id] += weight
            paths.setdefault(end, []).append(RulePath(scored.rule.id, path))
    candidates = [
        Candidate(end, sum(by_rule.values()), max(by_rule, key=lambda r: (by_rule[r], r)), tuple(paths[end]))
        for end, by_rule in votes.items()
    ]
    candidates.sort(key=lambda c: (-c.score, c.answer))
    return tuple(candidates)
