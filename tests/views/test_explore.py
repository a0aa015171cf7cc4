"""Explore page logic: parameters from Params, step-through of a replayed multi-round trace."""

from __future__ import annotations


import pytest
from streamlit.testing.v1 import AppTest

from engine.trace import AnswerStep, DecisionStep, Edge, GraphDeltaStep, Hit, Node, RetrievalStep, Trace


def three_round_trace() -> Trace:
    steps = [GraphDeltaStep(iteration=0, added_nodes=(Node("a", "Alpha"),), focus=("a",))]
    for r in (1, 2, 3):
        hit = Hit(f"d{r}", f"d{r}#0", f"Doc {r}", f"text of round {r}", 0.5, 1)
        steps += [RetrievalStep(iteration=r, title=f"Round {r} search", query=f"q{r}", retriever="bm25", hits=(hit,)),
                  GraphDeltaStep(iteration=r, added_nodes=(Node(f"n{r}", f"Node {r}"),),
                                 added_edges=(Edge("a", "rel", f"n{r}"),), focus=(f"n{r}",)),
                  DecisionStep(iteration=r, action="continue" if r < 3 else "answer")]
    steps.append(AnswerStep(iteration=3, text="Node 3", citations=("d3",), backend="offline"))
    head = Trace(id="t3", question="synthetic?", method="vanilla", backend="offline", model="", pack="mini")
    return head.with_steps(tuple(steps), 5.0)


@pytest.fixture()
def at(open_app) -> AppTest:
    return open_app()


def test_method_parameters_are_built_from_the_params_dataclass(at):
    at.run()
    assert at.slider(key="explore.params.vanilla.k").value == 5
    assert at.selectbox(key="explore.params.vanilla.retriever").value == "hybrid"


def test_a_replayed_trace_opens_on_its_last_round_with_its_graph(at):
    at.session_state["explore.trace"] = three_round_trace()
    at.run()
    assert not at.exception
    assert any(m.value == "##### Round 3" for m in at.markdown)
    assert len(at.get("iframe")) == 1
    assert {s.value for s in at.success} == {"Node 3"}


def test_prev_and_next_step_through_the_rounds(at):
    at.session_state["explore.trace"] = three_round_trace()
    at.run()
    at.button(key="explore.view.round.prev").click().run()
    assert any(m.value == "##### Round 2" for m in at.markdown)
    at.button(key="explore.view.round.prev").click().run()
    at.button(key="explore.view.round.prev").click().run()
    assert any(m.value == "##### Set-up" for m in at.markdown)
    assert at.button(key="explore.view.round.prev").disabled
    at.button(key="explore.view.round.next").click().run()
    assert any(m.value == "##### Round 1" for m in at.markdown)


def test_pack_questions_show_gold_answers_and_scores(at):
    at.run()
    at.text_area(key="explore.question").input("When was Grace Hopper born?")
    at.button(key="explore.run").click().run()
    assert any("gold: 1906" in m.value and "EM 1.00" in m.value for m in at.markdown)
