"""A pack's rules as readable rows, and their stored statistics beside values recomputed from the KG."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from engine.graph.kg import KnowledgeGraph
from engine.knowledge.records import Rule
from engine.rules.statistics import rule_statistics
from engine.rules.text import body_variables
from engine.rules.walk import TIME_LIMIT_S


def rule_formula(rule: Rule) -> str:
    """`head(X, Y) ⇐ r1(X, Z) ∧ r2(Z, Y)` (the variables of the rule's text); a backwards step `~r` swaps
    its arguments."""
    variables = body_variables(len(rule.body))
    atoms = []
    for step, relation in enumerate(rule.body):
        left, right = variables[step], variables[step + 1]
        if relation.startswith("~"):
            atoms.append(f"{relation[1:]}({right}, {left})")
        else:
            atoms.append(f"{relation}({left}, {right})")
    return f"{rule.head}(X, Y) ⇐ {' ∧ '.join(atoms) or 'true'}"


def rule_rows(rules: Sequence[Rule]) -> list[dict[str, Any]]:
    return [{"id": r.id, "rule": rule_formula(r), "text": r.describe(), "support": r.support,
             "confidence": r.confidence} for r in rules]


def statistics_rows(kg: KnowledgeGraph, rules: Sequence[Rule],
                    seconds: float = TIME_LIMIT_S) -> list[dict[str, Any]]:
    """Stored support/confidence next to what the pack's triples give today; `matches` flags drift, `note` a
    recount the time limit cut short."""
    rows = []
    for rule in rules:
        stats = rule_statistics(kg, rule.head, rule.body, seconds)
        rows.append({
            "id": rule.id, "rule": rule_formula(rule), "body pairs": stats.body_pairs,
            "stored support": rule.support, "support": stats.support,
            "stored confidence": rule.confidence, "confidence": stats.confidence,
            # Confidence is stored rounded (docs/packs.md): compare at that precision.
            "matches": not stats.stopped and stats.support == rule.support
            and abs(stats.confidence - rule.confidence) < 0.0015,
            "note": stats.stopped,
        })
    return rows
