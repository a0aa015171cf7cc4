"""Rules as text: the paper's bracketed form, a plain sentence, and relation labels (RuleRAG §3).

`rule_text` writes `[X, born in, Z] and [Z, located in, Y] leads to [X, citizen of, Y]` — the
spec's `[Entity1, r1, Entity2] leads to [Entity1, r2, Entity2]` generalised to two-hop bodies
with variables X, Z, Y [decide: single letters, relation names with spaces so an encoder reads
words]. A backwards step `~r` swaps its arguments: `[Z, child, X]`.
"""

from __future__ import annotations

from collections.abc import Sequence

from engine.knowledge.records import Rule

RULE_QUERY_FORMS = ("brackets", "sentence")
_NUMBER_WORDS = ("One", "Two", "Three", "Four", "Five", "Six", "Seven", "Eight", "Nine", "Ten")


def relation_label(relation: str) -> str:
    """`doctoral_advisor` → `doctoral advisor`; a leading `~` is dropped (direction is the caller's)."""
    return relation.lstrip("~").replace("_", " ").strip()


def body_variables(length: int) -> list[str]:
    """X, then Z (or Z1, Z2, … for longer bodies), then Y."""
    middle = ["Z"] if length == 2 else [f"Z{i}" for i in range(1, length)]
    return ["X", *middle, "Y"]


def atom(subject: str, relation: str, obj: str) -> str:
    if relation.startswith("~"):
        subject, obj = obj, subject
    return f"[{subject}, {relation_label(relation)}, {obj}]"


def rule_text(head: str, body: Sequence[str]) -> str:
    """The paper's verbalisation: body atoms joined by 'and', then 'leads to' the head atom."""
    names = body_variables(len(body))
    atoms = [atom(names[i], relation, names[i + 1]) for i, relation in enumerate(body)]
    return f"{' and '.join(atoms)} leads to {atom('X', head, 'Y')}"


def rule_sentence(rule: Rule) -> str:
    """The rule's own `text` when it has one, else a plain 'If … then …' sentence."""
    if rule.text.strip():
        return rule.text.strip()
    names = body_variables(len(rule.body))
    premises = [_clause(names[i], relation, names[i + 1]) for i, relation in enumerate(rule.body)]
    return f"If {' and '.join(premises)}, then {_clause('X', rule.head, 'Y')}."


def rule_query(rule: Rule, form: str = "brackets") -> str:
    """The rule as RuleRAG appends it to the question for retrieval (spec §2: q ∘ r, one space [decide]).

    brackets (default) is the paper's `[X, r1, Z] … leads to [X, r, Y]`; sentence is `rule_sentence`.
    """
    return rule_sentence(rule) if form == "sentence" else rule_text(rule.head, rule.body)


def _clause(subject: str, relation: str, obj: str) -> str:
    if relation.startswith("~"):
        subject, obj = obj, subject
    return f"{subject} {relation_label(relation)} {obj}"


def number_word(n: int) -> str:
    """1 → One … 10 → Ten, then digits: the prompt's 'Rule One: … Rule Two: …' (spec §2)."""
    return _NUMBER_WORDS[n - 1] if 1 <= n <= len(_NUMBER_WORDS) else str(n)
