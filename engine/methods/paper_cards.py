"""Reproduce-a-paper cards: per method, the paper's setting and number beside ours, the deviations, one `eval`
command running the closest setting we can, and the range that command is expected to give.

One TOML file per method, next to its code (engine/methods/<id>/paper_card.toml), so a method's card travels with
it. Numbers are quoted from the papers (as the project's method specs quote them), naming the table. The
expected range is measured, not guessed: `bench/paper_ranges.py` runs each card's command on the offline backend
and writes the metric's bootstrap 95 % interval back (engine.evaluation.bootstrap); a card whose dataset is not
on the measuring machine says "not measured here".
"""

from __future__ import annotations

import shlex
import tomllib
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import RagscopeError

CARD_FILE = "paper_card.toml"
METHODS_DIR = Path(__file__).resolve().parent
PREFIX = ("python", "-m", "engine")
METRICS = ("em", "f1", "acc", "crag")  # per-question scores a range can be about (`question_scores`)


@dataclass(frozen=True)
class Setting:
    """Where a number comes from: the model, the retriever and its k, the data and the metric."""

    model: str
    retriever: str
    k: str
    dataset: str
    metric: str


@dataclass(frozen=True)
class Expected:
    """What `command` gives on `backend`: the mean of `metric` over `n` questions and its 95 % interval."""

    backend: str
    metric: str  # one of METRICS
    measured: bool
    note: str  # how and when it was measured, or why it was not
    estimate: float | None = None
    low: float | None = None
    high: float | None = None
    n: int = 0

    def __str__(self) -> str:
        if not self.measured:
            return f"not measured here ({self.note})" if self.note else "not measured here"
        return f"{self.metric} {self.estimate:.3f} [{self.low:.3f}, {self.high:.3f}] (n = {self.n}, {self.backend})"


@dataclass(frozen=True)
class PaperCard:
    method: str
    title: str  # the paper
    source: str  # which table and row the number is from
    paper: Setting
    number: str  # the paper's number as quoted ("42.1", ".6675 / .3605")
    value: float  # that number on our 0..1 scale, beside `expected`
    ours: Setting
    deviations: tuple[str, ...]
    prepare: str  # the import command that builds the pack `command` reads
    command: str  # one `python -m engine eval …`
    expected: Expected

    def argv(self) -> list[str]:
        """`command` as the argument list `engine.cli.main` takes (without `python -m engine`)."""
        return command_argv(self.command)


def command_argv(command: str) -> list[str]:
    words = shlex.split(command)
    if tuple(words[: len(PREFIX)]) != PREFIX:
        raise RagscopeError(f"{command!r} does not start with {' '.join(PREFIX)}")
    return words[len(PREFIX):]


def card_path(method: str) -> Path:
    return METHODS_DIR / method / CARD_FILE


def paper_card(method: str) -> PaperCard | None:
    """The method's card, or None for a method without one (a user's own method)."""
    path = card_path(method)
    return load_card(path) if path.is_file() else None


def paper_cards(methods: Sequence[str] | None = None) -> dict[str, PaperCard]:
    """Every registered method's card that exists, in the registry's order."""
    from engine.methods.base import method_ids

    found = {method: paper_card(method) for method in (methods if methods is not None else method_ids())}
    return {method: card for method, card in found.items() if card is not None}


def load_card(path: Path) -> PaperCard:
    """A card file read and checked; a missing key or a bad value is named with the file."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise RagscopeError(f"{path}: not a readable paper card ({exc})") from None
    try:
        expected = Expected(**data["expected"])
        card = PaperCard(
            method=data["method"], title=data["title"], source=data["source"], paper=Setting(**data["paper"]),
            number=str(data["number"]), value=float(data["value"]), ours=Setting(**data["ours"]),
            deviations=tuple(data["deviations"]), prepare=data["prepare"], command=data["command"],
            expected=expected)
    except (KeyError, TypeError) as exc:
        raise RagscopeError(f"{path}: {exc} — a paper card needs method, title, source, [paper], number, value, "
                            "[ours], deviations, prepare, command and [expected]") from None
    if expected.metric not in METRICS:
        raise RagscopeError(f"{path}: expected metric {expected.metric!r}; one of {', '.join(METRICS)}")
    command_argv(card.command)
    return card


def question_scores(results: Sequence[Any], metric: str) -> list[float]:
    """Each result's score in `metric` (QuestionResults of one method): em, f1, acc as scored; crag is the CRAG
    per-answer score, +1 correct, −1 hallucinated, 0 missing (its mean is the CRAG score)."""
    if metric == "crag":
        from engine.evaluation.metrics import crag_score

        return [crag_score(r.outcome) for r in results]
    if metric not in METRICS:
        raise RagscopeError(f"metric {metric!r}; one of {', '.join(METRICS)}")
    return [float(getattr(r, metric)) for r in results]
