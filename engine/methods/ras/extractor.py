"""RAS's offline text-to-triples: pack entity mentions per sentence, relation phrases mapped onto the
pack's relation vocabulary.

[decide] pack entity mentions per sentence (names + aliases, pronouns resolved to the page's own entity or
the last subject, years as literals); the first mention is the subject; each later mention is an object
whose relation phrase is the text since the previous mention (a list ', and' reuses the previous phrase).
The phrase is the gap's last clause without function words, copulas and time adverbs, from its last verb
on ('was a French physicist born in' → 'born in'), else its last MAX_PHRASE_WORDS words when they end in a
preposition ('the largest city of' → 'largest city of') or come before a copula ('her doctoral advisor was'
→ 'doctoral advisor'). A gap that holds no relation phrase gives no triple
(issue 22: 'Sommerfeld –today→ Kaliningrad'): only prepositions or adverbs ('with', 'today'), a noun phrase
without a verb or a closing preposition ('two new elements'), or a capitalised word (a name the pack does
not know stands between the two mentions) after anything but a verb and its prepositions ('rises in [the
Black Forest in] Germany' keeps 'rises in'). The phrase
maps onto the pack's relation vocabulary by MiniLM cosine >= REL_THRESHOLD, else stays a verb-phrase
relation; at most MAX_TRIPLES_PER_CHUNK per chunk.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from engine.graph.kg import KnowledgeGraph
from engine.graph.linking import alias_table
from engine.knowledge.records import Triple
from engine.methods.ras.query_graph import fold
from engine.methods.ras.tools import MAX_TRIPLES_PER_CHUNK, Extraction
from engine.retrieval.embedder import Embedder
from engine.text import YEAR, alpha_words, is_year, name_pattern, split_sentences
from engine.trace import Hit

REL_THRESHOLD = 0.5
MAX_PHRASE_WORDS = 3
_PRONOUN = re.compile(r"\b(he|she|it|they|his|her|its|their)\b", re.IGNORECASE)
_LIST_GAP = re.compile(r"^\W*(?:,|and|or|,\s*and|,\s*or)?\W*$", re.IGNORECASE)
# pronouns, relative words, copulas and time adverbs; prepositions stay: they carry the relation ("moved to")
_STOP = frozenset("the a an who which that then also later he she it they his her its their where when "
                  "was is were are been be being has have had and today now still once formerly currently "
                  "soon already again mainly only".split())
_PREPOSITIONS = frozenset("of in at on to from by with for into onto through across along past near under over "
                          "about after before between during since until within without around beyond toward "
                          "towards upon against among via as like".split())
_COPULAS = frozenset("is was are were".split())
# English verbs whose past or participle does not end in -ed (closed class, not a pack's vocabulary)
_IRREGULAR = frozenset("born led left held won went became begun began took taken gave given wrote written made "
                       "met built grew grown ran taught saw seen found known drew drawn rose risen lay fell fought "
                       "brought bought sold sent spent stood thought told kept lost paid said shared".split())
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
class OfflineExtractor:
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
                phrase = _next_phrase(sentence[prev[1]:cur[0]], phrase)
                if cur[2] != subject[2] and phrase:
                    raw.append((subject[2], phrase, cur[2], cur[3]))
        return Extraction(self._relations(raw)[: self.cap])

    def _relations(self, raw: list[tuple[str, str, str, bool]]) -> tuple[Triple, ...]:
        if not raw:
            return ()
        phrases = [p for _, p, _, _ in raw]
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
                   is_year(m.group(0))) for m in mentions.pattern.finditer(sentence)]
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


def _next_phrase(gap: str, before: str) -> str:
    """The relation phrase of the next mention: a list gap (', and') keeps `before`; prepositions alone
    keep its verb ('born in' 1867 'in' Warsaw → 'born in'; 'shared' the prize 'with' X → 'shared with')."""
    if before and _LIST_GAP.match(gap):
        return before
    found = _clean(gap)
    if found or not before:
        return found
    words = [w.lower() for w in alpha_words(gap) if w.lower() not in _STOP]
    verb = before.split()[0]
    if words and all(w in _PREPOSITIONS for w in words) and _is_verb(verb, first=True):
        return " ".join([verb, *words])
    return ""


def _clean(gap: str) -> str:
    """The relation phrase of the gap between two mentions, '' when it holds none (module docstring):
    'chemist who later moved to' → 'moved to'."""
    clauses = [c for c in _CLAUSE.split(gap) if alpha_words(c or "")]
    written = alpha_words(clauses[-1] if clauses else "")
    name = next((i for i, w in enumerate(written) if _is_name(written, i)), None)
    words = [w.lower() for w in written[:name] if w.lower() not in _STOP]
    first = bool(words) and words[0] == written[0].lower()
    if name is not None:  # only 'rises in' [the Black Forest in] Germany: a verb and its prepositions
        simple = len(words) >= 2 and _is_verb(words[0], first) and all(w in _PREPOSITIONS for w in words[1:])
        return " ".join(words) if simple else ""
    verbs = [i for i, w in enumerate(words) if _is_verb(w, first=(i == 0 and first))]
    if verbs and len(words) - verbs[-1] <= MAX_PHRASE_WORDS + 1:
        return " ".join(words[verbs[-1]:])
    if len(words) >= 2 and words[-1] in _PREPOSITIONS and words[-2] not in _PREPOSITIONS:
        return " ".join(words[-MAX_PHRASE_WORDS:])
    if words and written[-1].lower() in _COPULAS and words[-1] not in _PREPOSITIONS:
        return " ".join(words[-MAX_PHRASE_WORDS:])  # 'her doctoral advisor was' Y: Y is her doctoral advisor
    return ""


def _is_name(words: Sequence[str], i: int) -> bool:
    """A capitalised word that is no adjective before a lower-case noun ('French physicist', 'Nobel laureates')."""
    if not words[i][0].isupper():
        return False
    after = words[i + 1] if i + 1 < len(words) else ""
    return not (after[:1].islower() and after.lower() not in _STOP and after.lower() not in _PREPOSITIONS)


def _is_verb(word: str, first: bool) -> bool:
    """A verb by its form: -ed or an irregular past; an -s form only right after the subject ('flows')."""
    if word in _IRREGULAR or (len(word) > 4 and word.endswith("ed")):
        return True
    return first and len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is"))
