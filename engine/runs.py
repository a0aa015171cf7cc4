"""Run history: traces stored as JSON in SQLite (WAL, so the UI reads while a run is saved).

Several processes may write one store at once (two app servers on one home, an app and the CLI): every
write takes the write lock up front (`BEGIN IMMEDIATE`), waits for it with SQLite's busy timeout, and is
retried with backoff on the busy errors SQLite returns without waiting, all within one time bound (issue 26).
"""

from __future__ import annotations

import json
import random
import sqlite3
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TypeVar

from engine.codec import loads_bounded
from engine.errors import PackError, RagscopeError, RunStoreError
from engine.trace import Trace

_SCHEMA = (
    """CREATE TABLE IF NOT EXISTS runs (
    id TEXT PRIMARY KEY,
    started TEXT NOT NULL,
    pack TEXT NOT NULL,
    method TEXT NOT NULL,
    backend TEXT NOT NULL,
    question TEXT NOT NULL,
    answer TEXT NOT NULL,
    latency_ms REAL NOT NULL,
    trace TEXT NOT NULL
)""",
    "CREATE INDEX IF NOT EXISTS runs_started ON runs (started)",
)  # statements run one by one: executescript would commit the transaction they are run in
BUSY_BOUND_S = 30.0  # how long one call waits for other writers before it gives up and says so
_BUSY = (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED)
T = TypeVar("T")


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
    """One connection per call: sqlite3 connections must not cross threads (Streamlit sessions).

    `busy_s` bounds how long one call waits for other writers, retries included."""

    busy_s = BUSY_BOUND_S

    def __init__(self, path: Path, *, busy_s: float | None = None):
        self.path = Path(path)
        if busy_s is not None:
            self.busy_s = busy_s
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # A new store's first opener converts it to WAL under an exclusive lock; a second process opening it
        # then gets "database is locked" at once, without SQLite's busy wait: hence the retries.
        self._attempt("open", lambda db: db.execute("PRAGMA journal_mode=WAL"))
        if not self._attempt("open", _has_schema):  # a store in use is opened without waiting for its writers
            self._write("open", lambda db: [db.execute(statement) for statement in _SCHEMA])

    @contextmanager
    def _connect(self, timeout: float) -> Iterator[sqlite3.Connection]:
        db = sqlite3.connect(self.path, timeout=timeout, isolation_level=None)  # transactions are explicit
        try:
            # WAL's usual setting: a commit survives the process being killed and is not fsynced on its own
            # (only a power cut may roll the last ones back), so a writer holds the lock for ~1 ms, not ~15
            db.execute("PRAGMA synchronous=NORMAL")
            yield db
        finally:
            db.close()

    def _attempt(self, doing: str, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work` on a fresh connection, tried again with backoff while the store is busy, up to `busy_s`
        in all; RunStoreError when it stays busy or fails otherwise."""
        deadline = time.monotonic() + self.busy_s
        pause = 0.005
        while True:
            left = deadline - time.monotonic()
            try:
                with self._connect(timeout=max(left, 0.0)) as db:
                    return work(db)
            except sqlite3.DatabaseError as exc:
                if type(exc) not in (sqlite3.OperationalError, sqlite3.DatabaseError):
                    raise  # a programming error (a value SQLite cannot bind), not the user's to fix
                busy = getattr(exc, "sqlite_errorcode", 0) & 0xFF in _BUSY
                if not busy or left <= 0:
                    raise self._failure(doing, exc, busy) from exc
            time.sleep(min(pause * random.uniform(0.5, 1.5), max(deadline - time.monotonic(), 0.0)))
            pause = min(pause * 2, 0.25)

    def _write(self, doing: str, work: Callable[[sqlite3.Connection], T]) -> T:
        """`work` in one write transaction, the write lock taken first: a transaction that reads and then
        writes would fail at once when another writer committed in between (SQLite's busy wait does not
        cover that upgrade)."""
        def transaction(db: sqlite3.Connection) -> T:
            db.execute("BEGIN IMMEDIATE")
            try:
                result = work(db)
            except BaseException:
                if db.in_transaction:  # SQLite may have rolled back already (a full disk, an I/O error)
                    db.execute("ROLLBACK")
                raise
            db.execute("COMMIT")
            return result

        return self._attempt(doing, transaction)

    def _failure(self, doing: str, exc: sqlite3.Error, busy: bool) -> RunStoreError:
        if busy:
            return RunStoreError(
                f"could not {doing} the run store {self.path}: another process (a second app server, an "
                f"evaluation) kept it locked for more than {self.busy_s:g} s; try again when it is done, or give "
                "each app server its own RAGSCOPE_HOME")
        return RunStoreError(f"could not {doing} the run store {self.path}: {exc}; check that the disk has "
                             "space and the folder is writable (or move the damaged file aside)")

    def save(self, trace: Trace) -> None:
        """Store a live run; saving the same run again (a resumed or re-saved run) updates it.
        RunStoreError when it could not be written (the caller still holds the trace)."""
        row = _row(trace)
        self._write(f"save run {trace.id} to", lambda db: db.execute(
            "INSERT OR REPLACE INTO runs VALUES (?,?,?,?,?,?,?,?,?)", row))

    def list(self, limit: int = 200) -> list[RunSummary]:
        rows = self._attempt("read", lambda db: db.execute(
            "SELECT id, started, pack, method, backend, question, answer, latency_ms FROM runs "
            "ORDER BY started DESC, rowid DESC LIMIT ?", (limit,)).fetchall())
        return [RunSummary(*row) for row in rows]

    def get(self, run_id: str) -> Trace:
        row = self._attempt("read", lambda db: db.execute("SELECT trace FROM runs WHERE id = ?", (run_id,)).fetchone())
        if row is None:
            raise RagscopeError(f"no saved run with id {run_id!r}")
        return Trace.from_json(row[0], f"saved run {run_id!r}")

    def has(self, run_id: str) -> bool:
        return self._attempt("read", lambda db: db.execute(
            "SELECT 1 FROM runs WHERE id = ?", (run_id,)).fetchone() is not None)

    def delete(self, run_id: str) -> bool:
        return self._write(f"delete run {run_id} from", lambda db: db.execute(
            "DELETE FROM runs WHERE id = ?", (run_id,)).rowcount > 0)

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
        imported = self._write(f"import {label} into", lambda db: _insert_all(db, traces))  # all or nothing
        return ImportCount(imported=imported, already_there=len(traces) - imported)


def new_run_id() -> str:
    """Random, as the runner's are: an id is a handle for links, not a content hash."""
    return uuid.uuid4().hex[:12]


def _row(trace: Trace) -> tuple[object, ...]:
    answer = trace.answer.text if trace.answer else ""
    return (trace.id, trace.started, trace.pack, trace.method, trace.backend, trace.question, answer,
            trace.totals.latency_ms, trace.to_json())


def _has_schema(db: sqlite3.Connection) -> bool:
    return db.execute("SELECT count(*) FROM sqlite_master WHERE name IN ('runs', 'runs_started')").fetchone()[0] == 2


def _insert_all(db: sqlite3.Connection, traces: list[Trace]) -> int:
    """Add each trace the store does not hold yet (a taken id gets a new one); how many were added."""
    imported = 0
    for trace in traces:
        if _stored_copy(db, trace):
            continue
        while not (trace.id.strip() and _insert_new(db, trace)):
            trace = replace(trace, id=new_run_id())
        imported += 1
    return imported


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
