"""RAS's offline text-to-triples: pack entity mentions per sentence, relation phrases mapped onto the
pack's relation vocabulary.

[decide] pack entity mentions per sentence (names + aliases, pronouns resolved to the page's own entity or
the last subject, years as literals); the first mention is the subject; each later mention is an object
whose relation phrase is the text since the previous mention (a list ', and' reuses the previous phrase).
The phrase loses function words and copulas and keeps its last MAX_PHRASE_WORDS words ('was a French
physicist born in' → 'physicist born in'); it maps onto the pack's relation vocabulary by MiniLM cosine
>= REL_THRESHOLD, else becomes a generic verb-phrase relation; at most MAX_TRIPLES_PER_CHUNK per chunk.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from engine.graph.kg import KnowledgeGraph
from engine.graph.linking import alias_table
from engine.methods.ras.query_graph import fold
from engine.knowledge.records import Triple
from engine.retrieval.embedder import Embedder
from engine.methods.ras.base import MAX_TRIPLES_PER_CHUNK, Extraction, Extractor
from engine.text import alpha_words, name_pattern, split_sentences
from engine.trace import Hit

REL_THRESHOLD = 0.5
MAX_PHRASE_WORDS = 3
YEAR = re.compile(r"(?<!\d)(1[0-9]{3}|20[0-9]{2})(?!\d)")
_PRONOUN = re.compile(r"\b(he|she|it|they|his|her|its|their)\b", re.IGNORECASE)
_LIST_GAP = re.compile(r"^\W*(?:,|and|or|,\s*and|,\s*or)?\W*$", re.IGNORECASE)
# pronouns, relative words and copulas; prepositions stay: they carry the relation ("moved to")
_STOP = frozenset("the a an who which that then also later he she it they his her its their where when "
                  "was is were are been be being has have had and".split())
_CLAUSE = re.compile(r"[,;()]|\b(?:who|whom|whose|which|that)\b", re.IGNORECASE)


class _Mentions:
    """Pack names and aliases → canonical, as one regex (longest first)."""

    def __init__(self, kg: KnowledgeGraph):
        table = {e.lower(): e for e in kg.entities if len(e) > 2}
        for alias, name in alias_table(kg.entities).items():
            table.setdefault(alias.lower(), name)
        self.canonical = table
        self.pattern = name_pattern(table)


@dataclass
class OfflineExtractor(Extractor):
    kg: KnowledgeGraph
    embedder: Embedder
    relations: Sequence[str]
    threshold: float = REL_THRESHOLD
    cap: int = MAX_TRIPLES_PER_CHUNK
    _vocab: np.ndarray | None = field(default=None, repr=False)

    def extract(self, hit: Hit) -> Extraction:
        mentions = self.kg.derived("ras-mentions", lambda: _Mentions(self.kg))
        own = mentions.canonical.get(fold(hit.title).lower()) or mentions.canonical.get(hit.title.lower())
        raw: list[tuple[str, str, str, bool]] = []  # head, phrase, tail, tail is a year
        last_subject = own
        for sentence in split_sentences(hit.text):
            items = _sentence_mentions(sentence, mentions, own or last_subject)
            if len(items) < 2:
                continue
            subject = items[0]
            if subject[3]:
                continue  # a sentence led by a year has no subject entity
            last_subject = subject[2]
            phrase = ""
            for prev, cur in zip(items, items[1:]):
                gap = sentence[prev[1]:cur[0]]
                if not (_LIST_GAP.match(gap) and phrase):
                    phrase = gap
                if cur[2] != subject[2]:
                    raw.append((subject[2], phrase, cur[2], cur[3]))
        return Extraction(self._relations(raw)[: self.cap])

    def _relations(self, raw: list[tuple[str, str, str, bool]]) -> tuple[Triple, ...]:
        if not raw:
            return ()
        phrases = [_clean(p) for _, p, _, _ in raw]
        vocab = self._vocab_vectors()
        uniq = sorted({p for p in phrases if p})
        # a pack without triples (an imported QA set) has no vocabulary: every relation stays a phrase
        sims = dict(zip(uniq, self.embedder.encode_queries(uniq) @ vocab.T)) if uniq and len(vocab) else {}
        out = []
        for (head, _, tail, year), phrase in zip(raw, phrases):
            if not phrase:
                continue
            row = sims.get(phrase, ())
            allowed = [i for i, r in enumerate(self.relations) if r.endswith("_year") == year]
            best = max(allowed, key=lambda i: row[i]) if allowed else -1
            if best >= 0 and row[best] >= self.threshold:
                relation = self.relations[best]
            elif year and self.relations:
                continue  # a year the pack's year-like relations do not fit is noise
            else:
                relation = phrase.replace(" ", "_")
            out.append(Triple(head, relation, tail))
        return tuple(dict.fromkeys(out))

    def _vocab_vectors(self) -> np.ndarray:
        if self._vocab is None:
            self._vocab = self.embedder.encode_queries([r.replace("_", " ") for r in self.relations]) \
                if self.relations else np.zeros((0, 0))
        return self._vocab


def _sentence_mentions(sentence: str, mentions: _Mentions, referent: str | None) -> list[tuple[int, int, str, bool]]:
    """(start, end, canonical name, is a year) in order; a pronoun before the first name is the referent."""
    items: list[tuple[int, int, str, bool]] = []
    if mentions.pattern is not None:
        items += [(m.start(), m.end(), mentions.canonical[m.group(0).lower()],
                   bool(YEAR.fullmatch(m.group(0)))) for m in mentions.pattern.finditer(sentence)]
    taken = [(a, b) for a, b, _, _ in items]
    items += [(m.start(), m.end(), m.group(0), True) for m in YEAR.finditer(sentence)
              if not any(a <= m.start() < b for a, b in taken)]
    items.sort()
    names = [x for x in items if not x[3]]
    pronoun = _PRONOUN.search(sentence)
    if referent and pronoun and (not names or pronoun.start() < names[0][0]):
        items.append((pronoun.start(), pronoun.end(), referent, False))
        items.sort()
        names = [x for x in items if not x[3]]
    # years before the subject date an event, not the subject: drop them
    return [x for x in items if not names or x[0] >= names[0][0]]


def _clean(phrase: str) -> str:
    """The relation phrase: the last clause of the gap ('chemist who later moved to' → 'moved to')."""
    clauses = [c for c in _CLAUSE.split(phrase) if alpha_words(c or "")]
    words = [w.lower() for w in alpha_words(clauses[-1] if clauses else "")]
    words = [w for w in words if w not in _STOP]
    return " ".join(words[-MAX_PHRASE_WORDS:])
