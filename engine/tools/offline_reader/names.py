"""Names in a sentence: gazetteer matches, capitalised spans, and the keys answers aggregate under."""

from __future__ import annotations

import re
from collections.abc import Iterable

from engine.text import ABBREVIATIONS, STOPWORDS
from engine.tools.offline_reader.lexicon import (
    CONNECTORS,
    MONTH_NAMES,
    PARTICIPLES,
    PREPOSITIONS,
    WEEKDAYS,
    lower_words,
)
from engine.tools.offline_reader.records import Sentence

_SPAN_GAP = re.compile(r"\s+|\.\s*|\s*&\s*|\s+&\s+|\s*-\s*")
_STARTERS = frozenset(
    "after during since although however following later born today while until despite according "
    "along among both many most some several other another early late currently originally "
    "located based known since upon following like unlike under over through".split()
)


# ---- gazetteer ----------------------------------------------------------------------------------


def relation_nouns(relations: Iterable[str]) -> frozenset[str]:
    """The head noun of each relation name: the last word before 'of', else the last word, when it is a
    noun by form ('doctoral_advisor' → advisor, 'place_of_death' → place, 'capital_of' → capital; none
    for 'founded_by', 'born_in', 'flows_through', 'lies_on': participles, verbs and prepositions)."""
    nouns = set()
    for relation in relations:
        tokens = lower_words(str(relation).replace("_", " "))
        if "of" in tokens[1:]:
            tokens = tokens[:tokens.index("of", 1)]
        tokens = [t for t in tokens if t not in STOPWORDS and t not in PREPOSITIONS]
        if tokens and _noun_like(tokens[-1]):
            nouns.add(tokens[-1])
    return frozenset(nouns)


def _noun_like(word: str) -> bool:
    """Not a participle ('founded', 'born') nor a verb's third person ('lies', 'flows'): a relation name
    is singular, so a final -s is a verb's."""
    return (word.isalpha() and word not in PARTICIPLES and not word.endswith("ed")
            and not (word.endswith("s") and not word.endswith(("ss", "us", "is"))))


class Gazetteer:
    """What the pack names: multi-word entity names, matched on lower-cased word sequences (longest
    first), and the nouns its relations are named by ('doctoral_advisor' → 'advisor'), which is how the
    reader knows 'X's advisor' is a relation to follow without a built-in list of relations."""

    def __init__(self, names: Iterable[str], relations: Iterable[str] = ()):
        self._names: dict[str, list[tuple[str, ...]]] = {}
        self.relation_nouns = relation_nouns(relations)
        self._add(names)

    def _add(self, names: Iterable[str]) -> None:
        for name in names:
            tokens = tuple(lower_words(str(name)))
            # bare numbers and function words are values, not names
            if tokens and not all(t in STOPWORDS or t.isdigit() for t in tokens):
                bucket = self._names.setdefault(tokens[0], [])
                if tokens not in bucket:
                    bucket.append(tokens)
                    bucket.sort(key=len, reverse=True)

    def extended(self, names: Iterable[str]) -> Gazetteer:
        copy = Gazetteer(())
        copy.relation_nouns = self.relation_nouns
        copy._names = {k: list(v) for k, v in self._names.items()}
        copy._add(names)
        return copy

    def matches(self, sentence: Sentence) -> list[tuple[int, int, bool]]:
        """(first, last, capitalised) token indices of gazetteer names found in the sentence.

        Lower-case matches count too ('polonium', 'superconductivity'): packs name concepts as
        well as people and places.
        """
        found, i, words = [], 0, sentence.lowered
        while i < len(words):
            hit = next(
                (n for n in self._names.get(words[i], ()) if tuple(words[i: i + len(n)]) == n), None
            )
            if hit:
                first = sentence.word(i)[:1]
                found.append((i, i + len(hit) - 1, first.isupper() or first.isdigit()))
                i += len(hit)
            else:
                i += 1
        return found


# ---- named spans --------------------------------------------------------------------------------


def is_capitalised(sentence: Sentence, i: int) -> bool:
    first = sentence.text[sentence.tokens[i][0]]
    return first.isupper()


def gap_ok(sentence: Sentence, i: int) -> bool:
    """May a name continue from token i to token i+1 across the text between them?"""
    gap = sentence.gap(i, i + 1)
    if gap.strip() == "" and gap:
        return True
    if gap.startswith("."):
        word = sentence.lowered[i]
        return (len(word) == 1 or word in ABBREVIATIONS) and _SPAN_GAP.fullmatch(gap) is not None
    return gap.strip() == "&"


def capitalised_spans(sentence: Sentence) -> list[tuple[int, int]]:
    """(first, last) token indices of capitalised runs; lower-case 'of', 'de', 'von'… may join them."""
    spans, i, n = [], 0, len(sentence.tokens)
    while i < n:
        if not is_capitalised(sentence, i):
            i += 1
            continue
        j = i
        while j + 1 < n and gap_ok(sentence, j):
            if is_capitalised(sentence, j + 1):
                j += 1
            elif (sentence.lowered[j + 1] in CONNECTORS and j + 2 < n and gap_ok(sentence, j + 1)
                  and is_capitalised(sentence, j + 2)):
                j += 2
            else:
                break
        trimmed = _trim(sentence, i, j)
        if trimmed:
            spans.append(trimmed)
        i = j + 1
    return spans


def _trim(sentence: Sentence, i: int, j: int) -> tuple[int, int] | None:
    """Drop leading function words ('The', sentence-initial 'In') and trailing connectors."""
    words = sentence.lowered
    while i <= j and (words[i] in STOPWORDS or words[i] in CONNECTORS or (i == 0 and words[i] in _STARTERS)):
        i += 1
    while j >= i and (words[j] in CONNECTORS or words[j] in STOPWORDS):
        j -= 1
    if i > j or all(w in WEEKDAYS or w in MONTH_NAMES or w in STOPWORDS for w in words[i: j + 1]):
        return None
    return i, j


def named_spans(sentence: Sentence, gazetteer: Gazetteer) -> list[tuple[int, int, str]]:
    """(first, last, source) of names: gazetteer matches ('known', or 'lower' when written in
    lower case) first, then capitalised spans ('caps') that do not overlap them."""
    known = gazetteer.matches(sentence)
    taken = {k for a, b, _ in known for k in range(a, b + 1)}
    spans = [(a, b, "known" if capitalised else "lower") for a, b, capitalised in known]
    for a, b in capitalised_spans(sentence):
        if not any(k in taken for k in range(a, b + 1)):
            spans.append((a, b, "caps"))
    return sorted(spans)


def span_text(sentence: Sentence, a: int, b: int) -> str:
    return sentence.text[sentence.tokens[a][0]: sentence.tokens[b][1]]


def key_of(text: str) -> str:
    words = lower_words(text)
    while words and words[0] in ("the", "a", "an"):
        words = words[1:]
    return " ".join(words)


