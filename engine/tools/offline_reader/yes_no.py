"""Yes/no questions: does the best evidence support the question's claim, or contradict it?"""

from __future__ import annotations

import re

from engine.tools.base import Reading
from engine.tools.offline_reader.context import Context, cited, quote, relevance
from engine.tools.offline_reader.lexicon import NUMBER_WORDS, PLACE_CUES, is_negation
from engine.tools.offline_reader.mentions import mentioned, mentions_of, question_anchors
from engine.tools.offline_reader.names import key_of, named_spans, span_text
from engine.tools.offline_reader.records import Sentence
from engine.tools.offline_reader.sentences import (
    as_sentence,
    content_stems,
    content_stems_of,
    lexical_overlap,
)


def read_yes_no(context: Context) -> Reading:
    anchors = [a for a in question_anchors(context) if mentions_of(context, a)]
    if len(anchors) >= 2 and re.search(r"\bboth\b|\band\b", context.question, flags=re.IGNORECASE):
        return _yes_no_each(context, anchors)
    stems = context.question_stems
    best = max(context.ranked()[:3], key=lambda s: lexical_overlap(stems, s, context.idf))
    replaced, other = _substituted(context, best)
    support = lexical_overlap(stems - content_stems(replaced), best, context.idf)
    conflict = bool(replaced) or _contradicts(context, best)
    rel = relevance(best.score)
    if support >= 0.7 and not conflict:
        answer, confidence = "yes", 0.3 + 0.5 * rel * support
    elif support >= 0.6 and conflict:
        answer, confidence = "no", 0.3 + 0.4 * rel * support
    else:
        answer, confidence = "no", 0.15 * rel
    return Reading(
        answer=answer,
        citations=cited([best]),
        confidence=round(confidence, 4),
        rationale=f"{support:.0%} of the question's content found in {quote(best.text)}"
        + (f"; it says {other!r} where the question says {replaced!r}" if replaced else "")
        + ("; it negates or contradicts the question" if conflict and not replaced else ""),
    )


def _substituted(context: Context, sentence: Sentence) -> tuple[str, str]:
    """'Was X born in Paris?' read against '… born … in Warsaw': the slot holds another name."""
    question = as_sentence(context.question)
    for a, b, _ in named_spans(question, context.gazetteer):
        name = span_text(question, a, b)
        cue = question.lowered[a - 1] if a > 0 else ""
        if cue not in PLACE_CUES | {"by", "with", "for", "as"} or mentioned(name, [sentence]):
            continue
        for x, y, _ in named_spans(sentence, context.gazetteer):
            if x > 0 and sentence.lowered[x - 1] == cue and key_of(span_text(sentence, x, y)) != key_of(name):
                return name, span_text(sentence, x, y)
    return "", ""


def _contradicts(context: Context, sentence: Sentence) -> bool:
    """A negation the question lacks, or a number in the question the sentence replaces with another."""
    asked = context.question_words
    if any(is_negation(w) for w in sentence.lowered if w not in asked):
        return True
    numbers = {w for w in asked if w.isdigit() or w in NUMBER_WORDS}
    written = {w for w in sentence.lowered if w.isdigit() or w in NUMBER_WORDS}
    return bool(numbers) and bool(written) and not numbers & written


def _yes_no_each(context: Context, anchors: list[str]) -> Reading:
    """'Are A and B both X?': every named thing needs a sentence that supports the shared predicate."""
    predicate = context.question_stems - content_stems_of(anchors)
    checks = []
    for anchor in anchors[:4]:
        found = mentions_of(context, anchor)[:5]
        support, sentence = max(((lexical_overlap(predicate, s, context.idf), s) for _, _, s in found),
                                key=lambda x: x[0])
        checks.append((anchor, support, sentence, _contradicts(context, sentence)))
    supported = all(support >= 0.6 and not conflict for _, support, _, conflict in checks)
    weakest = min(support for _, support, _, _ in checks)
    confidence = 0.3 + 0.4 * weakest if supported else 0.2 + 0.3 * (1 - weakest)
    return Reading(
        answer="yes" if supported else "no",
        citations=cited(s for _, _, s, _ in checks),
        confidence=round(confidence * relevance(max(s.score for _, _, s, _ in checks)), 4),
        rationale="; ".join(
            f"{a}: {support:.0%} support in {quote(s.text, 80)}" for a, support, s, _ in checks
        ),
    )
