"""Explore and Compare when the run store will not take a run (issue 26, item 5): another app server on the same
home holds its write lock past the bound. The run is still shown, and the page says it was not saved and why."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

from components.safe import md_text
from engine.runs import RunStore

QUESTION = "When was Grace Hopper born?"


@contextmanager
def _store_held_by_another_writer(home: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(RunStore, "busy_s", 0.2)  # the app's own store too: each save gives up after 0.2 s
    holder = sqlite3.connect(RunStore(home / "runs.sqlite3").path, isolation_level=None)  # a store in use
    holder.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        holder.execute("ROLLBACK")
        holder.close()


def _said(texts: list[str], *parts: str) -> bool:
    return any(all(md_text(part) in text for part in parts) for text in texts)


def test_explore_shows_a_run_the_store_would_not_take_and_says_why(open_app, ragscope_home, monkeypatch):
    at = open_app()
    at.text_area(key="explore.question").input(QUESTION)
    with _store_held_by_another_writer(ragscope_home, monkeypatch):
        at.button(key="explore.run").click().run()
    assert not at.exception
    trace = at.session_state["explore.trace"]
    assert trace.question == QUESTION and trace.answer is not None  # the run is on the page
    assert _said([e.value for e in at.error], "This run is shown but was not saved to History",
                 "kept it locked for more than 0.2 s")
    assert "run" not in at.query_params  # no link to a run History does not hold
    assert not RunStore(ragscope_home / "runs.sqlite3").has(trace.id)


def test_compare_shows_runs_the_store_would_not_take_and_says_why(open_app, ragscope_home, monkeypatch):
    at = open_app("views/compare.py")
    at.multiselect(key="compare.methods").set_value(["vanilla"])
    at.run()
    at.text_area(key="compare.question").input(QUESTION)
    with _store_held_by_another_writer(ragscope_home, monkeypatch):
        at.button(key="compare.run").click().run()
    assert not at.exception
    assert list(at.dataframe[0].value["method"]) == ["Vanilla RAG"]  # compared all the same
    assert _said([e.value for e in at.error], "Not saved to History: Vanilla RAG", "kept it locked")
