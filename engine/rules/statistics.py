"""Support and confidence of a rule head(X,Y) ⇐ body path, computed from the pack's triples.

Definition (docs/packs.md): B = distinct (X, Y), X ≠ Y, joined by a path following the body
(`~r` walks an r edge backwards); support = |{(X, Y) ∈ B : head(X, Y)}|; confidence = support / |B|.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.graph.kg import KnowledgeGraph


@dataclass(frozen=True)
class RuleStatistics:
    body_pairs: int
    support: int
    confidence: float


def body_pairs(kg: KnowledgeGraph, body: Sequence[str]) -> set[tuple[str, str]]:
    pairs = set()
    for start in kg.graph.nodes:
        frontier = {start}
        for relation in body:
            frontier = {nxt for node in frontier for nxt in kg.follow(node, relation)}
            if not frontier:
                break
        pairs.update((start, end) for end in frontier if end != start)
    return pairs


def rule_statistics(kg: KnowledgeGraph, head: str, body: Sequence[str]) -> RuleStatistics:
    pairs = body_pairs(kg, body)
    support = sum(1 for x, y in pairs if y in kg.follow(x, head))
    confidence = round(support / len(pairs), 3) if pairs else 0.0
    return RuleStatistics(body_pairs=len(pairs), support=support, confidence=confidence)
