"""Support and confidence of a rule head(X,Y) ⇐ body path, computed from the pack's triples.

Definition (docs/packs.md): B = distinct (X, Y), X ≠ Y, joined by a path following the body
(`~r` walks an r edge backwards); support = |{(X, Y) ∈ B : head(X, Y)}|; confidence = support / |B|.
Counted start by start (B is never held: on a KG with hubs it has entities² pairs) within a time
limit per rule (issue 15); a count the limit cuts says so in `stopped` and has no confidence.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from engine.graph.kg import KnowledgeGraph
from engine.rules.walk import TIME_LIMIT_S, Deadline, walk_body


@dataclass(frozen=True)
class RuleStatistics:
    body_pairs: int
    support: int
    confidence: float
    stopped: str = ""  # '' when every entity was walked; else why the counts above are partial


def rule_statistics(kg: KnowledgeGraph, head: str, body: Sequence[str],
                    seconds: float = TIME_LIMIT_S) -> RuleStatistics:
    deadline = Deadline.after(seconds)
    follow = functools.lru_cache(maxsize=None)(kg.follow)  # every start walks through the same hubs
    pairs = support = 0
    starts = list(kg.graph.nodes)
    for done, start in enumerate(starts):
        walk = walk_body(follow, start, body, deadline)
        if walk.stopped:
            return RuleStatistics(pairs, support, 0.0, f"{deadline.message()} with {done:,} of {len(starts):,} "
                                                       "entities walked; the counts are partial")
        if walk.counts:
            pairs += len(walk.counts)
            support += len(walk.counts.keys() & set(follow(start, head)))
    confidence = round(support / pairs, 3) if pairs else 0.0
    return RuleStatistics(body_pairs=pairs, support=support, confidence=confidence)
