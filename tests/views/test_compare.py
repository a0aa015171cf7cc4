"""The Compare page in-process (AppTest): every registered method answers one question side by side."""

from __future__ import annotations


import pytest
from streamlit.testing.v1 import AppTest

import ui_state
from engine.methods.base import method_ids
from engine.runs import RunStore



@pytest.fixture()
def compare(open_app) -> AppTest:
    return open_app("views/compare.py")


def _run(at: AppTest, question: str) -> AppTest:
    at.text_area(key="compare.question").input(question)
    at.button(key="compare.run").click()
    return at.run()


def test_the_page_starts_with_all_registered_methods_and_a_hint(compare):
    assert not compare.exception
    assert compare.multiselect(key="compare.methods").value == list(method_ids()[:6])
    assert any("press **Run**" in i.value for i in compare.info)


def test_running_shows_each_methods_answer_cost_and_the_overlap_chart(compare, ragscope_home):
    at = _run(compare, "When was Grace Hopper born?")
    assert not at.exception
    methods = method_ids()[:6]
    assert len(at.success) + len(at.warning) >= len(methods)  # one answer card per method
    assert "1906" in [s.value for s in at.success]  # vanilla reads the answer off the mini pack
    assert any("LLM calls" in m.value and "latency" in m.value for m in at.markdown)
    assert any("gold: 1906" in m.value for m in at.markdown)  # a pack question is graded
    assert len(at.get("plotly_chart")) == 1
    saved = RunStore(ragscope_home / "runs.sqlite3").list()
    assert {s.method for s in saved if s.question == "When was Grace Hopper born?"} >= set(methods)


def test_open_in_explore_hands_that_trace_to_explore(compare):
    at = _run(compare, "In which city was Ada Lovelace born?")
    at.button(key=f"compare.{method_ids()[0]}.open").click().run()
    trace = at.session_state[ui_state._TRACE]
    assert trace.method == method_ids()[0] and trace.question == "In which city was Ada Lovelace born?"


def test_an_empty_question_gets_a_clear_message_and_runs_nothing(compare):
    at = _run(compare, "   ")
    assert not at.exception
    assert any("empty" in e.value for e in at.error)
    assert len(at.get("plotly_chart")) == 0
