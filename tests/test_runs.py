"""Run history in SQLite: save, list, open, delete, export/import; concurrent writers."""

from __future__ import annotations

import json
import threading
from dataclasses import replace

import pytest

from engine.errors import PackError, RagscopeError
from engine.runs import ImportCount, RunStore
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
    assert second.import_json(first.export(["run0", "run1"])) == ImportCount(imported=2, already_there=0)
    assert second.get("run0") == _trace(0)


def test_importing_the_same_export_twice_keeps_one_copy_of_each_run(tmp_path):
    first = RunStore(tmp_path / "a.sqlite3")
    for i in range(3):
        first.save(_trace(i))
    exported = first.export(["run0", "run1", "run2"])
    second = RunStore(tmp_path / "b.sqlite3")
    second.save(_trace(7))
    second.import_json(exported)
    assert second.import_json(exported) == ImportCount(imported=0, already_there=3)
    assert first.import_json(exported) == ImportCount(imported=0, already_there=3)  # back where they came from
    assert sorted(r.id for r in second.list()) == ["run0", "run1", "run2", "run7"]


def test_importing_garbage_writes_nothing_and_names_every_bad_run(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    with pytest.raises(PackError) as caught:
        store.import_json(json.dumps([_trace(1).to_dict(), {"id": "x"}, "nonsense"]), "runs.json")
    assert caught.value.problems == [
        "runs.json: run 2: not a ragscope trace: trace is missing 'question', 'method', 'backend', 'model', 'pack'",
        "runs.json: run 3: not a ragscope trace: trace must be an object, got a string",
    ]
    assert store.list() == []


def test_a_trace_with_a_wrong_field_type_is_refused_before_anything_is_written(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    bad = _trace(2).to_dict()
    bad["steps"][0]["citations"] = "d1"  # a string where a list belongs: stored, it would break every view
    with pytest.raises(RagscopeError, match=r"run 2: .*trace\.steps\[0\]\.citations must be a list, got a string"):
        store.import_json(json.dumps([_trace(1).to_dict(), bad]))
    assert store.list() == []


@pytest.mark.parametrize("text, problem", [
    ("[" * 50_000, "export:1: nested deeper than 64 levels"),
    ('[{"id": "run1", "totals": {"tokens_in": ' + "9" * 4400 + "}}]", "export:1: integer with 4400 digits"),
    ('[{"id": "run1", "question": "\\ud800"}]', "export:1: a string contains a lone UTF-16 surrogate"),
])
def test_hostile_export_json_is_a_clear_error_and_writes_nothing(tmp_path, text, problem):
    store = RunStore(tmp_path / "runs.sqlite3")
    with pytest.raises(PackError) as caught:
        store.import_json(text)
    assert caught.value.problems[0].startswith(problem)
    assert store.list() == []


def test_an_imported_run_never_overwrites_a_stored_one_it_gets_a_new_id_once(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    mine = _trace(1)
    store.save(mine)
    forged = replace(_trace(1), question="forged?")
    assert store.import_json(json.dumps([forged.to_dict()])) == ImportCount(imported=1, already_there=0)
    # Again, and twice in one file: the copy made under a new id is recognised, not made again.
    assert store.import_json(json.dumps([forged.to_dict(), forged.to_dict()])) == ImportCount(0, 2)
    assert store.get("run1") == mine
    (other,) = [r for r in store.list() if r.id != "run1"]
    assert store.get(other.id) == replace(forged, id=other.id)


def test_a_run_that_differs_in_any_field_is_not_taken_for_a_stored_one(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    store.save(_trace(1))
    edited = _trace(1).with_steps((AnswerStep(text="another answer"),), 1.0)
    assert store.import_json(json.dumps([edited.to_dict()])) == ImportCount(imported=1, already_there=0)
    assert len(store.list()) == 2 and store.get("run1") == _trace(1)


def test_an_imported_run_with_a_blank_id_gets_one(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    blank = json.dumps(replace(_trace(1), id=" ").to_dict())
    store.import_json(blank)
    (run,) = store.list()
    assert run.id.strip() and store.get(run.id).question == "q1?"
    assert store.import_json(blank) == ImportCount(imported=0, already_there=1)


def test_an_import_that_fails_part_way_writes_nothing(tmp_path, monkeypatch):
    import sqlite3

    import engine.runs as runs

    store = RunStore(tmp_path / "runs.sqlite3")
    first = runs._row(_trace(1))
    rows = iter([first, (*first[:-1], object())])  # the second row cannot be bound: sqlite fails mid-import
    monkeypatch.setattr(runs, "_row", lambda trace: next(rows))
    with pytest.raises(sqlite3.ProgrammingError):
        store.import_json(json.dumps([_trace(1).to_dict(), _trace(2).to_dict()]))
    monkeypatch.undo()
    assert store.list() == []


def test_saving_a_live_run_again_updates_it(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    store.save(replace(_trace(1), steps=()))
    store.save(_trace(1))
    assert store.get("run1") == _trace(1) and len(store.list()) == 1


def test_two_threads_saving_at_once_lose_nothing(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    threads = [threading.Thread(target=lambda k=k: [store.save(_trace(k * 10 + i)) for i in range(10)])
               for k in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(store.list()) == 20
