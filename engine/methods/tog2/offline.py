"""ToG-2's offline twins: no weights, the bundled MiniLM encoder, the pack's KG and the extractive reader.

Relation pruning's per-entity cut (`keep_top`), the lexical relation scores and the fallback query are the
offline core the LLM twins fall back to.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace

from engine.graph.kg import KnowledgeGraph
from engine.graph.linking import EntityLink
from engine.knowledge.records import Triple
from engine.methods.tog2.exploration import verbalize
from engine.methods.tog2.tools import Reasoning, Reformulation, RelationChoice, RelationScore, TopicChoice
from engine.retrieval.embedder import Embedder
from engine.rules.text import relation_label
from engine.text import alnum_words
from engine.tools.base import IDK, QuestionClassifier, Reader, Reading, echoes_question
from engine.trace import Hit

PER_ENTITY_FLOOR = 2.0  # spec §2.2.2 [code]: per-entity mode keeps score >= 0.2 on 0..1, i.e. 2 on 0..10
HUB_DEGREE = 50  # offline topic prune: an entity with more facts than this is a hub ('physics')


@dataclass(frozen=True)
class OfflineTopicPruner:
    """Link score + MiniLM similarity of the name to the question, hubs discounted; the best `width` stay."""

    embedder: Embedder
    kg: KnowledgeGraph

    def prune(self, question: str, links: Sequence[EntityLink], width: int) -> TopicChoice:
        if not links:
            return TopicChoice(())
        names = [link.entity for link in links]
        sims = self.embedder.encode(names) @ self.embedder.encode_queries([question])[0]  # (n,)
        scores = {}
        for link, sim in zip(links, sims):
            degree = self.kg.graph.degree(link.entity) if link.entity in self.kg.graph else 0
            hub = 0.8 if degree > HUB_DEGREE else 1.0
            scores[link.entity] = round(hub * (0.5 * link.score + 0.5 * max(float(sim), 0.0)), 4)
        ranked = sorted(names, key=lambda n: -scores[n])
        return TopicChoice(tuple(ranked[:width]), tuple((n, scores[n]) for n in ranked))


@dataclass(frozen=True)
class OfflineRelationPruner:
    """Heuristic RP (spec §7): MiniLM cosine of the question to the relation label, plus the path so far.

    score = 10 · max(0, 0.8·cos(q, label) + 0.2·cos(q, path)), label = 'born in' or 'is born in of' for an
    incoming relation, path = the verbalised triples that reached the entity (its name at depth 1). Labels
    and paths recur across questions, so they go through the encoder's query cache.
    """

    embedder: Embedder

    def prune(self, question: str, clue: str, paths: Mapping[str, str], relations: Mapping[str, Sequence[str]],
              width: int, mode: str) -> RelationChoice:
        rows = [(e, r) for e, rels in relations.items() for r in rels]
        if not rows:
            return RelationChoice(())
        labels = [_label(r) for _, r in rows]
        walked = [paths.get(e) or e for e, _ in rows]
        vectors = self.embedder.encode_queries([question, *labels, *walked])  # (1 + 2n, d)
        query, n = vectors[0], len(rows)
        sims = 0.8 * (vectors[1:1 + n] @ query) + 0.2 * (vectors[1 + n:] @ query)  # (n,)
        scores = [RelationScore(e, r, round(10 * max(float(s), 0.0), 2), "heuristic RP: cosine to the question")
                  for (e, r), s in zip(rows, sims)]
        return RelationChoice(keep_top(scores, width, PER_ENTITY_FLOOR if mode == "per-entity" else 0.0))


def _label(relation: str) -> str:
    words = relation_label(relation)
    return f"is {words} of" if relation.startswith("~") else words


def lexical_relation_scores(question: str, relations: Mapping[str, Sequence[str]]) -> list[RelationScore]:
    """The fallback ranking: share of a relation's words that occur in the question, on 0..10."""
    words = set(alnum_words(question))
    scores = []
    for entity, rels in relations.items():
        for r in rels:
            own = set(alnum_words(relation_label(r)))
            share = len(own & words) / len(own) if own else 0.0
            scores.append(RelationScore(entity, r, round(10 * share, 2), "fallback: word overlap"))
    return scores


def keep_top(scores: Sequence[RelationScore], width: int, floor: float) -> tuple[RelationScore, ...]:
    """Mark the best `width` relations per entity with score >= floor as kept; all scores stay visible."""
    kept: set[tuple[str, str]] = set()
    by_entity: dict[str, list[RelationScore]] = {}
    for s in scores:
        by_entity.setdefault(s.entity, []).append(s)
    for group in by_entity.values():
        ranked = sorted(group, key=lambda s: -s.score)
        kept |= {(s.entity, s.relation) for s in ranked[:width] if s.score >= floor}
    ordered = sorted(scores, key=lambda s: (list(by_entity).index(s.entity), -s.score))
    return tuple(replace(s, kept=(s.entity, s.relation) in kept) for s in ordered)


@dataclass(frozen=True)
class OfflineReasoner:
    """The extractive reader over the triples (as facts) and the best chunks; sufficient above a threshold."""

    reader: Reader
    sufficiency: float
    classifier: QuestionClassifier | None = None

    def reason(self, question: str, facts: Sequence[Triple], evidence: Sequence[Hit], clue: str,
               final: bool) -> Reasoning:
        reading = self.reader.read(question, evidence, facts)
        echoed = not reading.refused and echoes_question(question, reading.answer, self.classifier)
        sufficient = not reading.refused and not echoed and (final or reading.confidence >= self.sufficiency)
        if sufficient:
            return Reasoning(True, reading, steps=reading.steps)
        if final:  # a best-effort answer that only echoes the question is no answer
            reading = Reading(IDK, refused=True, rationale=f"no answer beyond the question itself; {reading.rationale}",
                              steps=reading.steps)
        guess = f"; best guess so far {reading.answer!r} ({reading.confidence:.2f})" if not reading.refused else ""
        known = "; ".join(verbalize(t.head, t.relation, t.tail) for t in list(facts)[-3:])
        return Reasoning(False, reading, clue=(known + guess).strip("; "), steps=reading.steps)


@dataclass(frozen=True)
class OfflineQueryReformer:
    """No model: the next query is the question plus the clue (what the scoring used before re-formulation)."""

    def reform(self, question: str, clue: str, facts: Sequence[Triple]) -> Reformulation:
        return Reformulation(fallback_query(question, clue), "offline: the clue as the missing evidence")


def fallback_query(question: str, clue: str) -> str:
    return f"{question} {clue}".strip() if clue else question
