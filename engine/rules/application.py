"""Symbolic rule application: walk matched rule bodies from the question's entity (RuleRAG spec §7).

For a query (s, head, ?) and each matched rule `head ⇐ body`, the body path is followed from s in
the KG; every path end is a candidate. A candidate's score is Σ over rules of
`confidence × paths × exp((similarity − best similarity) / τ)` [decide]: the paper's symbolic
answerer sums confidence × count, but on the demo pack two rules with the same head disagree
("citizen by birth" vs "at death") and the higher-confidence one would always win; the match
weight lets the rule the question is about lead (τ = 0.05: a rule 0.08 behind weighs ~5× less).

Bounded (issue 15): paths are counted, not enumerated (engine/rules/walk.py); one application has
`TIME_LIMIT_S` for all its rules, and a rule whose walk the limit cuts adds no candidate; one rule
counts at most `MAX_PATHS` paths towards one answer. Each cut is a line of the result's `notes`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from engine.graph.kg import KnowledgeGraph
from engine.rules.matching import ScoredRule
from engine.rules.walk import TIME_LIMIT_S, Deadline, walk_body

VOTE_TEMPERATURE = 0.05
MAX_PATHS = 10_000  # paths one rule counts towards one answer; keeps every score a finite float


@dataclass(frozen=True)
class RulePath:
    rule_id: str
    entities: tuple[str, ...]  # start, intermediates, end


@dataclass(frozen=True)
class Candidate:
    answer: str
    score: float
    rule_id: str  # the rule that contributed most to the score
    paths: tuple[RulePath, ...]  # per rule that reaches the answer, its first path (in KG order)


@dataclass(frozen=True)
class RuleApplication:
    """The candidates, best first (ties by name), and every way the bounds cut the application."""

    candidates: tuple[Candidate, ...]
    notes: tuple[str, ...] = ()


def follow_body(kg: KnowledgeGraph, start: str, body: Sequence[str],
                seconds: float = TIME_LIMIT_S) -> list[tuple[str, ...]]:
    """The first path from `start` to each end of `body` (`~r` backwards, never back at `start`);
    [] when the time limit cuts the walk."""
    walk = walk_body(kg.follow, start, body, Deadline.after(seconds))
    return [walk.path(end) for end in walk.counts]


def apply_rules(kg: KnowledgeGraph, entity: str, rules: Sequence[ScoredRule],
                temperature: float = VOTE_TEMPERATURE, seconds: float = TIME_LIMIT_S) -> RuleApplication:
    """Candidates from walking each rule's body from `entity` within `seconds` for all rules together."""
    if not rules:
        return RuleApplication(())
    best = max(s.similarity for s in rules)
    deadline = Deadline.after(seconds)
    votes: dict[str, dict[str, float]] = {}
    paths: dict[str, list[RulePath]] = {}
    notes: list[str] = []
    for scored in rules:
        rule = scored.rule
        walk = walk_body(kg.follow, entity, rule.body, deadline)
        if walk.stopped:
            notes.append(f"rule {rule.id}: {walk.stopped}; it adds no candidate")
            continue
        weight = rule.confidence * math.exp((scored.similarity - best) / max(temperature, 1e-6))
        capped = [end for end, count in walk.counts.items() if count > MAX_PATHS]
        if capped:
            notes.append(f"rule {rule.id}: more than {MAX_PATHS:,} paths reach {len(capped)} of its "
                         f"{len(walk.counts)} answers (first {capped[0]!r}); {MAX_PATHS:,} counted for each")
        for end, count in walk.counts.items():
            by_rule = votes.setdefault(end, {})
            by_rule[rule.id] = by_rule.get(rule.id, 0.0) + weight * min(count, MAX_PATHS)
            paths.setdefault(end, []).append(RulePath(rule.id, walk.path(end)))
    candidates = [
        Candidate(end, sum(by_rule.values()), max(by_rule, key=lambda r: by_rule[r]), tuple(paths[end]))
        for end, by_rule in votes.items()
    ]
    candidates.sort(key=lambda c: -c.score)  # ties keep the KG walk's order: a name's spelling decides nothing
    return RuleApplication(tuple(candidates), tuple(notes))
