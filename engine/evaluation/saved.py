"""An evaluation report folder read back (`eval --out`): its per-question results, its traces and its run card.

What `compare-evals` and `merge-evals` read. results.csv holds every `QuestionResult` field as text; each is
converted back by the field's type, so a report round-trips exactly (floats as Python printed them). A report
written before a field existed reads that field's default; a row that does not parse is named by line.
"""

from __future__ import annotations

import csv
import io
import json
import types
import typing
from dataclasses import MISSING, dataclass, fields
from pathlib import Path
from typing import Any

from engine.errors import RagscopeError
from engine.evaluation.runner import QuestionResult
from engine.export.traces_file import read_traces
from engine.trace import Trace

RESULTS, TRACES, METRICS, RUN_CARD = "results.csv", "traces.jsonl", "metrics.json", "run_card.json"
_TYPES = typing.get_type_hints(QuestionResult)


@dataclass(frozen=True)
class SavedEvaluation:
    folder: Path
    results: tuple[QuestionResult, ...]
    traces: tuple[Trace, ...]  # in the results' order: traces[i] is results[i]'s run
    card: dict[str, Any] | None  # run_card.json; None for a report written before run cards


def read_evaluation(folder: Path) -> SavedEvaluation:
    """The report in `folder`; a RagscopeError says what is missing or unreadable there."""
    if not folder.is_dir():
        raise RagscopeError(f"{folder}: not an evaluation report folder (give the folder eval --out wrote)")
    for name in (RESULTS, TRACES):
        if not (folder / name).is_file():
            raise RagscopeError(f"{folder}: no {name} (give the folder eval --out wrote)")
    results = parse_results(read_text(folder / RESULTS), str(folder / RESULTS))
    by_id = {trace.id: trace for trace in read_traces(folder / TRACES)}
    missing = [r.trace_id for r in results if r.trace_id not in by_id]
    if missing:
        raise RagscopeError(f"{folder}: {len(missing)} result row(s) have no trace in {TRACES} "
                            f"(first: {missing[0]!r})")
    card_path = folder / RUN_CARD
    card = _card(card_path) if card_path.is_file() else None
    return SavedEvaluation(folder, tuple(results), tuple(by_id[r.trace_id] for r in results), card)


def _card(path: Path) -> dict[str, Any]:
    try:
        card = json.loads(read_text(path))
    except json.JSONDecodeError as exc:
        raise RagscopeError(f"{path}: not JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(card, dict):
        raise RagscopeError(f"{path}: not a run card (a JSON object)")
    return card


def read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RagscopeError(f"{path}: not UTF-8 text (byte {exc.start})") from None


def parse_results(text: str, label: str = RESULTS) -> list[QuestionResult]:
    """results.csv's rows as `QuestionResult`s; an unknown column is ignored, a missing one takes its default."""
    rows = []
    for number, row in enumerate(csv.DictReader(io.StringIO(text, newline="")), start=2):
        values = {}
        for field in fields(QuestionResult):
            if field.name in row and row[field.name] is not None:
                values[field.name] = _value(_TYPES[field.name], row[field.name], f"{label}:{number}: {field.name}")
            elif field.default is MISSING:
                raise RagscopeError(f"{label}:{number}: no {field.name} column; not a results.csv ragscope wrote")
        rows.append(QuestionResult(**values))
    return rows


def _value(tp: Any, text: str, where: str) -> Any:
    """`text` as csv.DictWriter wrote a value of type `tp`: None as "", bools as True/False."""
    optional = isinstance(tp, types.UnionType) and type(None) in tp.__args__
    base = next(a for a in tp.__args__ if a is not type(None)) if optional else tp
    if optional and text == "":
        return None
    try:
        if base is bool:
            if text not in ("True", "False"):
                raise ValueError(text)
            return text == "True"
        return base(text)
    except ValueError:
        raise RagscopeError(f"{where}: {text[:40]!r} is not a {base.__name__}") from None
