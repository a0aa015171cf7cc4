"""Where the evidence mentions a name, and the years and numbers that belong to a mention."""

from __future__ import annotations

import re
from collections.abc import Collection

from engine.text import STOPWORDS, WORD
from engine.tools.offline_reader.candidates import date_occurrences, number_occurrences, proximity
from engine.tools.offline_reader.context import Context
from engine.tools.offline_reader.lexicon import BIRTH_WORDS, DEATH_WORDS, lower_words
from engine.tools.offline_reader.names import named_spans, span_text
from engine.tools.offline_reader.records import Occurrence, Sentence
from engine.tools.offline_reader.sentences import as_sentence, word_stem


def question_anchors(context: Context) -> list[str]:
    """Names the question itself mentions: quoted titles, gazetteer names, capitalised spans."""
    sentence = as_sentence(context.question)
    quoted = re.findall(r"[\"“]([^\"”]{2,80})[\"”]", context.question)
    names = [span_text(sentence, a, b) for a, b, _ in named_spans(sentence, context.gazetteer)]
    return list(dict.fromkeys(quoted + names))


def mentions_of(context: Context, name: str) -> list[tuple[float, int, Sentence]]:
    """Sentences about `name`: (match strength, token index of the mention or -1, sentence).

    Words count by IDF, so 'Heidelberg' and not 'University' identifies 'the University of
    Heidelberg'; a sentence under another document's title mentions the name only in passing.
    """
    words = lower_words(name)
    words = [w for w in words if w not in STOPWORDS] or words
    if not words:
        return []
    unseen = context.idf[""]
    weights = {w: context.idf.get(word_stem(w), unseen) for w in words}
    total = sum(weights.values())
    found = []
    for sentence in context.sentences:
        title = set(WORD.findall(sentence.title.lower()))
        in_body = sum(weights[w] for w in words if w in sentence.lowered) / total
        in_title = sum(weights[w] for w in words if w in title) / total
        position = max((sentence.lowered.index(w) for w in words if w in sentence.lowered), default=-1)
        if in_title >= 0.6:
            found.append((max(in_body, in_title), position, sentence))
        elif in_body >= 0.6:
            found.append((in_body * (0.6 if sentence.title else 1.0), position, sentence))
    return sorted(found, key=lambda m: (-m[0], -m[2].score))


def mentioned(name: str, sentences: list[Sentence]) -> bool:
    words = set(lower_words(name)) - STOPWORDS
    return any(words <= (set(s.lowered) | set(lower_words(s.title))) for s in sentences)


_LIFE_CUE_GAP = 4  # 'born 1921', 'born in 1921', 'died on 8 December 2016'


def _year_near(sentence: Sentence, position: int, mode: str = "earliest") -> int | None:
    """The year that belongs to a mention, read as a birth, a death, or the earliest nearby year.

    'birth' and 'death' are strict (a 'born'/'died' cue or a '(1808–1875)' life span) so callers
    can fall back to 'earliest' only when no sentence states them.
    """
    years = [o for o in date_occurrences(sentence, "year") if o.value is not None]
    if not years:
        return None
    if mode == "earliest":  # 'who reached space first' asks for an event's year, never a birth or death
        life = _life_years(sentence, years)
        years = [o for o in years if o.index not in life]
        if not years:
            return None
    if position >= 0:
        nearest = min(abs(o.index - position) for o in years)
        years = [o for o in years if abs(o.index - position) <= nearest + 6]
    if mode == "earliest":
        return int(min(o.value for o in years))
    cues = BIRTH_WORDS if mode == "birth" else DEATH_WORDS
    cue_at = [i for i, w in enumerate(sentence.lowered) if _is_cue(w, cues)]
    after = [o for o in years if cue_at and 0 < o.index - cue_at[0] <= 8]
    if after:
        return int(after[0].value)
    spans = [(x, y) for x, y in zip(years, years[1:]) if y.index - x.index <= 8 and _is_range(sentence, x, y)]
    if spans:
        return int(spans[0][0].value if mode == "birth" else spans[0][1].value)
    return None


def _is_cue(word: str, cues: frozenset[str]) -> bool:
    """'born', or a graph relation written with it ('birth_year' of a fact 'John Glenn birth_year 1921')."""
    return word in cues or any(part in cues for part in word.split("_"))


def _life_years(sentence: Sentence, years: list[Occurrence]) -> set[int]:
    """Token positions of the years that date a birth or a death: just after 'born'/'died' (or a
    'birth_year' relation) or inside a '(1921–2016)' life span."""
    cue_at = [i for i, w in enumerate(sentence.lowered) if _is_cue(w, BIRTH_WORDS | DEATH_WORDS)]
    life = {o.index for o in years if any(0 < o.index - i <= _LIFE_CUE_GAP for i in cue_at)}
    for x, y in zip(years, years[1:]):
        opened = sentence.text[:sentence.tokens[x.index][0]].rstrip().endswith("(")
        if opened and y.index - x.index <= 8 and _is_range(sentence, x, y):
            life |= {x.index, y.index}
    return life


def _is_range(sentence: Sentence, first: Occurrence, second: Occurrence) -> bool:
    gap = sentence.gap(first.end, second.index)
    return bool(re.search(r"[–—-]|\bto\b|\buntil\b", gap)) and "(" not in gap


def life_year(
    mentions: list[tuple[float, int, Sentence]], mode: str, exclude: Collection[int] = ()
) -> tuple[int, Sentence] | None:
    """A birth/death year from the best mentions, falling back to the earliest year for births."""
    passes = (mode, "earliest") if mode == "birth" else (mode,)
    for current in passes:
        for _strength, position, sentence in mentions[:6]:
            year = _year_near(sentence, position, current)
            if year is not None and year not in exclude:
                return year, sentence
    return None


def number_near(
    context: Context, sentence: Sentence, position: int, exclude: frozenset[str]
) -> float | None:
    """The number a mention is about: the one closest to the question's other words."""
    numbers = [o for o in number_occurrences(sentence) if o.value is not None]
    if not numbers:
        return None
    stems = context.question_stems - exclude

    def fit(o: Occurrence) -> float:
        near = 1.0 / (1 + abs(o.index - position)) if position >= 0 else 0.0
        return o.weight * proximity(stems, context.idf, sentence, o.index, o.end) + 0.1 * near

    return float(max(numbers, key=fit).value)
