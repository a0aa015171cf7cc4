"""Run history: traces stored as JSON in SQLite (WAL, so the UI reads while a run is saved)."""

from __future__ import annotations

import json
import sqlite3
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

from engine.codec import loads_bounded
from engine.errors import PackError, RagscopeError
from engine.trace import Trace

_SCHEMA = """
CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    started TEXT NOT NULL,
    pack TEXT NOT NULL,
    method TEXT NOT NULL,
    backend TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    latency_ms REAL NOT NULL,
    trace TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS runs_started ON runs (started);
"""


@dataclass(frozen=True)
class RunSummary:
    id: str
    started: str
    pack: str
    method: str
    backend: str
    question: str
    answer: str
    latency_ms: float


@dataclass(frozen=True)
class ImportCount:
    """What an import did: runs added, and runs skipped because the store already held them."""

    imported: int
    already_there: int


class RunStore:
    """One connection per call: sqlite3 connections must not cross threads (Streamlit sessions)."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.path.parent.mkdir(parents=True, exist_ok=True)
        with self._connect() as db:
            db.execute("PRAGMA journal_mode=WAL")
            db.executescript(_SCHEMA)

    @contextmanager
    def _connect(self) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=10)
        try:
            with db:
                yield db
        finally:
            db.close()

    def save(self, trace: Trace) -> None:
        """Store a live run; saving the same run again (a resumed or re-saved run) updates it."""
        with self._connect() as db:
            db.execute("INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?,?)", _row(trace))

    def list(self, limit: int = 200) -> list[RunSummary]:
        with self._connect() as db:
            rows = db.execute(
                "SELECT id, started, pack, method, backend, question, answer, latency_ms FROM runs "
                "ORDER BY started DESC, rowid DESC LIMIT ?", (limit,)).fetchall()
        return [RunSummary(*row) for row in rows]

    def get(self, run_id: str) -> Trace:
        with self._connect() as db:
            row = db.execute("SELECT trace FROM runs WHERE id = ?", (run_id,)).fetchone()
        if row is None:
            raise RagscopeError(f"no saved run with id {run_id!r}")
        return Trace.from_json(row[0], f"saved run {run_id!r}")

    def has(self, run_id: str) -> bool:
        with self._connect() as db:
            return db.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is not None

    def delete(self, run_id: str) -> bool:
        with self._connect() as db:
            return db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount > 0

    def export(self, run_ids: list[str]) -> str:
        """A JSON list of traces, for sharing or backup."""
        return json.dumps([self.get(i).to_dict() for i in run_ids], ensure_ascii=False)

    def import_json(self, text: str, label: str = "export") -> ImportCount:
        """Add the runs of an export, all or nothing; a run already stored is skipped, not copied again.

        Every trace is checked field by field before anything is written (a PackError lists each
        problem). A run whose id is free is added. One whose id is taken by the very same run (a
        re-import) is skipped, as is one an earlier import already added under a new id; any other
        taken id (a crafted file, or an edited run) gets a new id: replacing would let any file
        rewrite a user's history (issue 15), and copying again doubled it on every re-import (issue 22).
        """
        data = loads_bounded(text, label)
        problems: list[str] = []
        traces: list[Trace] = []
        for n, item in enumerate(data if isinstance(data, list) else [data], start=1):
            try:
                traces.append(Trace.from_dict(item, f"{label}: run {n}"))
            except RagscopeError as exc:
                problems.append(str(exc))
        if problems:
            raise PackError(problems)
        imported = 0
        with self._connect() as db:  # one transaction: an error part way writes nothing
            for trace in traces:
                if _stored_copy(db, trace):
                    continue
                while not (trace.id.strip() and _insert_new(db, trace)):
                    trace = replace(trace, id=new_run_id())
                imported += 1
        return ImportCount(imported=imported, already_there=len(traces) - imported)


def new_run_id() -> str:
    """Random, as the runner's are: an id is a handle for links, not a content hash."""
    return uuid.uuid4().hex[:12]


def _row(trace: Trace) -> tuple[object, ...]:
    answer = trace.answer.text if trace.answer else ""
    return (trace.id, trace.started, trace.pack, trace.method, trace.backend, trace.question, answer,
            trace.totals.latency_ms, trace.to_json())


def _stored_copy(db: sqlite3.Connection, trace: Trace) -> bool:
    """Whether the store holds this run already: under its own id, or under the new id an earlier import
    gave it (same start, question, method and pack, and equal in everything but the id)."""
    rows = db.execute("SELECT id, trace FROM runs WHERE id = ? OR (started = ? AND question = ? AND method = ? "
                      "AND pack = ?)", (trace.id, trace.started, trace.question, trace.method, trace.pack))
    return any(_same_run(stored_id, stored, trace) for stored_id, stored in rows)


def _same_run(stored_id: str, stored: str, trace: Trace) -> bool:
    try:
        return Trace.from_json(stored, f"saved run {stored_id!r}") == replace(trace, id=stored_id)
    except RagscopeError:  # a damaged row is no copy of anything
        return False


def _insert_new(db: sqlite3.Connection, trace: Trace) -> bool:
    """Insert unless the id is taken; False when it is."""
    cursor = db.execute("INSERT INTO runs VALUES (?,?,?,?,?,?,?,?,?) ON CONFLICT(id) DO NOTHING", _row(trace))
    return cursor.rowcount == 1
