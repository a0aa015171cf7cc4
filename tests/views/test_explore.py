"""Explore page logic: parameters from Params, step-through of a replayed multi-round trace."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from components.safe import md_text
from engine.methods.base import METHODS
from engine.trace import AnswerStep, DecisionStep, Edge, GraphDeltaStep, Hit, Node, RetrievalStep, Trace
from ui_knobs import answer_every_guess


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
    assert {i.value for i in at.info} == {"Node 3"} and not at.success  # no gold answer: no tick
    assert any("no gold answer" in c.value for c in at.caption)


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
    answer_every_guess(at.run())
    at.text_area(key="explore.question").input("When was Grace Hopper born?")
    at.button(key="explore.run").click().run()
    assert any("gold: 1906" in m.value and "EM 1.00" in m.value for m in at.markdown)


def test_a_new_trace_opens_on_its_last_round_whatever_the_previous_one_showed(at):
    from dataclasses import replace

    at.session_state["explore.trace"] = three_round_trace()
    at.run()
    at.button(key="explore.view.round.prev").click().run()
    at.button(key="explore.view.round.prev").click().run()
    assert any(m.value == "##### Round 1" for m in at.markdown)
    at.session_state["explore.trace"] = replace(three_round_trace(), id="t4")  # same rounds, a new run
    at.run()
    assert any(m.value == "##### Round 3" for m in at.markdown)
    assert at.select_slider(key="explore.view.round").value == 3  # the control agrees with the content


def _answered(answer: str, question_id: str) -> Trace:
    head = Trace(id=f"t-{answer}", question="When was Grace Hopper born?", method="vanilla", backend="offline",
                 model="", pack="mini", question_id=question_id)
    steps = (AnswerStep(iteration=1, text=answer, confidence=0.93, backend="offline"),)
    return head.with_steps(steps, 1.0)


def test_the_answer_card_ticks_only_an_exact_match_against_gold(at, mini_pack):
    qid = next(q.id for q in mini_pack.questions if q.question == "When was Grace Hopper born?")
    at.session_state["explore.trace"] = _answered("December 1906", qid)  # overlaps the gold, not EM
    at.run()
    assert [e.value for e in at.error] == ["December 1906"] and not at.success
    assert any("✗ wrong" in m.value and "EM 0.00" in m.value and "F1 0.67" in m.value for m in at.markdown)
    assert any("calibrated confidence 93%" in c.value for c in at.caption)  # offline answers are calibrated
    at.session_state["explore.trace"] = _answered("1906", qid)
    at.run()
    assert [s.value for s in at.success] == ["1906"]
    assert any("✓ correct" in m.value and "EM 1.00" in m.value for m in at.markdown)


def test_a_refusal_below_min_confidence_shows_the_best_guess_it_held_back(at):
    from components.safe import md_text

    head = Trace(id="t-ref", question="When was Grace Hopper born?", method="vanilla", backend="offline", model="",
                 pack="mini")
    refused = AnswerStep(iteration=1, text="I don't know", refused=True, confidence=0.31, backend="offline",
                         title="Refused: confidence 0.31 is below min_confidence 0.50 (best guess: '1906')")
    at.session_state["explore.trace"] = head.with_steps((refused,), 1.0)
    at.run()
    assert [w.value for w in at.warning] == ["I don't know"]
    held = md_text("confidence 0.31 is below min_confidence 0.50 (best guess: '1906')")
    assert any(c.value == held for c in at.caption)
    assert not any("calibrated confidence" in c.value for c in at.caption)


def test_picking_an_example_fills_the_box_every_time_and_the_run_uses_the_box(at, mini_pack):
    example = mini_pack.questions[0].question
    at.run()
    at.selectbox(key="explore.example").select(example).run()
    assert at.text_area(key="explore.question").value == example
    assert at.selectbox(key="explore.example").value is None  # cleared, so the same pick fires again
    at.text_area(key="explore.question").input("something else").run()
    at.selectbox(key="explore.example").select(example).run()
    assert at.text_area(key="explore.question").value == example
    at.button(key="explore.run").click().run()
    trace = at.session_state["explore.trace"]
    assert trace.question == example and trace.question_id == mini_pack.questions[0].id
    assert at.text_area(key="explore.question").value == example


def test_a_run_is_reopened_by_its_link_after_a_reload_with_its_parameters(at, open_app):
    answer_every_guess(at.run())
    at.slider(key="explore.params.vanilla.k").set_value(3)
    at.text_area(key="explore.question").input("When was Grace Hopper born?")
    at.button(key="explore.run").click().run()
    trace = at.session_state["explore.trace"]
    assert at.query_params["run"] in (trace.id, [trace.id])
    from components.safe import md_text

    assert any(md_text("parameters: k=3, retriever=hybrid") in c.value and md_text(f"?run={trace.id}") in c.value
               for c in at.caption)
    reloaded = open_app()  # a new session, as after a reload
    reloaded.query_params["run"] = trace.id
    reloaded.run()
    assert reloaded.session_state["explore.trace"].id == trace.id
    assert [s.value for s in reloaded.success] == ["1906"]
    assert reloaded.slider(key="explore.params.vanilla.k").value == 3  # the boxes show the run's own settings
    assert reloaded.text_area(key="explore.question").value == "When was Grace Hopper born?"


def test_three_questions_in_one_session_each_show_the_run_just_asked(at):
    """Issue 22: the URL's ?run= of the first run must not bring it back after the second and third."""
    answer_every_guess(at.run())
    asked = (("vanilla", "When was Grace Hopper born?"), ("tog2", "In which city was Ada Lovelace born?"),
             ("rulerag", "In which country is the college where Alan Turing studied?"))
    for method, question in asked:
        at.selectbox(key="explore.method").set_value(method)
        answer_every_guess(at.run())
        at.text_area(key="explore.question").input(question)
        at.button(key="explore.run").click().run()
        shown = at.session_state["explore.trace"]
        assert (shown.method, shown.question) == (method, question)
        assert at.query_params["run"] in (shown.id, [shown.id])
        assert any(md_text(f"question: {question}") in m.value and m.value.startswith(md_text(METHODS[method].label))
                   for m in at.markdown)
    at.run()  # a redraw with nothing asked keeps the last run
    assert at.session_state["explore.trace"].method == "rulerag"


def test_a_replayed_trace_brings_its_method_and_parameters_into_the_boxes(at):
    from dataclasses import replace

    at.run()
    replayed = replace(three_round_trace(), method="tog2", params={"width": 2, "min_confidence": 0.0})
    at.session_state["explore.trace"] = replayed
    at.session_state["explore.opened"] = replayed
    at.run()
    assert at.selectbox(key="explore.method").value == "tog2"
    assert at.slider(key="explore.params.tog2.width").value == 2
    assert at.text_area(key="explore.question").value == "synthetic?"
    assert "run" not in at.query_params  # not saved: no link to another run


def test_a_link_to_a_deleted_run_says_so(open_app):
    at = open_app()
    from components.safe import md_text

    at.query_params["run"] = "**bold** <b>x</b>"
    at.run()
    assert not at.exception
    assert any(md_text("no saved run with id '**bold** <b>x</b>'") in w.value for w in at.warning)
    assert "run" not in at.query_params
