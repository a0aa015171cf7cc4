"""The History page in-process (AppTest): list saved runs, open, delete with a confirm, import and export."""

from __future__ import annotations

import json
import shutil
import uuid

import pytest
from streamlit.testing.v1 import AppTest

import ui_state
from engine.runs import RunStore
from engine.trace import AnswerStep, Trace
from paths import MINI_PACK, TESTS

APP = str(TESTS.parent / "app.py")


def _app() -> AppTest:
    at = AppTest.from_file(APP, default_timeout=120)
    at.query_params["pack"] = "mini"
    at.run()
    return at.switch_page("views/history.py").run()


@pytest.fixture()
def store(ragscope_home) -> RunStore:
    packs = ragscope_home / "packs"
    if not (packs / "mini").exists():
        shutil.copytree(MINI_PACK, packs / "mini")
    return RunStore(ragscope_home / "runs.sqlite3")


def _trace(question: str) -> Trace:
    head = Trace(id=uuid.uuid4().hex[:12], question=question, method="vanilla", backend="offline", model="",
                 pack="mini", started="2030-01-01T00:00:00+00:00")
    return head.with_steps((AnswerStep(text="1906", evidence=("m07",)),), 12.5)


@pytest.fixture()
def saved(store) -> Trace:
    trace = _trace(f"When was Grace Hopper born? ({uuid.uuid4().hex[:6]})")
    store.save(trace)
    return trace


def _runs_table(at: AppTest):
    return next(d for d in at.dataframe if d.key and d.key.startswith("history.runs."))


def _select(at: AppTest, trace: Trace) -> AppTest:
    table = _runs_table(at)
    row = list(table.value["question"]).index(trace.question)
    at.session_state[table.key] = {"selection": {"rows": [row], "columns": []}}
    return at.run()


def test_an_empty_history_says_how_to_make_runs(tmp_path, monkeypatch):
    monkeypatch.setenv("RAGSCOPE_HOME", str(tmp_path))
    ui_state.settings.clear()
    ui_state.run_store.clear()
    try:
        at = _app()
        assert not at.exception
        assert any("No saved runs yet" in i.value and "Explore" in i.value for i in at.info)
        assert at.file_uploader(key="history.import_file")  # importing works on an empty history too
    finally:
        monkeypatch.undo()
        ui_state.settings.clear()
        ui_state.run_store.clear()


def test_a_saved_run_is_listed_with_its_answer_and_latency(saved):
    at = _app()
    assert not at.exception
    table = _runs_table(at).value
    row = table[table["question"] == saved.question].iloc[0]
    assert (row["method"], row["backend"], row["pack"], row["answer"]) == ("vanilla", "offline", "mini", "1906")
    assert row["latency ms"] == 12.5 and row["time (UTC)"] == "2030-01-01 00:00:00"
    assert at.download_button(key="history.export_all")


def test_open_replays_the_selected_run_in_explore(saved):
    at = _select(_app(), saved)
    assert at.download_button(key="history.export_selected")
    at.button(key="history.open").click().run()
    assert at.session_state[ui_state._TRACE] == saved
    assert at.session_state[ui_state.EXPLORE_METHOD] == saved.method


def test_delete_asks_first_and_cancel_keeps_the_run(saved, store):
    at = _select(_app(), saved).button(key="history.delete").click().run()
    assert any(saved.id in w.value for w in at.warning)
    at = at.button(key="history.cancel_delete").click().run()
    assert not any(saved.id in w.value for w in at.warning)
    assert saved.id in {r.id for r in store.list(limit=10**6)}


def test_delete_after_the_confirm_removes_the_run_and_its_row(saved, store):
    at = _select(_app(), saved).button(key="history.delete").click().run()
    at = at.button(key="history.confirm_delete").click().run()
    assert not at.exception
    assert any("Deleted run" in s.value for s in at.success)
    assert saved.id not in {r.id for r in store.list(limit=10**6)}
    assert saved.question not in list(_runs_table(at).value["question"])
    assert "history.open" not in {b.key for b in at.button}  # the stale row selection was dropped


def test_importing_an_export_adds_its_runs(store):
    trace = _trace("Imported: who was born first?")
    at = _app()
    at.file_uploader(key="history.import_file").set_value(
        ("runs.json", json.dumps([trace.to_dict()]).encode(), "application/json"))
    at = at.run().button(key="history.import").click().run()
    assert not at.exception
    assert any("1 imported, 0 already there" in s.value for s in at.success)
    assert store.get(trace.id) == trace
    assert trace.question in list(_runs_table(at).value["question"])


def test_importing_the_same_export_again_adds_nothing_and_says_so(store, saved):
    export = store.export([saved.id]).encode()
    at = _app()
    rows = len(_runs_table(at).value)
    for _ in range(2):
        at.file_uploader(key="history.import_file").set_value(("again.json", export, "application/json"))
        at = at.run().button(key="history.import").click().run()
        assert any("0 imported, 1 already there" in s.value for s in at.success)
    assert len(_runs_table(at).value) == rows


@pytest.mark.parametrize("garbage", [b"not json at all", b'{"hello": "world"}', b"[1, 2, 3]", b"\xff\xfe\x00"])
def test_importing_garbage_shows_an_error_and_writes_nothing(store, garbage):
    before = {r.id for r in store.list(limit=10**6)}
    at = _app()
    at.file_uploader(key="history.import_file").set_value(("garbage.json", garbage, "application/json"))
    at = at.run().button(key="history.import").click().run()
    assert not at.exception
    assert any("nothing was imported" in e.value for e in at.error)
    assert {r.id for r in store.list(limit=10**6)} == before
