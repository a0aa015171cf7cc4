"""ToG-2 exploration: relation and entity discovery, entity documents, chunk scoring, Eq. 6 entity scores.

Pure graph and embedding work with no language model (spec §2.2 steps 1, 3, 4, 5 and §7). Decisions
taken here ([decide] items of the spec, numbered as in its §8):
- 1: the DRM input is the chunk plus the verbalised triple "head relation tail" (the candidate included),
  approximated as 0.7·cos(q, chunk) + 0.3·cos(q, triple): chunk vectors are cached per process, so only
  the short triple sentences are embedded per run (spec §7 allows the approximation; noted here).
- 2: the chunk is the pack's chunk (whole sentences, <= 120 words), for scoring and for reading.
- 3: MiniLM cosines lie in [-1, 1]; negatives are clipped to 0 before Eq. 6, so it stays monotone.
- 4: one global top-K across all candidates; a candidate outside it scores 0 and is not kept.
- 5: candidates are deduplicated by name; the first (best-scored relation) path that reaches one is kept.
- 11: no revisits: entities already explored are never candidates again (cycles end there).
- 12: more than `per_relation` tails are pre-ranked deterministically (word overlap with the
  question, then a sha256 of the name), never randomly sampled.
- 16: an entity's documents are those titled with its name; only when none is, those whose
  `entities` list names it (at most MAX_LISTED_DOCS), so a city does not inherit every biography.
  There is no other fallback: an entity with neither (a name only mentioned in some text, a literal)
  has no chunks, so it is never scored with another entity's document.
A pack without triples is explored through its documents (§5 ToG-FinQA-like "document graph", the
paper's entity-document links): entity e `mentions` c when c's name or a derived alias ("Rumble Fish" of
"Rumble Fish (novel)") occurs in e's document; `~mentions` walks that backwards.
"""

from __future__ import annotations

import hashlib
import logging
import math
import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property

import numpy as np

from engine.cache import LruCache, Registry
from engine.graph.kg import KnowledgeGraph
from engine.graph.linking import EntityLinker
from engine.knowledge.chunking import Chunk
from engine.retrieval.index import embedding_text
from engine.retrieval.suite import Retrieval
from engine.rules.text import relation_label

log = logging.getLogger(__name__)

MENTIONS = "mentions"
MAX_LISTED_DOCS = 3
CHUNK_WEIGHT, TRIPLE_WEIGHT = 0.7, 0.3
MIN_NAME_CHARS = 3
# spec §2.2.1 [code]: relations that never lead anywhere useful on Wikidata
_USELESS_SUFFIXES = (" id", " code", " number", " rate", " count", "website", "url", "image", "inception",
                     "instance of")
_USELESS = {"main subject", "country", "country of citizenship", "country of origin", "nationality",
            "commons category", "commons gallery", "category's main topic", "topic's main category",
            "stack exchange site"}
_WORD = re.compile(r"[a-z0-9]+")


# ---- relations -----------------------------------------------------------------------------------


def is_useless(relation: str) -> bool:
    words = relation_label(relation).lower()
    return (words in _USELESS or words.endswith(_USELESS_SUFFIXES) or "wikidata" in words
            or "wikimedia" in words)


def reverse(relation: str) -> str:
    return relation[1:] if relation.startswith("~") else "~" + relation


def verbalize(entity: str, relation: str, tail: str = "") -> str:
    """The triple as a sentence in its true KG direction (spec §8.14): e –r→ c, or c –r→ e for '~r'."""
    words = relation_label(relation)
    if relation.startswith("~"):
        return f"{tail} {words} {entity}".strip() if tail else f"{entity} is the {words} of"
    return f"{entity} {words} {tail}".strip()


def oriented(entity: str, relation: str, tail: str) -> tuple[str, str, str]:
    """(head, relation, tail) as stored in the KG."""
    if relation.startswith("~"):
        return tail, relation[1:], entity
    return entity, relation, tail


@dataclass(frozen=True)
class Candidate:
    """A tail entity reached from a frontier entity via one relation (spec §3 candidate record)."""

    name: str
    via: str
    relation: str
    relation_score: float

    @property
    def triple(self) -> tuple[str, str, str]:
        return oriented(self.via, self.relation, self.name)

    @property
    def sentence(self) -> str:
        return verbalize(self.via, self.relation, self.name)


# ---- the graph explored: the KG, or the documents' mention links ---------------------------------


class ExplorationGraph:
    """Relations and tails of an entity; over the KG, or over document mentions when there are no triples."""

    def __init__(self, kg: KnowledgeGraph, retrieval: Retrieval):
        self.kg = kg
        self.retrieval = retrieval
        self.documents = EntityDocuments(retrieval)
        self.textual = kg.graph.number_of_edges() == 0

    def relations(self, entity: str, arrived_by: str | None = None) -> list[str]:
        """Filtered relations both ways; the reverse of the arriving relation is left out (no backtracking)."""
        found = self._mention_relations(entity) if self.textual else self.kg.relations_of(entity)
        banned = reverse(arrived_by) if arrived_by else None
        return [r for r in dict.fromkeys(found) if r != banned and not is_useless(r)]

    def tails(self, entity: str, relation: str) -> list[str]:
        if self.textual:
            table = self._mentioned_by if relation.startswith("~") else self._mentions
            return [t for t in table.get(entity, ()) if t != entity]
        return [t for t in self.kg.follow(entity, relation) if t != entity]

    def _mention_relations(self, entity: str) -> list[str]:
        return ([MENTIONS] if self._mentions.get(entity) else []) + (
            ["~" + MENTIONS] if self._mentioned_by.get(entity) else [])

    @cached_property
    def _mentions(self) -> dict[str, tuple[str, ...]]:
        return _mention_links(self.kg, self.retrieval)[0]

    @cached_property
    def _mentioned_by(self) -> dict[str, tuple[str, ...]]:
        return _mention_links(self.kg, self.retrieval)[1]


_MENTION_LINKS: Registry[Retrieval, tuple[dict, dict]] = Registry(weak_keys=True)


def _mention_links(kg: KnowledgeGraph, retrieval: Retrieval) -> tuple[dict, dict]:
    """title → names its documents mention, and name → titles of the documents mentioning it (once per pack)."""
    return _MENTION_LINKS.get(retrieval, lambda: _find_mention_links(kg, retrieval))


def _find_mention_links(kg: KnowledgeGraph, retrieval: Retrieval) -> tuple[dict, dict]:
    out: dict[str, dict[str, None]] = defaultdict(dict)
    back: dict[str, dict[str, None]] = defaultdict(dict)
    linker = EntityLinker(kg)  # names and aliases only: no embedder needed
    for doc in retrieval.pack.documents:
        for name in linker.names_in(doc.text):
            if name != doc.title and len(name) >= MIN_NAME_CHARS:
                out[doc.title][name] = None
                back[name][doc.title] = None
    return {k: tuple(v) for k, v in out.items()}, {k: tuple(v) for k, v in back.items()}


def discover_candidates(
    graph: ExplorationGraph, question: str, scored: Sequence[tuple[str, str, float]], visited: set[str],
    per_relation: int, overall: int,
) -> list[Candidate]:
    """Tails of the kept (entity, relation, score), best relation first, capped per relation and overall."""
    words = set(_WORD.findall(question.lower()))
    seen: dict[str, Candidate] = {}
    for entity, relation, score in sorted(scored, key=lambda x: -x[2]):
        tails = [t for t in graph.tails(entity, relation) if t not in visited and len(t) >= MIN_NAME_CHARS]
        for tail in _pre_rank(tails, words)[:per_relation]:
            if tail not in seen and len(seen) < overall:
                seen[tail] = Candidate(tail, entity, relation, score)
    return list(seen.values())


def revisited_links(
    graph: ExplorationGraph, scored: Sequence[tuple[str, str, float]], visited: set[str], per_relation: int,
) -> list[Candidate]:
    """Kept relations that lead back to entities already explored: no new candidates, but new triples
    (a cycle closes; the fact 'Bruno born_in Carlow' matters even when Carlow was met before)."""
    links = []
    for entity, relation, score in scored:
        tails = [t for t in graph.tails(entity, relation) if t in visited and t != entity]
        links += [Candidate(t, entity, relation, score) for t in tails[:per_relation]]
    return links


def _pre_rank(names: Sequence[str], question_words: set[str]) -> list[str]:
    """Deterministic order for the per-relation cap: overlap with the question, then a content hash."""
    def key(name: str) -> tuple[int, str]:
        overlap = len(set(_WORD.findall(name.lower())) & question_words)
        return (-overlap, hashlib.sha256(name.encode("utf-8")).hexdigest())

    return sorted(dict.fromkeys(names), key=key) if len(names) > 1 else list(names)


# ---- entity documents and chunk scoring ----------------------------------------------------------


class EntityDocuments:
    """Chunks of the documents that belong to an entity (see decision 16 above), with cached vectors."""

    def __init__(self, retrieval: Retrieval):
        self.retrieval = retrieval

    def chunks(self, entity: str) -> tuple[Chunk, ...]:
        index = _doc_index(self.retrieval)
        doc_ids = index.titled.get(entity.lower()) or index.listed.get(entity.lower(), ())[:MAX_LISTED_DOCS]
        return tuple(c for d in doc_ids for c in index.by_doc.get(d, ()))

    def vectors(self, chunks: Sequence[Chunk]) -> np.ndarray:
        """(n, d) MiniLM vectors of the chunks, embedded once per process."""
        if not chunks:
            return np.zeros((0, 1), dtype=np.float32)
        by_id = {c.id: c for c in chunks}
        vectors = _doc_index(self.retrieval).vectors
        return np.stack(vectors.get_many([c.id for c in chunks], lambda ids: self._embed([by_id[i] for i in ids])))

    def _embed(self, chunks: list[Chunk]) -> list[np.ndarray]:
        """Vectors the dense index holds, the rest encoded."""
        vectors = self._from_index(chunks)
        rest = [c for c in chunks if c.id not in vectors]
        if rest:
            vectors.update(zip((c.id for c in rest), self.retrieval.embedder.encode([embedding_text(c) for c in rest])))
        return [vectors[c.id] for c in chunks]

    def _from_index(self, chunks: Sequence[Chunk]) -> dict[str, np.ndarray]:
        """Vectors the pack's dense index already holds (same encoder, same chunks); {} if it cannot say."""
        index = _doc_index(self.retrieval)
        if not index.use_dense_index:
            return {}
        try:
            self.retrieval.ensure_index()
            vectors = self.retrieval.index.vectors([c.id for c in chunks])
        except Exception as exc:  # noqa: BLE001  an unusable index only costs re-encoding, never the run
            log.warning("dense index unusable for ToG-2 chunk vectors (%s: %s); encoding chunks instead",
                        type(exc).__name__, exc)
            index.use_dense_index = False
            return {}
        return {i: v / (np.linalg.norm(v) or 1.0) for i, v in vectors.items()}


@dataclass
class _DocIndex:
    titled: dict[str, tuple[str, ...]]
    listed: dict[str, tuple[str, ...]]
    by_doc: dict[str, tuple[Chunk, ...]]
    vectors: LruCache[str, np.ndarray] = field(default_factory=lambda: LruCache(None))  # by chunk id, unbounded
    use_dense_index: bool = True


_DOC_INDEX: Registry[Retrieval, _DocIndex] = Registry(weak_keys=True)


def _doc_index(retrieval: Retrieval) -> _DocIndex:
    return _DOC_INDEX.get(retrieval, lambda: _build_doc_index(retrieval))


def _build_doc_index(retrieval: Retrieval) -> _DocIndex:
    titled: dict[str, list[str]] = defaultdict(list)
    listed: dict[str, list[str]] = defaultdict(list)
    for doc in retrieval.pack.documents:
        titled[doc.title.lower()].append(doc.id)
        for name in doc.entities:
            listed[name.lower()].append(doc.id)
    by_doc: dict[str, list[Chunk]] = defaultdict(list)
    for chunk in retrieval.chunks:
        by_doc[chunk.doc_id].append(chunk)
    return _DocIndex({k: tuple(v) for k, v in titled.items()}, {k: tuple(v) for k, v in listed.items()},
                     {k: tuple(v) for k, v in by_doc.items()})


@dataclass(frozen=True)
class ScoredChunk:
    chunk: Chunk
    entity: str
    score: float  # clipped to [0, 1] (decision 3)
    prefix: str = ""  # the verbalised triple that led here ('' for initial context)


def score_chunks(
    documents: EntityDocuments, queries: Sequence[str], owners: Sequence[tuple[str, str]],
) -> list[ScoredChunk]:
    """Every chunk of every (entity, triple sentence) owner, scored against the queries (mean), best first.

    queries: the question, plus the clue-refined query when there is one (spec §8.7); owners: the
    entity and the verbalised triple that reached it ('' at set-up, where only the chunk counts).
    """
    rows = [(entity, prefix, chunk) for entity, prefix in owners for chunk in documents.chunks(entity)]
    if not rows:
        return []
    embedder = documents.retrieval.embedder
    q = embedder.encode_queries(list(queries)).mean(axis=0)  # (d,)
    chunk_sims = documents.vectors([c for _, _, c in rows]) @ q  # (n,)
    prefixes = sorted({p for _, p, _ in rows if p})
    # triple sentences recur across questions: the encoder's query cache keeps them
    prefix_sims = dict(zip(prefixes, embedder.encode_queries(prefixes) @ q)) if prefixes else {}
    scored = []
    for (entity, prefix, chunk), sim in zip(rows, chunk_sims):
        value = float(sim) if not prefix else CHUNK_WEIGHT * float(sim) + TRIPLE_WEIGHT * float(prefix_sims[prefix])
        scored.append(ScoredChunk(chunk, entity, round(min(max(value, 0.0), 1.0), 4), prefix))
    return sorted(scored, key=lambda s: -s.score)  # ties keep the order the entities were explored in


def entity_scores(ranked: Sequence[ScoredChunk], alpha: float) -> dict[str, float]:
    """Eq. 6: score(c) = Σ_k s_k · exp(-α k) over the ranked top-K chunks owned by c (rank k from 1)."""
    scores: dict[str, float] = defaultdict(float)
    for k, item in enumerate(ranked, start=1):
        scores[item.entity] += item.score * math.exp(-alpha * k)
    return {e: round(s, 6) for e, s in scores.items()}


def top_per_entity(scored: Sequence[ScoredChunk], per_entity: int) -> list[ScoredChunk]:
    """The best `per_entity` chunks of each entity (initial context, spec §2.1.3), best first overall."""
    counts: dict[str, int] = defaultdict(int)
    kept = []
    for item in scored:
        if counts[item.entity] < per_entity:
            counts[item.entity] += 1
            kept.append(item)
    return kept
