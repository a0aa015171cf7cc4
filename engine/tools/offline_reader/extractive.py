"""Extractive reading: the best-supported candidate(s) of the asked type, and the documents behind them."""

from __future__ import annotations

from collections.abc import Sequence

from engine.text import STOPWORDS
from engine.tools.base import Reading
from engine.tools.offline_reader.candidates import tally
from engine.tools.offline_reader.context import Context, cited, quote, refusal, relevance
from engine.tools.offline_reader.lexicon import NUMBER_WORDS, ORDINALS, lower_words
from engine.tools.offline_reader.records import Sentence, Tally


def read_extractive(context: Context) -> Reading:
    tallies = tally(context)
    kind = context.answer_type.kind
    if not tallies:
        return refusal(
            f"no {kind} candidate found in the evidence; best sentence: {quote(context.ranked()[0].text)}"
        )
    chosen = _chosen(tallies, _wanted_count(context))
    first = chosen[0]
    rest = [t.total for t in tallies if t not in chosen]
    runner = max(rest, default=0.0)
    margin = (min(t.total for t in chosen) - runner) / first.total if first.total > 0 else 0.0
    confidence = relevance(first.best_sentence) * (0.35 + 0.65 * max(0.0, margin))
    shown = ", ".join(f"{t.surface} ({t.total:.2f})" for t in tallies[:4])
    return Reading(
        answer=_join([t.surface for t in chosen]),
        citations=tuple(dict.fromkeys(c for t in chosen for c in _citations(t.supports)))[:5],
        confidence=round(min(1.0, confidence), 4),
        rationale=f"{kind} question; read from {quote(first.supports[0][1].text)}; candidates: {shown}",
    )


def _citations(supports: Sequence[tuple[float, Sentence]], limit: int = 3) -> tuple[str, ...]:
    if not supports:
        return ()
    top = supports[0][0]
    return cited(s for gain, s in supports if gain >= 0.25 * top)[:limit]


def _wanted_count(context: Context) -> int:
    """How many answers the question wants: 1, a number it states ('which two'), or 0 for 'all'."""
    words = lower_words(context.question)
    for i, word in enumerate(words):
        after = words[i + 1: i + 4]
        if word not in ("which", "what", "who") or not after:
            continue
        if after[0] in NUMBER_WORDS and 2 <= NUMBER_WORDS[after[0]] <= 10 and after[0] not in ORDINALS:
            return NUMBER_WORDS[after[0]]
        if after[0] == "both":
            return 2
        if word == "who" and after[0] in ("were", "are", "shared"):
            return 0
        window = []
        for token in after:
            if token in STOPWORDS:
                break
            window.append(token)
        if word != "who" and any(_plural(t) for t in window):
            return 0
    return 1


def _plural(word: str) -> bool:
    return (len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is", "ics"))
            and word not in ("series", "species", "news"))


def _chosen(tallies: list[Tally], wanted: int) -> list[Tally]:
    if wanted == 1:
        return tallies[:1]
    top = tallies[0].total
    cut = 0.15 if wanted > 1 else 0.35  # a stated count is trusted further down the ranking
    return [t for t in tallies[: wanted or 5] if t.total >= cut * top]


def _join(items: list[str]) -> str:
    return items[0] if len(items) == 1 else f"{', '.join(items[:-1])} and {items[-1]}"
