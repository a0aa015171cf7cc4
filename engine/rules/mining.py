"""Closed-path Horn rule mining over a pack's KG (AMIE-style; RuleRAG spec §3 "Miners").

A rule is `head(X, Y) ⇐ X –b1→ Z –b2→ Y` with a body of one or two relations; `~r` walks an r
edge backwards, so inverse edges are mined too. Heads are forward relations; the trivial rule
`r(X, Y) ⇐ r(X, Y)` is skipped. Statistics (X ≠ Y throughout, as in `statistics.rule_statistics`):

- body pairs B = distinct (X, Y) joined by the body path;
- support = |{(X, Y) ∈ B : head(X, Y)}|;
- standard confidence = support / |B| (equals `rule_statistics` for the same rule);
- head coverage = support / |{(X, Y) : head(X, Y), X ≠ Y}|;
- PCA confidence = support / |{(X, Y) ∈ B : X has some head fact}| (AMIE's partial completeness).

Temporal packs [decide]: the pack's own support/confidence (docs/packs.md) ignore time, and so do
ours, so mined rules stay comparable with `rules.jsonl`. With `temporal=True` a rule additionally
gets `temporal_support`: the head facts that have a body grounding none of whose timed facts is
later than the head fact (TLogic's "premises precede the conclusion"); a fact without a time
constrains nothing. Facts stated several times use the earliest body time and the latest head time
(the most permissive grounding). Times compare as strings, which orders ISO dates and years.
`temporal_confidence` = temporal_support / |B|; with `temporal=True` the thresholds apply to the
temporal figures. On the demo pack (times only on awards and discoveries) only r14 changes:
support 13 → temporal support 9 (advisors whose prize came after their student's).

Bounded (issue 15): B is counted start by start and never held (a hub makes it entities² pairs), and
the whole mining has `max_seconds`; when they run out it fails with a message rather than leave rules
out unseen.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.errors import RagscopeError
from engine.files import write_text_atomic
from engine.knowledge.records import Rule, Triple
from engine.rules.walk import Deadline

Progress = Callable[[int, int], None]  # (done, total) body paths examined
# relation -> start -> end -> time ("" = untimed); one map per direction
Adjacency = dict[str, dict[str, dict[str, str]]]
Pair = tuple[str, str]


@dataclass(frozen=True)
class MiningConfig:
    min_support: int = 3
    min_confidence: float = 0.3
    min_head_coverage: float = 0.0
    max_rules: int = 500
    max_length: int = 2
    temporal: bool = False
    max_seconds: float = 120.0  # issue 15: a KG with hubs has entities² body pairs; walking them is bounded


@dataclass
class _BodyCounts:
    """One body's figures, filled start by start: |B|, and per head its support, PCA pairs and supported pairs."""

    body_pairs: int = 0
    support: dict[str, int] = field(default_factory=dict)
    pca_body_pairs: dict[str, int] = field(default_factory=dict)
    supported: dict[str, list[Pair]] = field(default_factory=dict)


@dataclass(frozen=True)
class MinedRule:
    """One mined rule and its statistics; `to_rule` gives the pack's `Rule` record."""

    head: str
    body: tuple[str, ...]
    support: int
    body_pairs: int
    head_pairs: int
    pca_body_pairs: int
    temporal_support: int | None = None

    @property
    def confidence(self) -> float:
        return round(self.support / self.body_pairs, 3) if self.body_pairs else 0.0

    @property
    def head_coverage(self) -> float:
        return round(self.support / self.head_pairs, 3) if self.head_pairs else 0.0

    @property
    def pca_confidence(self) -> float:
        return round(self.support / self.pca_body_pairs, 3) if self.pca_body_pairs else 0.0

    @property
    def temporal_confidence(self) -> float | None:
        if self.temporal_support is None:
            return None
        return round(self.temporal_support / self.body_pairs, 3) if self.body_pairs else 0.0

    def to_rule(self, rule_id: str, text: str = "") -> Rule:
        return Rule(id=rule_id, head=self.head, body=self.body, confidence=self.confidence,
                    support=self.support, text=text)

    def to_dict(self) -> dict[str, Any]:
        data = {"head": self.head, "body": list(self.body), "support": self.support,
                "body_pairs": self.body_pairs, "head_pairs": self.head_pairs,
                "pca_body_pairs": self.pca_body_pairs, "confidence": self.confidence,
                "head_coverage": self.head_coverage, "pca_confidence": self.pca_confidence}
        if self.temporal_support is not None:
            data |= {"temporal_support": self.temporal_support, "temporal_confidence": self.temporal_confidence}
        return data

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> MinedRule:
        temporal = data.get("temporal_support")
        return cls(head=str(data["head"]), body=tuple(str(r) for r in data["body"]),
                   support=int(data["support"]), body_pairs=int(data["body_pairs"]),
                   head_pairs=int(data["head_pairs"]), pca_body_pairs=int(data["pca_body_pairs"]),
                   temporal_support=None if temporal is None else int(temporal))


def mine_rules(triples: Sequence[Triple], config: MiningConfig = MiningConfig(),
               progress: Progress | None = None) -> tuple[MinedRule, ...]:
    """Every rule with a body of length ≤ `max_length` that passes the thresholds, best first.

    Raises RagscopeError when `config.max_seconds` run out: a partial mining would leave rules out unseen.
    """
    adjacency = _adjacency(triples)
    latest = _latest_head_times(triples) if config.temporal else {}
    relations = sorted({t.relation for t in triples})
    head_tails = _head_tails(adjacency, relations)
    heads = dict.fromkeys(relations, 0)  # head -> |{(X, Y) : head(X, Y), X ≠ Y}|
    for by_head in head_tails.values():
        for head, tails in by_head.items():
            heads[head] += len(tails)
    bodies = _bodies(sorted(adjacency), config.max_length)
    deadline = Deadline.after(config.max_seconds)
    found: list[MinedRule] = []
    for done, body in enumerate(bodies, start=1):
        counts = _body_counts(adjacency, body, head_tails, config.temporal, deadline)
        if counts is None:
            raise RagscopeError(f"rule mining {deadline.message()} with {done - 1:,} of {len(bodies):,} rule "
                                "bodies walked; mine a pack with fewer triples or raise MiningConfig.max_seconds")
        for head, head_pairs in heads.items() if counts.body_pairs else ():
            support = counts.support.get(head, 0)
            if body == (head,) or support < config.min_support:
                continue
            rule = MinedRule(
                head=head, body=body, support=support, body_pairs=counts.body_pairs, head_pairs=head_pairs,
                pca_body_pairs=counts.pca_body_pairs.get(head, 0),
                temporal_support=_temporal_support(adjacency, latest, head, body, counts.supported.get(head, []))
                if config.temporal else None,
            )
            if _passes(rule, config):
                found.append(rule)
        if progress is not None:
            progress(done, len(bodies))
    found.sort(key=lambda r: (-r.confidence, -r.support, r.head, r.body))
    return tuple(found[: config.max_rules])


def mined_pack_rules(mined: Iterable[MinedRule], text: Callable[[MinedRule], str] | None = None) -> tuple[Rule, ...]:
    """Mined rules as pack `Rule`s with ids m001, m002, … in the given order."""
    return tuple(r.to_rule(f"m{n:03d}", text(r) if text else "") for n, r in enumerate(mined, start=1))


def mined_rows(mined: Sequence[MinedRule]) -> list[dict[str, Any]]:
    """Table rows for the Knowledge page: id, readable rule and every statistic."""
    from engine.rules.text import rule_text

    rows = []
    for rule, record in zip(mined_pack_rules(mined), mined, strict=True):
        stats = {k: v for k, v in record.to_dict().items() if k not in ("head", "body")}
        rows.append({"id": rule.id, "rule": rule_text(rule.head, rule.body), **stats})
    return rows


def write_mined_rules(mined: Sequence[MinedRule], path: Path) -> None:
    """rules.jsonl in the pack format, each line also carrying the mining statistics."""
    from engine.rules.text import rule_sentence

    lines = []
    for rule, record in zip(mined_pack_rules(mined), mined, strict=True):
        text = rule_sentence(rule)
        lines.append(json.dumps({"id": rule.id, "head": rule.head, "body": list(rule.body),
                                 "confidence": rule.confidence, "support": rule.support, "text": text,
                                 "miner": "ragscope", **record.to_dict()}, ensure_ascii=False))
    path.parent.mkdir(parents=True, exist_ok=True)
    write_text_atomic(path, "\n".join(lines) + ("\n" if lines else ""))


def _passes(rule: MinedRule, config: MiningConfig) -> bool:
    support = rule.temporal_support if config.temporal else rule.support
    confidence = rule.temporal_confidence if config.temporal else rule.confidence
    return (support >= config.min_support and confidence >= config.min_confidence
            and rule.head_coverage >= config.min_head_coverage)


# ---- graph walking ------------------------------------------------------------------------------


def _adjacency(triples: Sequence[Triple]) -> Adjacency:
    """Forward and `~` maps; several copies of one edge keep the earliest time ('' if any is untimed)."""
    adjacency: Adjacency = defaultdict(lambda: defaultdict(dict))
    for t in triples:
        for rel, start, end in ((t.relation, t.head, t.tail), ("~" + t.relation, t.tail, t.head)):
            ends = adjacency[rel][start]
            ends[end] = _earliest(ends[end], t.time) if end in ends else t.time
    return adjacency


def _earliest(a: str, b: str) -> str:
    return "" if not a or not b else min(a, b)


def _bodies(relations: Sequence[str], max_length: int) -> list[tuple[str, ...]]:
    bodies: list[tuple[str, ...]] = [(r,) for r in relations]
    if max_length >= 2:
        bodies += [(a, b) for a in relations for b in relations]
    return bodies


def _head_tails(adjacency: Adjacency, heads: Iterable[str]) -> dict[str, dict[str, set[str]]]:
    """x -> head -> {y ≠ x : head(x, y)}: what a body pair starting at x is checked against."""
    tails: dict[str, dict[str, set[str]]] = defaultdict(dict)
    for head in heads:
        for x, ends in adjacency[head].items():
            ys = {y for y in ends if y != x}
            if ys:
                tails[x][head] = ys
    return tails


def _body_counts(adjacency: Adjacency, body: tuple[str, ...], head_tails: dict[str, dict[str, set[str]]],
                 keep_supported: bool, deadline: Deadline) -> _BodyCounts | None:
    """The body's pair counts, start by start (B itself is never held); None when the deadline passed."""
    counts = _BodyCounts()
    first = adjacency[body[0]]
    second = adjacency[body[1]] if len(body) > 1 else None
    for x, mids in first.items():
        if deadline.passed():
            return None
        ends = set(mids) if second is None else {y for z in mids for y in second.get(z, ())}
        ends.discard(x)
        counts.body_pairs += len(ends)
        for head, tails in head_tails.get(x, {}).items() if ends else ():
            supported = ends & tails
            counts.support[head] = counts.support.get(head, 0) + len(supported)
            counts.pca_body_pairs[head] = counts.pca_body_pairs.get(head, 0) + len(ends)
            if keep_supported:
                counts.supported.setdefault(head, []).extend((x, y) for y in supported)
    return counts


def _latest_head_times(triples: Sequence[Triple]) -> dict[tuple[str, str, str], str]:
    """(relation, head, tail) -> latest time, '' when any copy is untimed: the most permissive head."""
    latest: dict[tuple[str, str, str], str] = {}
    for t in triples:
        key = (t.relation, t.head, t.tail)
        latest[key] = ("" if not t.time or not latest[key] else max(latest[key], t.time)) if key in latest else t.time
    return latest


def _temporal_support(adjacency: Adjacency, latest: dict[tuple[str, str, str], str], head: str,
                      body: tuple[str, ...], supported: Iterable[Pair]) -> int:
    return sum(1 for x, y in supported if _grounded_in_time(adjacency, body, x, y, latest[(head, x, y)]))


def _grounded_in_time(adjacency: Adjacency, body: tuple[str, ...], x: str, y: str, limit: str) -> bool:
    if not limit:
        return True
    first = adjacency[body[0]][x]
    if len(body) == 1:
        return _not_after(first.get(y, ""), limit)
    second = adjacency[body[1]]
    return any(_not_after(t1, limit) and _not_after(second[z][y], limit)
               for z, t1 in first.items() if y in second.get(z, ()))


def _not_after(time: str, limit: str) -> bool:
    return not time or time <= limit
