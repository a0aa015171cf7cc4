"""Entity linking: map a question's mentions to the pack's entities (exact, alias, fuzzy, embedding).

ToG-2 starts from linked entities (spec §2.1.1; the paper used the Azure entity-linking API). Offline we
link in four passes, each only over the question text the earlier ones left unexplained:
- exact: a KG node name appears in the question (case-insensitive, whole words);
- alias: a document title or a name in a document's `entities` list, or such a name without its
  parenthetical ("Mercury (planet)") or leading "The";
- fuzzy: a capitalised span of the question within difflib ratio >= FUZZY_CUTOFF of a known name;
- embedding: a capitalised span whose MiniLM vector is within EMBED_CUTOFF cosine of a name's vector.
Scores are on one 0..1 scale so the graph view can show them side by side.
"""

from __future__ import annotations

import difflib
import re
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from engine.cache import LruCache, Registry
from engine.graph.kg import KnowledgeGraph
from engine.retrieval.embedder import Embedder

EXACT_SCORE = 1.0
ALIAS_SCORE = 0.9
FUZZY_WEIGHT = 0.8  # a fuzzy link scores ratio * 0.8, so it always ranks below an exact one
EMBED_WEIGHT = 0.7
FUZZY_CUTOFF = 0.85
EMBED_CUTOFF = 0.8
LINK_CACHE = 512  # questions whose links are remembered per linker
MIN_NAME_CHARS = 3  # spec §2.2.3 [code]: names of length <= 2 are dropped

_SPAN = re.compile(r"[A-Z][\w'’.-]*(?:\s+(?:(?:of|de|von|van|der|du|la|le|the|and|in|for)\s+)*[A-Z][\w'’.-]*)*")
_QUESTION_WORDS = {"who", "what", "which", "where", "when", "why", "how", "in", "at", "on", "did", "does",
                   "is", "was", "were", "are", "the", "a", "an", "of", "for", "from", "name"}


@dataclass(frozen=True)
class EntityLink:
    """One linked entity: the canonical name, the question text it came from, how, and how sure (0..1)."""

    entity: str
    mention: str
    method: str  # exact | alias | fuzzy | embedding; ToG-2 adds retrieval (a top document's title)
    score: float


class EntityLinker:
    """Links questions against one KG's names; name vectors are computed once, on first embedding pass."""

    def __init__(self, kg: KnowledgeGraph, embedder: Embedder | None = None):
        self.kg = kg
        self.embedder = embedder
        nodes = {n for n in kg.graph.nodes if len(str(n)) >= MIN_NAME_CHARS}
        self._exact = KnowledgeGraph([], nodes) if nodes else None
        self._aliases = alias_table(kg.entities)
        self._alias_kg = KnowledgeGraph([], self._aliases) if self._aliases else None
        self._lower = {name.lower(): name for name in kg.entities if len(name) >= MIN_NAME_CHARS}
        self._alias_lower: dict[str, str] = {}
        for alias, target in self._aliases.items():
            self._alias_lower.setdefault(alias.lower(), target)
        self._vectors: np.ndarray | None = None
        self._names: tuple[str, ...] = tuple(self._lower.values())
        self._lock = threading.Lock()
        self._links: LruCache[str, tuple[EntityLink, ...]] = LruCache(LINK_CACHE)

    def canonical(self, name: str) -> str | None:
        """The pack's name for `name` (same name in another case, or a derived alias), else None."""
        low = name.strip().lower()
        if low in self._lower:
            return self._lower[low]
        return self._alias_lower.get(low)

    def link(self, question: str) -> tuple[EntityLink, ...]:
        """Linked entities, best first; an entity linked twice keeps its best link.

        Remembered per text: methods link the same question in several places (RAS every round, the
        hybrid's entity finder and premise check), and the fuzzy and embedding passes are the costly part.
        """
        links = self._links.get(question)
        if links is None:
            links = self._link(question)
            self._links.put(question, links)
        return links

    def names_in(self, text: str) -> list[str]:
        """The pack's names a text mentions by name or derived alias (no fuzzy or embedding guesses), in
        order: what ToG-2's title-mention links between documents are made of."""
        return list(dict.fromkeys(link.entity for link in self._by_name(text)))

    def _link(self, question: str) -> tuple[EntityLink, ...]:
        links: dict[str, EntityLink] = {}
        left = question
        for link in self._by_name(question):
            _keep(links, link)
            left = _blank(left, link.mention)
        spans = [s for s in _spans(left) if s.lower() not in self._lower]
        unexplained = []
        for span in spans:
            fuzzy = self._fuzzy(span)
            if fuzzy is None:
                unexplained.append(span)
            else:
                _keep(links, fuzzy)
        for link in self._embedded(unexplained):
            _keep(links, link)
        return tuple(sorted(links.values(), key=lambda x: (-x.score, question.lower().find(x.mention.lower()))))

    def _by_name(self, question: str) -> list[EntityLink]:
        found = []
        exact = set(self._exact.find_entities(question)) if self._exact else set()
        for name in self.kg.find_entities(question):
            method, score = ("exact", EXACT_SCORE) if name in exact else ("alias", ALIAS_SCORE)
            found.append(EntityLink(name, _mention(question, name), method, score))
        if self._alias_kg is not None:
            for alias in self._alias_kg.find_entities(question):
                found.append(EntityLink(self._aliases[alias], _mention(question, alias), "alias", ALIAS_SCORE))
        return found

    def _fuzzy(self, span: str) -> EntityLink | None:
        close = difflib.get_close_matches(span.lower(), self._lower.keys(), n=1, cutoff=FUZZY_CUTOFF)
        if not close:
            return None
        ratio = difflib.SequenceMatcher(None, span.lower(), close[0]).ratio()
        return EntityLink(self._lower[close[0]], span, "fuzzy", round(FUZZY_WEIGHT * ratio, 4))

    def _embedded(self, spans: Sequence[str]) -> list[EntityLink]:
        if not spans or self.embedder is None or not self._names:
            return []
        vectors = self._name_vectors()
        queries = self.embedder.encode(list(spans))  # (s, d)
        sims = queries @ vectors.T  # (s, n)
        links = []
        for span, row in zip(spans, sims):
            best = int(np.argmax(row))
            if row[best] >= EMBED_CUTOFF:
                weight = round(EMBED_WEIGHT * float(row[best]), 4)
                links.append(EntityLink(self._names[best], span, "embedding", weight))
        return links

    def _name_vectors(self) -> np.ndarray:
        with self._lock:
            if self._vectors is None:
                self._vectors = self.embedder.encode(list(self._names))  # (n, d)
            return self._vectors


_LINKERS: Registry[KnowledgeGraph, EntityLinker] = Registry(weak_keys=True)


def entity_linker(kg: KnowledgeGraph, embedder: Embedder) -> EntityLinker:
    """One linker per KG (its name vectors are the expensive part), shared by every run."""
    return _LINKERS.get(kg, lambda: EntityLinker(kg, embedder))


def alias_table(names: Sequence[str]) -> dict[str, str]:
    """Derived alias → canonical name, for names that differ from every canonical one. An alias two names
    share ("Once" of "Once (film)" and "Once (musical)") names neither, so it is left out."""
    known = {n.lower() for n in names}
    table: dict[str, set[str]] = {}
    for name in names:
        for alias in (re.sub(r"\s*\([^)]*\)\s*$", "", name), re.sub(r"^the\s+", "", name, flags=re.I)):
            alias = alias.strip()
            if len(alias) >= MIN_NAME_CHARS and alias.lower() not in known:
                table.setdefault(alias, set()).add(name)
    return {alias: next(iter(targets)) for alias, targets in table.items() if len(targets) == 1}


def _spans(text: str) -> list[str]:
    """Capitalised spans, without a leading question word ('Which Curie …' → 'Curie')."""
    spans = []
    for match in _SPAN.finditer(text):
        words = match.group(0).rstrip(".'’").split()
        while words and words[0].lower() in _QUESTION_WORDS:
            words = words[1:]
        span = " ".join(words)
        if span.endswith(("'s", "’s")):
            span = span[:-2]
        if len(span) >= MIN_NAME_CHARS:
            spans.append(span)
    return spans


def _mention(question: str, name: str) -> str:
    at = question.lower().find(name.lower())
    return question[at:at + len(name)] if at >= 0 else name


def _blank(text: str, mention: str) -> str:
    return re.sub(re.escape(mention), " ", text, flags=re.IGNORECASE) if mention else text


def _keep(links: dict[str, EntityLink], link: EntityLink) -> None:
    old = links.get(link.entity)
    if old is None or link.score > old.score:
        links[link.entity] = link
