"""Run history: traces stored as JSON in SQLite (WAL, so the UI reads while a run is saved)."""

from __future__ import annotations

import json
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from engine.errors import RagscopeError
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
        answer = trace.answer.text if trace.answer else ""
        with self._connect() as db:
            db.execute(
                "INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?,?)",
                (trace.id, trace.started, trace.pack, trace.method, trace.backend, trace.question,
                 answer, trace.totals.latency_ms, trace.to_json()),
            )

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
        return Trace.from_json(row[0])

    def has(self, run_id: str) -> bool:
        with self._connect() as db:
            return db.execute("SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is not None

    def delete(self, run_id: str) -> bool:
        with self._connect() as db:
            return db.execute("DELETE FROM runs WHERE id = ?", (run_id,)).rowcount > 0

    def export(self, run_ids: list[str]) -> str:
        """A JSON list of traces, for sharing or backup."""
        return json.dumps([self.get(i).to_dict() for i in run_ids], ensure_ascii=False)

    def import_json(self, text: str) -> int:
        """Add the traces of an export; the whole file is checked before anything is written."""
        try:
            data = json.loads(text)
            traces = [Trace.from_dict(item) for item in (data if isinstance(data, list) else [data])]
        except (json.JSONDecodeError, TypeError, KeyError, AttributeError, ValueError) as exc:
            raise RagscopeError(f"not a ragscope trace export: {exc}") from None
        for trace in traces:
            self.save(trace)
        return len(traces)
