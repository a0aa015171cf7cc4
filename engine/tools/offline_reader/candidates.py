"""Typed answer candidates (dates, numbers, named spans) in a sentence, and their tally over the evidence."""

from __future__ import annotations

import math
import re
from dataclasses import replace

from engine.text import STOPWORDS, YEAR_DIGITS, contains_run, is_year
from engine.tools.offline_reader.answer_types import (
    MODIFIER,
    context_type,
    is_modifier,
    named_as,
    type_fit,
)
from engine.tools.offline_reader.context import Context, fmt
from engine.tools.offline_reader.lexicon import (
    CONNECTORS,
    DEMONYM_NOUNS,
    GEO_WORDS,
    INSTITUTION_WORDS,
    NUMBER_WORDS,
    PLACE_CUES,
    SCALES,
    SUBJECT_PRONOUNS,
    UNITS,
)
from engine.tools.offline_reader.names import (
    Gazetteer,
    gap_ok,
    is_capitalised,
    key_of,
    named_spans,
    span_text,
)
from engine.tools.offline_reader.records import Occurrence, Sentence, Tally
from engine.tools.offline_reader.sentences import bare_title, word_stem

_DEMONYM = re.compile(r"(?:an|ian|ese|ish|ch|i|ic)$")
_MON = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)\.?"
)
_FULL_DATE = re.compile(
    rf"\b(?:{_MON}\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+(?P<y1>\d{{3,4}})"
    rf"|\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?{_MON},?\s+(?P<y2>\d{{3,4}})"
    rf"|{_MON},?\s+(?P<y3>\d{{4}}))(?!\d)"
)
_YEAR = re.compile(rf"(?<![\d,.$£€])({YEAR_DIGITS})(s)?(?![\d]|,\d|\.\d)")  # a decade (1920s) too; no sum
_NUMBER = re.compile(
    r"(?<![\w.,$£€])[$£€]?(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?(?:st|nd|rd|th)?"
    r"(?:\s(?:thousand|million|billion|trillion))?(?![\w])"
)


# ---- typed candidates ---------------------------------------------------------------------------


def occurrences(context: Context, sentence: Sentence) -> list[Occurrence]:
    kind = context.answer_type.kind
    if kind in ("entity", "other", "place") and context.question_words & DEMONYM_NOUNS:
        kind = "demonym"
    if kind == "date":
        found = date_occurrences(sentence, _date_form(context.question_words))
    elif kind == "number":
        found = number_occurrences(sentence)
    else:
        found = _typed(context, sentence, kind, _span_occurrences(sentence, kind, context.gazetteer))
    asked = context.question_words
    return [o for o in found if not in_question(o.key, asked)]


def in_question(key: str, asked: frozenset[str]) -> bool:
    """The question's own words are not its answer ('Gustav Ludwig Hertz' when it names Gustav Hertz)."""
    words = [w for w in key.split() if w not in STOPWORDS] or key.split()
    if not words:
        return False
    stems = {word_stem(w) for w in asked}
    shared = sum(w in asked or word_stem(w) in stems for w in words)
    return shared == len(words) or (len(words) >= 3 and shared / len(words) > 0.6)


def _token_at(sentence: Sentence, char: int) -> int:
    for i, (_, end) in enumerate(sentence.tokens):
        if end > char:
            return i
    return max(0, len(sentence.tokens) - 1)


def _date_form(asked: frozenset[str]) -> str:
    for form in ("decade", "century", "year", "month"):
        if form in asked:
            return form
    return "full"


def date_occurrences(sentence: Sentence, form: str) -> list[Occurrence]:
    found, covered = [], []
    for match in _FULL_DATE.finditer(sentence.text):
        year = match.group("y1") or match.group("y2") or match.group("y3")
        covered.append((match.start(), match.end()))
        found.append(_date(sentence, match.start(), match.end(), year, match.group(0), form))
    for match in _YEAR.finditer(sentence.text):
        if any(a <= match.start() < b for a, b in covered):
            continue
        year = match.group(1)
        found.append(_date(sentence, match.start(), match.end(), year, match.group(0), form))
    return found


def _date(sentence: Sentence, start: int, end: int, year: str, text: str, form: str) -> Occurrence:
    value = int(year)
    if form == "decade":
        surface = f"{value // 10 * 10}s"
    elif form == "century":
        surface = text if text.endswith("s") else year
    elif form == "year":
        surface = year
    else:
        surface = text.strip()
    # a bare decade ("the 1990s") is a weaker answer to 'when' than a year or a date
    weight = 0.6 if text.endswith("s") and form != "decade" else 1.0
    key = f"{value // 10 * 10}s" if form == "decade" else year
    return Occurrence(key, surface, _token_at(sentence, start), _token_at(sentence, end - 1), weight, value)


def number_occurrences(sentence: Sentence) -> list[Occurrence]:
    dates = [(m.start(), m.end()) for m in _FULL_DATE.finditer(sentence.text)]
    found = []
    for match in _NUMBER.finditer(sentence.text):
        if any(a <= match.start() < b for a, b in dates):
            continue
        found.append(_number(sentence, match.start(), match.end(), match.group(0)))
    for i, word in enumerate(sentence.lowered):
        base = word.split("-")[0]
        if base in NUMBER_WORDS and not (word == "one" and sentence.lowered[i + 1: i + 2] == ("of",)):
            ordinal = base in ("first", "second", "third") or base.endswith("th")
            value = float(sum(NUMBER_WORDS.get(p, 0) for p in word.split("-")))
            found.append(Occurrence(fmt(value), sentence.word(i), i, i, 0.3 if ordinal else 0.7, value))
    return found


def _number(sentence: Sentence, start: int, end: int, text: str) -> Occurrence:
    digits = re.sub(r"[^\d.]", "", re.sub(r"(st|nd|rd|th)\b", "", text.split()[0]))
    value = float(digits or 0) * SCALES.get(text.split()[-1].lower(), 1.0)
    first, last = _token_at(sentence, start), _token_at(sentence, end - 1)
    surface, weight = text, 1.0
    if is_year(text):  # a year is rarely the answer to 'how many'
        before = sentence.lowered[first - 1] if first > 0 else ""
        weight = 0.2 if before in ("in", "since", "by", "from", "until", "of") else 0.5
    after = sentence.text[end:end + 1]
    if after == "%":
        surface = text + "%"
    elif last + 1 < len(sentence.tokens) and sentence.lowered[last + 1] in UNITS:
        surface, last = f"{text} {sentence.word(last + 1)}", last + 1
    return Occurrence(fmt(value), surface, first, last, weight, value)


def _span_occurrences(sentence: Sentence, kind: str, gazetteer: Gazetteer) -> list[Occurrence]:
    found = _title_subject(sentence)
    for a, b, source in named_spans(sentence, gazetteer):
        surface = span_text(sentence, a, b)
        weight = _span_weight(sentence, a, b, source, kind)
        if kind == "place":
            surface, b = _with_region(sentence, surface, a, b)
        found.append(Occurrence(key_of(surface.split(",")[0]), surface, a, b, weight))
    return found


def _typed(context: Context, sentence: Sentence, kind: str, found: list[Occurrence]) -> list[Occurrence]:
    """Weigh each name by whether its type, read from the evidence, is the asked one (answer_types)."""
    typed = []
    for occ in found:
        fit = type_fit(kind, context.asked_nouns, context.entity_types.get(occ.key),
                       context_type(sentence, occ.index, occ.end),
                       named_as(sentence, occ.index, occ.end, context.asked_nouns))
        if kind != "demonym" and is_modifier(sentence, occ.index, occ.end):
            fit *= MODIFIER
        typed.append(replace(occ, weight=occ.weight * fit) if fit != 1.0 else occ)
    return typed


def _title_subject(sentence: Sentence) -> list[Occurrence]:
    """'His doctoral students included X' on the page 'Max Born': the pronoun is the page's subject."""
    title = bare_title(sentence.title)
    if not (sentence.doc_id and title[:1].isupper() and sentence.lowered[:1]):
        return []
    if sentence.lowered[0] not in SUBJECT_PRONOUNS:
        return []
    return [Occurrence(key_of(title), title, 0, 0, 0.8)]


def _span_weight(sentence: Sentence, a: int, b: int, source: str, kind: str) -> float:
    """How well a name fits the asked type; 'demonym' asks for 'Belgian', 'Spanish', 'Chinese'."""
    if kind == "demonym":
        return 1.0 if a == b and _DEMONYM.search(sentence.lowered[a]) else 0.15
    words = sentence.lowered[a: b + 1]
    before = sentence.lowered[max(0, a - 2): a]
    cue = any(w in PLACE_CUES for w in before)
    institution = any(w in INSTITUTION_WORDS or w[:-1] in INSTITUTION_WORDS for w in words)
    if source == "lower":  # a concept named in lower case: never a person or a place
        return 0.1 if kind in ("person", "place") else 0.8
    known = source == "known"
    if a == 0 and b == 0 and not known:  # a lone capitalised first word is usually just grammar
        return 0.4
    if kind == "person":
        size = len([w for w in words if w not in CONNECTORS])
        weight = 1.0 if known or 2 <= size <= 4 else 0.6 if size == 1 else 0.4
        # 'Franck–Hertz experiment', 'United States', 'Nobel Prizes' are not people
        lower = any(sentence.word(i)[:1].islower() and w not in CONNECTORS for i, w in enumerate(words, a))
        if institution or lower or any(w in GEO_WORDS or w[:-1] in GEO_WORDS for w in words):
            weight *= 0.3
        return weight * (0.5 if cue else 1.0)
    if kind == "place":
        return (1.0 if cue else 0.6) * (1.1 if known else 1.0) * (0.3 if institution else 1.0)
    return 1.1 if known else 1.0


def _with_region(sentence: Sentence, surface: str, a: int, b: int) -> tuple[str, int]:
    """'Geneva, Switzerland': a place name followed by a comma and a larger place is one answer."""
    n = len(sentence.tokens)
    if b + 1 >= n or sentence.gap(b, b + 1).strip() != ",":
        return surface, b
    end = b + 1
    if not is_capitalised(sentence, end):
        return surface, b
    while end + 1 < n and end - b < 3 and gap_ok(sentence, end) and is_capitalised(sentence, end + 1):
        end += 1
    return span_text(sentence, a, end), end


# ---- aggregation --------------------------------------------------------------------------------


def proximity(stems: frozenset[str], idf: dict[str, float], sentence: Sentence, a: int, b: int) -> float:
    """Candidates near the question's words in a sentence, the rarer words most, are likelier answers."""
    nearest: dict[str, int] = {}
    for i, word in enumerate(sentence.lowered):
        if a <= i <= b or word in STOPWORDS:
            continue
        stem = word_stem(word)
        if stem in stems:
            # a comma between them puts the word in another clause: count it as farther away
            distance = (a - i if i < a else i - b) + 3 * abs(sentence.clauses[a] - sentence.clauses[i])
            nearest[stem] = min(nearest.get(stem, distance), distance)
    if not nearest:
        return 0.35
    unseen = idf[""]
    # a number the question names ('in 1962') pins the answer down more than any word
    weights = {stem: idf.get(stem, unseen) * (2.0 if stem.isdigit() else 1.0) for stem in nearest}
    total = sum(weights.values())
    close = sum(weights[stem] * math.exp(-(d - 1) / 6.0) for stem, d in nearest.items())
    return 0.35 + 0.65 * close / total


def _sentence_weights(sentences: list[Sentence]) -> list[float]:
    """Softly concentrate on the best sentences while letting repeated support add up."""
    best = max((s.score for s in sentences), default=0.0)
    return [max(s.score, 0.0) * math.exp((s.score - best) / 0.1) for s in sentences]


def tally(context: Context) -> list[Tally]:
    sentences = context.sentences
    totals: dict[str, list] = {}
    stems, idf = context.proximity_stems, context.idf
    for sentence, weight in zip(sentences, _sentence_weights(sentences)):
        if weight <= 1e-4:
            continue
        for occ in occurrences(context, sentence):
            gain = weight * occ.weight * proximity(stems, idf, sentence, occ.index, occ.end)
            entry = totals.setdefault(occ.key, [0.0, {}, []])
            entry[0] += gain
            entry[1][occ.surface] = entry[1].get(occ.surface, 0.0) + gain
            entry[2].append((gain, sentence))
    tallies = [
        Tally(key, _best_surface(surfaces), total, max(s.score for _, s in supports),
               tuple(sorted(supports, key=lambda x: -x[0])))
        for key, (total, surfaces, supports) in totals.items()
    ]
    # a surname alone is the same person; 'Vienna' is not the same place as 'University of Vienna'
    merged = _merge_partial_names(tallies) if context.answer_type.kind == "person" else tallies
    return sorted(merged, key=lambda t: -t.total)


def _best_surface(surfaces: dict[str, float]) -> str:
    # the longest form with real support: '7 February 1978' over '1978', 'Geneva, Switzerland' over 'Geneva'
    top = max(surfaces.values())
    return max((s for s, g in surfaces.items() if g >= 0.3 * top), key=lambda s: (len(s), surfaces[s]))


def _merge_partial_names(tallies: list[Tally]) -> list[Tally]:
    """Fold 'Coen' into the best-supported longer name that contains it ('Joel Coen')."""
    by_key = {t.key: t for t in tallies}
    for short in sorted(tallies, key=lambda t: len(t.key.split())):
        words = short.key.split()
        longer = [
            t for k, t in by_key.items()
            if k != short.key and len(k.split()) > len(words) and contains_run(k.split(), words)
        ]
        if longer and short.key in by_key:
            target = max(longer, key=lambda t: t.total)
            by_key[target.key] = replace(
                target, total=target.total + short.total,
                best_sentence=max(target.best_sentence, short.best_sentence),
                supports=tuple(sorted(target.supports + short.supports, key=lambda x: -x[0])),
            )
            del by_key[short.key]
    return list(by_key.values())
