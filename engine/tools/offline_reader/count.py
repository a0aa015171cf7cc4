"""'How many …' answered by counting the names listed in the best sentence."""

from __future__ import annotations

import re

from engine.tools.base import Reading
from engine.tools.offline_reader.candidates import in_question, occurrences
from engine.tools.offline_reader.context import Context, cited, quote, relevance
from engine.tools.offline_reader.names import key_of, named_spans, span_text
from engine.tools.offline_reader.records import Sentence


def asks_count(question: str) -> bool:
    return re.search(r"\bhow many\b", question, flags=re.IGNORECASE) is not None


def read_count(context: Context) -> Reading | None:
    """'How many …' answered by a list ('A, B and C') in the best sentence when it states no number."""
    ranked = context.ranked()
    top = ranked[0]
    # a number written in any of the best sentences is a better answer than a count of names
    if any(occurrences(context, s) for s in ranked[:3]):
        return None
    items = _list_items(context, top)
    if len(items) < 2:
        return None
    return Reading(
        answer=str(len(items)),
        citations=cited([top]),
        confidence=round(0.6 * relevance(top.score), 4),
        rationale=f"counted {len(items)} named items ({', '.join(items)}) in {quote(top.text)}",
    )


def _list_items(context: Context, sentence: Sentence) -> list[str]:
    spans = named_spans(sentence, context.gazetteer)
    best: list[tuple[int, int, bool]] = []
    run: list[tuple[int, int, bool]] = []
    for span in spans:
        if run:
            gap = sentence.gap(run[-1][1], span[0])
            if not re.fullmatch(r"\s*(?:,|;|,?\s*and|,?\s*&)\s*", gap):
                run = []
        run = run + [span]
        best = run if len(run) > len(best) else best
    names = [span_text(sentence, a, b) for a, b, _ in best]
    return [n for n in names if not in_question(key_of(n), context.question_words)]
