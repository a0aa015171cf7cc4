"""The Compare page in-process (AppTest): every registered method answers one question side by side."""

from __future__ import annotations

import json

import pandas as pd
import pytest
from streamlit.testing.v1 import AppTest

import ui_state
from engine.methods.base import METHODS, method_ids
from engine.runs import RunStore
from engine.trace import AnswerStep, Trace
from ui_knobs import answer_every_guess

SUMMARY_COLUMNS = ["method", "answer", "correct?", "F1", "latency ms", "LLM calls", "evidence", "shared docs"]
BASELINE_FIRST = ["vanilla", *(m for m in method_ids() if m != "vanilla")][:6]


@pytest.fixture()
def compare(open_app) -> AppTest:
    return open_app("views/compare.py")


def _run(at: AppTest, question: str, methods: list[str] | None = None, guessing: tuple[str, ...] = ()) -> AppTest:
    """Ask `question` with `methods` (the page's default selection when None), each giving its best guess
    however unsure — or only the `guessing` ones, the others refusing below their min_confidence."""
    if methods is not None:
        at.multiselect(key="compare.methods").set_value(methods)
        at.run()  # the chosen methods' parameter widgets appear
    answer_every_guess(at, guessing)
    at.text_area(key="compare.question").input(question)
    at.button(key="compare.run").click()
    return at.run()


def _table(at: AppTest) -> pd.DataFrame:
    """The summary table: the page's first dataframe (AppTest does not expose a read-only table's key)."""
    return at.dataframe[0].value


def _summary(at: AppTest) -> pd.DataFrame:
    """The summary table indexed by method id (its rows are labelled with the method's label)."""
    table = _table(at)
    return table.set_index(table["method"].map({METHODS[m].label: m for m in METHODS}))


def _traced(method: str, evidence: tuple[str, ...] | None) -> Trace:
    """A finished run of `method` whose answer read `evidence` (no answer at all when None)."""
    head = Trace(id=f"t-{method}", question="synthetic?", method=method, backend="offline", model="", pack="mini")
    steps = () if evidence is None else (AnswerStep(iteration=1, text=f"{method} says", evidence=evidence),)
    return head.with_steps(steps, 7.0)


def test_the_page_starts_with_all_registered_methods_and_a_hint(compare):
    assert not compare.exception
    assert compare.multiselect(key="compare.methods").value == BASELINE_FIRST
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


def test_the_summary_table_comes_before_the_answer_cards_with_one_row_per_method(compare):
    at = _run(compare, "When was Grace Hopper born?")
    assert not at.exception
    table = _table(at)
    assert list(table.columns) == SUMMARY_COLUMNS
    assert list(table["method"]) == [METHODS[m].label for m in BASELINE_FIRST]
    vanilla = _summary(at).loc["vanilla"]
    assert (vanilla["answer"], vanilla["correct?"], vanilla["F1"]) == ("1906", "✓ correct", 1.0)
    assert (vanilla["LLM calls"], vanilla["evidence"]) == (0, 5)  # offline: no model; vanilla reads k=5 docs
    assert vanilla["latency ms"] > 0
    order = [id(node) for node in at.main]  # document order
    assert order.index(id(at.dataframe[0])) < order.index(id(at.success[0]))  # 1st answer


def test_a_pack_question_tells_wrong_answers_from_refusals_against_its_gold(compare):
    at = _run(compare, "In which country is the college where Alan Turing studied?", ["hybrid", "vanilla"],
              guessing=("vanilla",))
    summary = _summary(at)
    assert list(summary.index) == ["vanilla", "hybrid"]  # the baseline first, whatever order they were picked in
    assert summary.loc["vanilla", "answer"] == "Turing machine"  # the gold is United Kingdom / England
    assert summary.loc["vanilla", "correct?"] == "✗ wrong"
    assert summary.loc["vanilla", "F1"] == 0.0
    assert summary.loc["hybrid", "correct?"] == "refused"


def test_a_question_of_ones_own_is_not_graded_and_has_no_f1_column(compare):
    at = _run(compare, "Who was Ada Lovelace?", ["vanilla", "tog2"])
    table = _table(at)
    assert "F1" not in table.columns
    assert list(table["correct?"]) == ["no gold answer", "no gold answer"]


def test_shared_docs_counts_the_evidence_another_method_also_answered_from(compare):
    compare.session_state[ui_state._COMPARE] = (_traced("vanilla", ("d1", "d2", "d3", "d1")),
                                                _traced("tog2", ("d2", "d4")), _traced("ras", ("d4",)),
                                                _traced("hybrid", None))
    at = compare.run()
    assert not at.exception
    summary = _summary(at)
    assert list(summary["evidence"]) == [3, 2, 1, 0]  # distinct documents: d1 counts once
    assert list(summary["shared docs"]) == [1, 2, 1, 0]  # vanilla d2; tog2 d2 and d4; ras d4
    assert summary.loc["hybrid", "correct?"] == "no answer"


def test_a_parameter_set_in_a_methods_expander_reaches_only_that_methods_run(compare):
    compare.slider(key="compare.params.vanilla.k").set_value(2)
    at = _run(compare, "When was Grace Hopper born?", ["vanilla", "rulerag"])
    assert not at.exception
    traces = {t.method: t for t in at.session_state[ui_state._COMPARE]}
    assert traces["vanilla"].params == {"k": 2, "retriever": "hybrid"}
    assert traces["vanilla"].policy.min_confidence == 0.0  # the run's answer policy, from the same expander
    assert traces["rulerag"].params["k"] == 10  # its own default, untouched
    assert _summary(at).loc["vanilla", "evidence"] == 2
    shown = [json.loads(j.value) for j in at.json]
    assert {"k": 2, "retriever": "hybrid", "min_confidence": 0.0, "timeout_s": None} in shown


def test_open_in_explore_selects_that_method_and_opens_its_trace(compare):
    at = _run(compare, "In which city was Ada Lovelace born?", ["vanilla", "tog2"])
    at.button(key="compare.tog2.open").click().run()
    assert not at.exception
    trace = at.session_state[ui_state._TRACE]
    assert trace.method == "tog2" and trace.question == "In which city was Ada Lovelace born?"
    assert at.session_state["explore.method"] == "tog2"
    assert at.selectbox(key="explore.method").value == "tog2"  # Explore is drawn with it selected


def test_an_empty_question_gets_a_clear_message_and_runs_nothing(compare):
    at = _run(compare, "   ")
    assert not at.exception
    assert any("empty" in e.value for e in at.error)
    assert len(at.get("plotly_chart")) == 0


def _column_rows(node) -> list[int]:
    """How many columns each st.columns row under `node` has."""
    from streamlit.testing.v1.element_tree import Block, Column

    if not isinstance(node, Block):
        return []
    kids = list(node.children.values())
    here = [len(kids)] if kids and all(isinstance(k, Column) for k in kids) else []
    return here + [n for kid in kids for n in _column_rows(kid)]


def test_six_answers_sit_three_to_a_row_with_who_answered_said_once(compare):
    at = _run(compare, "When was Grace Hopper born?", guessing=tuple(method_ids()))
    assert not at.exception
    assert len(at.subheader) >= 6 and max(_column_rows(at.main)) == 3  # six to a row broke words in halves
    producer = [c for c in at.caption if "no language model was involved" in c.value]
    assert len(producer) == 1 and producer[0].value.startswith("Answers by offline")
    order = [id(node) for node in at.main]  # document order: said above the first card
    first_card = next(m for m in at.markdown if m.value == "#### Answer")
    assert order.index(id(producer[0])) < order.index(id(first_card))
