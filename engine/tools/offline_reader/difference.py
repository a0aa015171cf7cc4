"""Time differences ('how many years after …', 'how old was X when …'): two years read and subtracted."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from engine.text import contains_run
from engine.tools.base import Reading
from engine.tools.calculator import calculation_step
from engine.tools.offline_reader.candidates import date_occurrences, proximity
from engine.tools.offline_reader.context import Context, cited, fmt, quote, relevance
from engine.tools.offline_reader.lexicon import DEATH_WORDS, NUMBER_WORDS, lower_words
from engine.tools.offline_reader.mentions import life_year, mentions_of, question_anchors
from engine.tools.offline_reader.names import key_of
from engine.tools.offline_reader.records import Sentence
from engine.tools.offline_reader.sentences import bare_title, content_stems, lexical_overlap

_AGE = re.compile(
    r"\b(?:at the age of|aged|at age)\s+(\d+|[a-z]+(?:-[a-z]+)?)\b"
    r"|\b(\d+|[a-z]+(?:-[a-z]+)?)\s+years?\s+old\b",
    flags=re.IGNORECASE,
)
OTHER_SUBJECT = 0.2  # a year from a sentence about the other side of a difference
_SPAN_UNITS = r"(?:years|months|days|decades|centuries)"
_AUX_RE = r"(?:did|was|were|is|are|does|do|had|has|have|would)"
_PRONOUN = re.compile(r"\b(?:he|she|they|his|her|hers|their|its|it|him|them)\b", flags=re.IGNORECASE)


@dataclass(frozen=True)
class _Event:
    """One side of a time difference: what happened, to whom, and which year of it counts."""

    text: str
    anchor: str = ""
    mode: str = "any"  # any | birth | death | start | pair (two years of one event) | range


def asks_difference(asked: frozenset[str]) -> bool:
    if "how" in asked and "many" in asked and asked & {"years", "decades", "centuries"}:
        return True
    return "how" in asked and "old" in asked and "when" in asked


def _difference_events(context: Context) -> list[_Event]:
    """Split 'how many years after A did B' (and its kin) into the events whose years differ."""
    q = " ".join(context.question.strip().rstrip("?.! ").split())
    anchors = question_anchors(context)
    patterns = (
        (rf"how old {_AUX_RE} (?P<a>.+?)(?:,[^,]*,)? (?:when|at the time) (?P<b>.+)", "birth", "any"),
        (rf"how many {_SPAN_UNITS} (?:older|younger|newer) {_AUX_RE} (?P<a>.+?) than (?P<b>.+)",
         "start", "start"),
        (rf"how many {_SPAN_UNITS} (?:after|before|later than|earlier than) (?P<a>.+?) {_AUX_RE} (?P<b>.+)",
         "any", "any"),
        (rf"how many {_SPAN_UNITS} .*?\bbetween (?P<a>.+?) and (?P<b>.+)", "any", "any"),
        (rf"how many {_SPAN_UNITS} {_AUX_RE} (?P<a>.+?) (?:before|after|until|prior to) (?P<b>.+)",
         "any", "any"),
        (rf"how many {_SPAN_UNITS} .*?\bbetween (?P<a>.+)", "pair", ""),
        (rf"how many {_SPAN_UNITS} {_AUX_RE} (?P<a>.+)", "range", ""),
    )
    for pattern, mode_a, mode_b in patterns:
        match = re.search(pattern, q, flags=re.IGNORECASE)
        if match:
            return _events_from(match.groupdict(), mode_a, mode_b, anchors)
    return []


def _events_from(parts: dict[str, str | None], mode_a: str, mode_b: str, anchors: list[str]) -> list[_Event]:
    a = parts.get("a") or ""
    anchor_a = _anchor_in(a, anchors) or (anchors[0] if anchors else "")
    events = [_Event(a, anchor_a, _life_mode(a, mode_a))]
    b = parts.get("b")
    if b:
        b = _PRONOUN.sub(anchor_a, b) if anchor_a else b
        anchor_b = _anchor_in(b, anchors) or anchor_a
        events.append(_Event(b, anchor_b, _life_mode(b, mode_b)))
        if len(content_stems(a) - content_stems(anchor_a)) == 0:  # 'after polonium was francium discovered'
            verb = " ".join(sorted(content_stems(b) - content_stems(anchor_b)))
            events[0] = replace(events[0], text=f"{a} {verb}")
    elif anchor_a and _PRONOUN.search(a):
        events[0] = replace(events[0], text=_PRONOUN.sub(anchor_a, a))
    return events


def _anchor_in(text: str, anchors: list[str]) -> str:
    lowered = text.lower()
    return next((a for a in anchors if a.lower() in lowered), "")


def _life_mode(text: str, mode: str) -> str:
    words = set(lower_words(text))
    if mode in ("any", "birth") and words & {"born", "birth"}:
        return "birth"
    if mode == "any" and words & DEATH_WORDS:
        return "death"
    return mode


def read_difference(context: Context) -> Reading | None:
    events = _difference_events(context)
    if not events:
        return None
    if "old" in context.question_words and len(events) == 2:
        stated = _stated_age(context, events[1])
        if stated is not None:
            return stated
    found = _event_years(context, events)
    if len(found) < 2:
        return None
    (a, sa), (b, sb) = found[:2]
    step = calculation_step(f"{max(a, b)} - {min(a, b)}")
    if step.result is None:
        return None
    used = [s for s in (sa, sb) if s is not None]
    support = sum(relevance(s.score) for s in used) / len(used) if used else 1.0
    return Reading(
        answer=fmt(step.result),
        citations=cited(used),
        confidence=round(0.3 + 0.5 * support, 4),
        rationale=f"difference of years {step.expression} = {fmt(step.result)}"
        + "".join(f"; from {quote(s.text, 100)}" for s in dict.fromkeys(used)),
        steps=(step,),
    )


def _stated_age(context: Context, event: _Event) -> Reading | None:
    """'died … at the age of thirty-six': an age the evidence states beats one computed from years."""
    stems = content_stems(event.text)
    ranked = sorted(
        context.sentences, key=lambda s: -(lexical_overlap(stems, s, context.idf) + 0.1 * s.score)
    )
    for sentence in ranked[:2]:
        match = _AGE.search(sentence.text)
        if match and lexical_overlap(stems, sentence, context.idf) >= 0.5:
            age = match.group(1) or match.group(2)
            value = NUMBER_WORDS.get(age.lower()) if "-" not in age else None
            if "-" in age and all(p in NUMBER_WORDS for p in age.lower().split("-")):
                value = sum(NUMBER_WORDS[p] for p in age.lower().split("-"))
            age = str(value) if value is not None else age
            if not age.isdigit():
                continue
            return Reading(
                answer=age,
                citations=cited([sentence]),
                confidence=round(0.3 + 0.5 * relevance(sentence.score), 4),
                rationale=f"age stated in {quote(sentence.text)}",
            )
    return None


def _event_years(context: Context, events: list[_Event]) -> list[tuple[int, Sentence | None]]:
    if len(events) == 1:
        return _years_of_one_event(context, events[0])
    found: list[tuple[int, Sentence | None]] = []
    for event in events:
        others = tuple(e.anchor for e in events if e.anchor and key_of(e.anchor) != key_of(event.anchor))
        year = _event_year(context, event, {y for y, _ in found}, others)
        if year is None:
            return []
        found.append(year)
    return found


def _event_year(
    context: Context, event: _Event, exclude: set[int], others: tuple[str, ...] = ()
) -> tuple[int, Sentence | None] | None:
    literal = re.fullmatch(r"\s*(?:the year\s+)?(\d{3,4})\s*", event.text)
    if literal:
        return int(literal.group(1)), None
    if event.mode in ("birth", "death", "start") and event.anchor:
        mode = "earliest" if event.mode == "start" else event.mode
        found = life_year(mentions_of(context, event.anchor), mode, exclude)
        if found is not None:
            return found
    ranked = _years_by_fit(context, event, exclude, others)
    return ranked[0] if ranked else None


def _years_by_fit(
    context: Context, event: _Event, exclude: set[int], others: tuple[str, ...] = ()
) -> list[tuple[int, Sentence]]:
    """Years ranked by how well their sentence and their neighbourhood match the event's words. A sentence
    about another side of the difference ('The Brask Cup was founded in 1954 … first held in 1957') gives
    its years to that side, not this one: each operand comes from its own entity."""
    stems = content_stems(event.text)
    scored: dict[int, tuple[float, Sentence]] = {}
    for sentence in context.sentences:
        overlap = lexical_overlap(stems, sentence, context.idf)
        if overlap <= 0:
            continue
        if any(_about(sentence, other) for other in others) and not _about(sentence, event.anchor):
            overlap *= OTHER_SUBJECT
        for occ in date_occurrences(sentence, "year"):
            year = int(occ.value or 0)
            if year in exclude:
                continue
            near = proximity(stems, context.idf, sentence, occ.index, occ.end)
            fit = overlap * near + 0.1 * sentence.score
            if fit > scored.get(year, (0.0, sentence))[0]:
                scored[year] = (fit, sentence)
    return [(year, s) for year, (fit, s) in sorted(scored.items(), key=lambda kv: -kv[1][0])]


def _about(sentence: Sentence, anchor: str) -> bool:
    """Is the sentence about this name: its page's title, or the name it opens with?"""
    words = key_of(anchor).split()
    if not words:
        return False
    title = key_of(bare_title(sentence.title)).split()
    opening = list(sentence.lowered[: len(words) + 1])
    return contains_run(title, words) or contains_run(opening, words)


def _years_of_one_event(context: Context, event: _Event) -> list[tuple[int, Sentence | None]]:
    """'between Marie Curie's two Nobel Prizes' or 'for how many years did X direct Y'."""
    ranked = _years_by_fit(context, event, set())
    if event.mode == "range" and ranked:
        best = ranked[0][1]
        years = list(dict.fromkeys(int(o.value or 0) for o in date_occurrences(best, "year")))
        return [(y, best) for y in years[:2]] if len(years) >= 2 else []
    return [(year, s) for year, s in ranked[:2]]
