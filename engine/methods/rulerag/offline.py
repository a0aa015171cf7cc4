"""RuleRAG's offline rule reader: the matched rules applied symbolically over the KG (engine.rules.application).

`OfflineRuleReader` applies the matched rules from the question's entity, cites the retrieved chunks that
state a fact of the winning path, and falls back to the extractive reader when no rule yields a candidate.
`citing` and `refusal` are shared with the LLM twin.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.graph.kg import KnowledgeGraph
from engine.methods.rulerag.tools import RuleReading
from engine.rules.application import RuleApplication, RulePath, apply_rules
from engine.rules.matching import ScoredRule
from engine.tools.base import IDK, Reader, Reading
from engine.tools.llm_call import error_step
from engine.trace import Hit, Step


@dataclass(frozen=True)
class OfflineRuleReader:
    """Symbolic rule application over the KG; the extractive `fallback` reader when no rule applies."""

    kg: KnowledgeGraph
    fallback: Reader

    def read(self, question: str, evidence: Sequence[Hit], rules: Sequence[ScoredRule]) -> RuleReading:
        hits = tuple(evidence or ())
        try:
            found = self._apply(str(question or ""), rules)
        except Exception as exc:  # noqa: BLE001 — the tool contract: never raise, report in the trace
            found = RuleApplication((), (f"rule application failed: {exc}",))
        # a walk the time limit cut, or a path count the cap bounded, is said in the trace (issue 15)
        bounds = tuple(error_step("rule reader", note) for note in found.notes)
        if not found.candidates:
            reading = self.fallback.read(question, hits)
            return RuleReading(Reading(reading.answer, reading.citations, reading.confidence, reading.refused,
                                       f"no matched rule applies; extractive reading: {reading.rationale}",
                                       bounds + reading.steps))
        best, total = found.candidates[0], sum(c.score for c in found.candidates)
        path = next(p for p in best.paths if p.rule_id == best.rule_id)
        rationale = f"rule {best.rule_id}: " + " → ".join(path.entities)
        reading = Reading(best.answer, citing(hits, best.answer, path), round(best.score / total, 3),
                          rationale=rationale, steps=bounds)
        return RuleReading(reading, best.rule_id, path.entities)

    def _apply(self, question: str, rules: Sequence[ScoredRule]) -> RuleApplication:
        """The candidates from the first linked entity any rule applies to, with every entity's notes."""
        notes: tuple[str, ...] = ()
        for entity in self.kg.find_entities(question):
            application = apply_rules(self.kg, entity, rules)
            notes += application.notes
            if application.candidates:
                return RuleApplication(application.candidates, notes)
        return RuleApplication((), notes)


def citing(hits: tuple[Hit, ...], answer: str, path: RulePath | None) -> tuple[str, ...]:
    """Docs stating a fact of the path (both of its entities named), else docs naming the answer."""
    def names(hit: Hit, entity: str) -> bool:
        return entity.casefold() in f"{hit.title} {hit.text}".casefold()

    if path is not None:
        edges = list(zip(path.entities, path.entities[1:]))
        cited = [h.doc_id for h in hits if any(names(h, a) and names(h, b) for a, b in edges)]
        if cited:
            return tuple(dict.fromkeys(cited))
    cited = [h.doc_id for h in hits if names(h, answer)]
    return tuple(dict.fromkeys(cited))


def refusal(steps: tuple[Step, ...], reason: str) -> Reading:
    """"I don't know", with the reason and the steps that led there."""
    return Reading(IDK, refused=True, confidence=0.0, rationale=reason, steps=steps)
