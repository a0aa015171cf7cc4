"""Run history in SQLite: save, list, open, delete, export/import; concurrent writers."""

from __future__ import annotations

import threading

import pytest

from engine.errors import RagscopeError
from engine.runs import RunStore
from engine.trace import AnswerStep, Trace


def _trace(i: int) -> Trace:
    head = Trace(id=f"run{i}", question=f"q{i}?", method="vanilla", backend="offline", model="",
                 pack="mini", started=f"2026-01-01T00:00:{i:02d}+00:00")
    return head.with_steps((AnswerStep(text=f"a{i}"),), float(i))


def test_saved_runs_are_listed_newest_first_and_reopen_exactly(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    for i in range(3):
        store.save(_trace(i))
    assert [r.id for r in store.list()] == ["run2", "run1", "run0"]
    assert store.get("run1") == _trace(1)
    assert store.list()[0].answer == "a2"


def test_delete_and_missing_run_give_clear_results(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    store.save(_trace(1))
    assert store.delete("run1") and not store.delete("run1")
    with pytest.raises(RagscopeError, match="no saved run"):
        store.get("run1")


def test_export_then_import_into_another_store_restores_the_runs(tmp_path):
    first = RunStore(tmp_path / "a.sqlite3")
    for i in range(2):
        first.save(_trace(i))
    second = RunStore(tmp_path / "b.sqlite3")
    assert second.import_json(first.export(["run0", "run1"])) == 2
    assert second.get("run0") == _trace(0)


def test_importing_garbage_writes_nothing(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    with pytest.raises(RagscopeError, match="not a ragscope trace export"):
        store.import_json('[{"id": "x"}, "nonsense"]')
    assert store.list() == []


def test_two_threads_saving_at_once_lose_nothing(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    threads = [threading.Thread(target=lambda k=k: [store.save(_trace(k * 10 + i)) for i in range(10)])
               for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.list()) == 20
