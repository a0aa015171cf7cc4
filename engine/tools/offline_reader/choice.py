"""Comparison questions ('A or B'): compare the options' years or numbers, else the best-supported one."""

from __future__ import annotations

from engine.tools.base import Reading
from engine.tools.calculator import calculation_step
from engine.tools.offline_reader.context import Context, cited, fmt, quote, refusal, relevance
from engine.tools.offline_reader.lexicon import BIRTH_WORDS, DEATH_WORDS, TEMPORAL_WORDS, is_negation
from engine.tools.offline_reader.mentions import life_year, mentions_of, number_near
from engine.tools.offline_reader.records import Sentence
from engine.tools.offline_reader.sentences import content_stems_of, lexical_overlap


def read_choice(context: Context) -> Reading:
    options = context.answer_type.options
    mentions = [mentions_of(context, option) for option in options]
    if not any(mentions):
        return refusal(f"none of the options {', '.join(options)} is mentioned in the evidence")
    if context.answer_type.order:
        reading = _compare_options(context, options, mentions)
        if reading is not None:
            return reading
    return _choose_by_relevance(context, options, mentions)


def _compare_options(context: Context, options: tuple[str, ...], mentions: list) -> Reading | None:
    asked = context.question_words
    temporal = bool(asked & TEMPORAL_WORDS) and not asked & {"more", "larger", "bigger", "higher"}
    option_stems = content_stems_of(options)
    values: list[tuple[float, Sentence]] = []
    for found in mentions:
        if temporal and asked & {"lived", "life", "lifespan", "lifetime"}:
            value = _lifespan(found)
        elif temporal:
            value = life_year(found, _temporal_mode(asked))
        else:
            value = next(
                ((v, s) for _, position, s in found[:4]
                 if (v := number_near(context, s, position, option_stems)) is not None),
                None,
            )
        if value is None:
            return None
        values.append((float(value[0]), value[1]))
    order = context.answer_type.order
    step = calculation_step(f"{order}({', '.join(fmt(v) for v, _ in values)})")
    winners = [i for i, (v, _) in enumerate(values) if step.result is not None and v == step.result]
    if len(winners) != 1:
        return None
    support = sum(relevance(s.score) for _, s in values) / len(values)
    sentence = values[winners[0]][1]
    what = "years" if temporal else "numbers"
    return Reading(
        answer=options[winners[0]],
        citations=cited(s for _, s in values),
        confidence=round(0.45 + 0.45 * support, 4),
        rationale=f"compared {what} {step.expression} → {fmt(step.result or 0)}; "
        f"from {quote(sentence.text)}",
        steps=(step,),
    )


def _lifespan(mentions: list[tuple[float, int, Sentence]]) -> tuple[int, Sentence] | None:
    """'Who lived longer': years from birth to death, both read near the name."""
    born, died = life_year(mentions, "birth"), life_year(mentions, "death")
    if born is None or died is None or died[0] < born[0]:
        return None
    return died[0] - born[0], died[1]


def _negated_at(sentence: Sentence, position: int) -> bool:
    """'The capital is Bern, not Zurich': a negation just before a mention speaks against it."""
    if position < 0:
        return False
    return any(is_negation(w) for w in sentence.lowered[max(0, position - 3): position])


def _temporal_mode(asked: frozenset[str]) -> str:
    if asked & DEATH_WORDS:
        return "death"
    if asked & (BIRTH_WORDS | {"older", "oldest", "younger", "youngest"}):
        return "birth"
    return "earliest"


def _choose_by_relevance(context: Context, options: tuple[str, ...], mentions: list) -> Reading:
    predicate = context.question_stems - content_stems_of(options)
    scores = []
    for found in mentions:
        best = max(
            ((strength * (0.5 * lexical_overlap(predicate, s, context.idf) + 0.5 * s.score)
              * (0.2 if _negated_at(s, position) else 1.0), s)
             for strength, position, s in found[:6]),
            key=lambda x: x[0], default=(0.0, None),
        )
        scores.append(best)
    ranked = sorted(range(len(options)), key=lambda i: -scores[i][0])
    top, runner = scores[ranked[0]][0], scores[ranked[1]][0] if len(ranked) > 1 else 0.0
    margin = (top - runner) / top if top > 0 else 0.0
    sentence = scores[ranked[0]][1]
    return Reading(
        answer=options[ranked[0]],
        citations=cited([sentence]),
        confidence=round(min(1.0, 0.15 + 0.6 * margin * relevance(top)), 4),
        rationale=f"no comparable values found; chose the option whose evidence best matches the question "
        f"({', '.join(f'{options[i]} {scores[i][0]:.2f}' for i in ranked)})",
    )
