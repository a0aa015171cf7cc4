"""Matched rules as cards, most similar first: the rule's path, its text, and its strength as small bars."""

from __future__ import annotations

import streamlit as st

from components.safe import md_text
from engine.trace import RuleMatch, RulesMatchedStep


def relation_text(relation: str) -> str:
    """`~rel` walks an edge backwards (DESIGN §5): shown in words so non-engineers can read it."""
    return f"(inverse) {relation[1:]}" if relation.startswith("~") else relation


def rule_path(rule: RuleMatch) -> str:
    """`head ⇐ r1 → (inverse) r2`, as plain text."""
    body = " → ".join(relation_text(r) for r in rule.body) or "(empty body)"
    return f"{rule.head} ⇐ {body}"


def _unit(value: float) -> float:
    return min(max(float(value), 0.0), 1.0)


def _rule_card(rule: RuleMatch, *, key: str) -> None:
    with st.container(border=True, key=key):
        st.markdown(f"**{md_text(rule.id)}** · {md_text(rule_path(rule))}")
        if rule.text:
            st.caption(md_text(rule.text))
        similarity, confidence, support = st.columns([2, 2, 1], vertical_alignment="center")
        similarity.progress(_unit(rule.similarity), text=f"similarity {rule.similarity:.2f}")
        confidence.progress(_unit(rule.confidence), text=f"confidence {rule.confidence:.2f}")
        support.caption(f"support {rule.support:,}")


def render_rules_matched(step: RulesMatchedStep, *, key: str) -> None:
    if step.title:
        st.markdown(f"**{md_text(step.title)}** · {len(step.rules)} rule{'s' if len(step.rules) != 1 else ''}")
    if not step.rules:
        st.caption("No rule matched the question.")
        return
    ranked = sorted(step.rules, key=lambda r: r.similarity, reverse=True)
    for i, rule in enumerate(ranked):
        _rule_card(rule, key=f"{key}.rule{i}")
