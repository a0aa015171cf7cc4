"""Shards of one evaluation (`eval --shard I/N` on several machines) joined back into the report a whole run writes.

Shards join only when their run cards say they asked the same thing of the same system: pack, methods, resolved
parameters, answer policy, backend, model and its options, encoder, judge, and the same question list cut into
the same number of shards. Anything else would mix results that do not compare, so it is refused, naming the field
and both values. Rows come back in a whole run's order (method by method, question by question in the unsharded
order), which the shards' own question lists give: shard I's p-th question is the whole list's (I-1)+N·p-th.
"""

from __future__ import annotations

import dataclasses
import json
from collections.abc import Sequence
from dataclasses import dataclass

from engine.errors import RagscopeError
from engine.evaluation.run_card import RunCard, read_run_card
from engine.evaluation.runner import QuestionResult
from engine.evaluation.saved import SavedEvaluation
from engine.evaluation.shards import Shard, question_list_fingerprint
from engine.trace import Trace

# Card fields that must be equal in every shard; "shard count" is checked beside them.
MUST_AGREE = ("pack_fingerprint", "methods", "params", "policy", "backend", "model", "backend_options", "embedder",
              "judge", "question_list", "question_total")
_NOT_COMPARED_OPTIONS = ("base_url",)  # machines may reach the one shared server by different addresses


@dataclass(frozen=True)
class Merged:
    results: tuple[QuestionResult, ...]
    traces: tuple[Trace, ...]
    card: RunCard
    notes: tuple[str, ...]  # what differs but does not stop the merge (ragscope version, commit)


def merge_shards(shards: Sequence[SavedEvaluation], *, partial: bool = False, out: str = "") -> Merged:
    """The shards as one report (its card's command: the whole run that writes it to `out`); a RagscopeError says
    why they cannot be joined."""
    if not shards:
        raise RagscopeError("no shard reports to merge: give the folders eval --shard I/N --out wrote")
    cards = [read_run_card(saved.card, str(saved.folder)) for saved in shards]
    parts = [_shard_of(card, saved) for card, saved in zip(cards, shards, strict=True)]
    _check_agree(shards, cards, parts)
    _check_disjoint(shards, parts)
    for saved, card in zip(shards, cards, strict=True):
        _check_complete(saved, card)
    count = parts[0].count
    present = sorted(part.index for part in parts)
    missing = tuple(f"{i}/{count}" for i in range(1, count + 1) if i not in present)
    if missing and not partial:
        raise RagscopeError(f"shard(s) {', '.join(missing)} missing: merge all {count}, or add --partial to write a "
                            "report of the questions these shards asked (its run card names the missing ones)")
    order = _whole_order(cards, parts)
    if not missing and question_list_fingerprint(order) != cards[0].question_list:
        raise RagscopeError("the shards' question ids do not make up the list their run cards name (question_list "
                            f"{cards[0].question_list}); a report was edited or mixed with another evaluation's")
    results, traces = _in_order(shards, cards[0].methods, order)
    card = dataclasses.replace(
        cards[0], questions=tuple(order), shard="merged from " + ", ".join(f"{i}/{count}" for i in present),
        missing_shards=missing, command=whole_command(cards[0].command, out), started=min(c.started for c in cards),
        finished=max(c.finished for c in cards))
    return Merged(results, traces, card, _notes(shards, cards))


def whole_command(command: Sequence[str], out: str) -> tuple[str, ...]:
    """A shard's eval command as the one whole run that writes the merged report: no --shard, --out the merge's."""
    kept: list[str] = []
    words = iter(command)
    for word in words:
        if word in ("--shard", "--out"):
            next(words, None)  # and its value
            continue
        kept.append(word)
    return tuple([*kept, "--out", out] if out else kept)


def _shard_of(card: RunCard, saved: SavedEvaluation) -> Shard:
    try:
        return Shard.parse(card.shard)
    except RagscopeError:
        raise RagscopeError(f"{saved.folder}: its run card's shard is {card.shard!r}, not I/N; merge the shards "
                            "eval --shard wrote, not a merged report") from None


def _check_agree(shards: Sequence[SavedEvaluation], cards: Sequence[RunCard], parts: Sequence[Shard]) -> None:
    first, head = cards[0], shards[0].folder
    for saved, card, part in zip(shards[1:], cards[1:], parts[1:], strict=True):
        for name in MUST_AGREE:
            mine, theirs = _compared(first, name), _compared(card, name)
            if mine != theirs:
                where, mine, theirs = _first_difference(name, mine, theirs)
                raise RagscopeError(f"the shards differ in {where}: {head} has {_shown(mine)}, {saved.folder} has "
                                    f"{_shown(theirs)}; merge only shards of one evaluation")
        if part.count != parts[0].count:
            raise RagscopeError(f"the shards differ in shard count: {head} is {parts[0]}, {saved.folder} is {part}; "
                                "merge only shards of one --shard I/N split")


def _compared(card: RunCard, name: str) -> object:
    value = getattr(card, name)
    if name == "backend_options":
        return {k: v for k, v in value.items() if k not in _NOT_COMPARED_OPTIONS}
    return value


def _first_difference(name: str, mine: object, theirs: object) -> tuple[str, object, object]:
    """Where two card values first differ: params.ras.k and its two values, not two whole parameter tables."""
    if isinstance(mine, dict) and isinstance(theirs, dict):
        for key in [*mine, *(k for k in theirs if k not in mine)]:
            if mine.get(key, _ABSENT) != theirs.get(key, _ABSENT):
                return _first_difference(f"{name}.{key}", mine.get(key, _ABSENT), theirs.get(key, _ABSENT))
    return name, mine, theirs


class _Absent:
    def __repr__(self) -> str:
        return "nothing"


_ABSENT = _Absent()


def _shown(value: object) -> str:
    text = repr(value)
    return text if len(text) <= 200 else text[:200] + "…"


def _check_disjoint(shards: Sequence[SavedEvaluation], parts: Sequence[Shard]) -> None:
    seen: dict[int, SavedEvaluation] = {}
    for saved, part in zip(shards, parts, strict=True):
        if part.index in seen:
            raise RagscopeError(f"shard {part} given twice: {seen[part.index].folder} and {saved.folder}")
        seen[part.index] = saved
    asked: dict[tuple[str, str], SavedEvaluation] = {}
    for saved in shards:
        for result in saved.results:
            key = (result.method, result.question_id)
            if key in asked:
                raise RagscopeError(f"question {result.question_id!r} ({result.method}) is in two shards: "
                                    f"{asked[key].folder} and {saved.folder}")
            asked[key] = saved


def _check_complete(saved: SavedEvaluation, card: RunCard) -> None:
    """The report holds exactly its card's methods × questions (a report is written whole; this finds edits)."""
    expected = {(method, qid) for method in card.methods for qid in card.questions}
    found = {(r.method, r.question_id) for r in saved.results}
    if found != expected:
        odd = sorted(expected ^ found)[0]
        raise RagscopeError(f"{saved.folder}: its results are not its run card's {len(card.methods)} method(s) × "
                            f"{len(card.questions)} question(s) (first difference: {odd[1]!r}, {odd[0]})")


def _whole_order(cards: Sequence[RunCard], parts: Sequence[Shard]) -> list[str]:
    placed = sorted(((part.index - 1) + part.count * position, qid)
                    for card, part in zip(cards, parts, strict=True) for position, qid in enumerate(card.questions))
    return [qid for _, qid in placed]


def _in_order(shards: Sequence[SavedEvaluation], methods: Sequence[str], order: Sequence[str]
              ) -> tuple[tuple[QuestionResult, ...], tuple[Trace, ...]]:
    pairs = {(r.method, r.question_id): (r, t) for saved in shards for r, t in zip(saved.results, saved.traces,
                                                                                    strict=True)}
    chosen = [pairs[(method, qid)] for method in methods for qid in order]
    return tuple(r for r, _ in chosen), tuple(t for _, t in chosen)


def _notes(shards: Sequence[SavedEvaluation], cards: Sequence[RunCard]) -> tuple[str, ...]:
    """What differs between shards without changing what they asked: the code and library versions."""
    notes = []
    for name, what in (("version", "ragscope versions"), ("commit", "ragscope commits"), ("libraries", "libraries")):
        if len({json.dumps(getattr(card, name), sort_keys=True) for card in cards}) > 1:
            where = ", ".join(f"{saved.folder}: {getattr(card, name) or '–'}"
                              for saved, card in zip(shards, cards, strict=True))
            notes.append(f"the shards ran different {what} ({where})")
    return tuple(notes)
