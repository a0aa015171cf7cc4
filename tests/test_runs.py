"""Run history in SQLite: save, list, open, delete, export/import; concurrent writers, in threads and processes."""

from __future__ import annotations

import json
import sqlite3
import subprocess
import sys
import threading
from dataclasses import replace
from pathlib import Path

import pytest

from engine.errors import PackError, RagscopeError
from engine.runs import ImportCount, RunStore, RunStoreError
from engine.trace import AnswerStep, Trace

ROOT = Path(__file__).resolve().parents[1]


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


# A child process: opens the store when told to go (so a new store is opened by all at once), saves its runs.
WRITER = """
import sys
from engine.runs import RunStore
from engine.trace import AnswerStep, Trace
path, writer, count = sys.argv[1], sys.argv[2], int(sys.argv[3])
print("ready", flush=True)
sys.stdin.readline()
store = RunStore(path)
for i in range(count):
    head = Trace(id=f"{writer}-{i}", question=f"q{i}?", method="vanilla", backend="offline", model="", pack="mini",
                 started="2026-01-01T00:00:00+00:00")
    store.save(head.with_steps((AnswerStep(text="a"),), 1.0))
"""


def test_twelve_processes_saving_a_hundred_runs_each_lose_none(tmp_path):
    """Issue 26: 12 × 100 saves lost 9, 2 and 0 runs in three rounds to `database is locked`, and a process
    opening a new store while another converted it to WAL failed at once."""
    writers, count = 12, 100
    for round_ in range(3):
        path = tmp_path / f"round{round_}" / "runs.sqlite3"
        children = [subprocess.Popen([sys.executable, "-c", WRITER, str(path), f"w{w}", str(count)], cwd=ROOT,
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
                    for w in range(writers)]
        try:
            assert all(child.stdout.readline() == "ready\n" for child in children)
            for child in children:
                child.stdin.write("go\n")
                child.stdin.flush()
            failures = [child.communicate(timeout=60)[1][-300:] for child in children if child.wait(timeout=60)]
        finally:
            for child in children:
                child.kill()
        assert not failures, f"round {round_}: {len(failures)} writers failed: {failures[0]}"
        assert len(RunStore(path).list(limit=10_000)) == writers * count, f"round {round_}"


def _holding_the_write_lock(path) -> sqlite3.Connection:
    """Another process's writer, mid-transaction: the store's write lock is taken until it commits."""
    holder = sqlite3.connect(path, isolation_level=None, check_same_thread=False)
    holder.execute("BEGIN IMMEDIATE")
    holder.execute("CREATE TABLE IF NOT EXISTS elsewhere (x)")
    return holder


def test_a_new_store_that_another_process_is_creating_is_waited_for_not_failed(tmp_path):
    """The store's file exists (rollback journal, not yet WAL) and its creator holds the write lock: SQLite
    answers the WAL switch with `database is locked` at once, without its busy wait."""
    path = tmp_path / "runs.sqlite3"
    holder = _holding_the_write_lock(path)
    done = threading.Timer(0.3, holder.commit)
    done.start()
    try:
        store = RunStore(path)
        store.save(_trace(1))
    finally:
        done.join()
        holder.close()
    assert store.get("run1") == _trace(1)


def test_a_write_lock_held_past_the_bound_is_a_clear_error_and_the_store_works_after(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3", busy_s=0.3)
    holder = _holding_the_write_lock(store.path)
    try:
        with pytest.raises(RunStoreError, match=r"could not save run run1 to the run store .*runs\.sqlite3: another "
                                                r"process .* kept it locked for more than 0\.3 s; try again"):
            store.save(_trace(1))
        assert store.list() == []  # readers are not blocked by a writer (WAL)
    finally:
        holder.commit()
        holder.close()
    store.save(_trace(1))
    assert [r.id for r in store.list()] == ["run1"]


def test_a_store_that_cannot_be_written_is_a_clear_error_naming_it(tmp_path):
    store = RunStore(tmp_path / "runs.sqlite3")
    store.path.write_bytes(b"not a database" * 100)
    with pytest.raises(RunStoreError, match=r"could not save run run1 to the run store .*runs\.sqlite3: file is not "
                                            r"a database; check"):
        store.save(_trace(1))
