"""The trace view: two LLM runs' attention maps in one round are drawn side by side."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from components.trace_view import _compared_groups
from engine.trace import AttentionStep, DecisionStep


def _map(group: str, heads: tuple = ()) -> AttentionStep:
    return AttentionStep(iteration=1, name=f"{group} map", matrix=((0.5, 0.5),), x_labels=("doc 1", "q"),
                         y_labels=("layer 0",), group=group, heads=heads)


def test_only_two_or_more_llm_runs_are_compared():
    steps = [_map("R2AG"), _map("plain RAG"), DecisionStep(iteration=1, action="answer")]
    assert _compared_groups(steps) == ("R2AG", "plain RAG")
    assert _compared_groups([_map("R2AG"), _map("R2AG")]) == ()
    # the R2-Former's own per-head maps stay in place, they are not an LLM run
    assert _compared_groups([_map("R2-Former", heads=(((1.0,),),)), _map("R2AG")]) == ()


def _page() -> None:
    from components.trace_view import render_trace
    from engine.trace import AnswerStep, AttentionStep, Trace

    def heat(group: str) -> AttentionStep:
        return AttentionStep(iteration=1, name=f"{group}: layer × segment", matrix=((0.2, 0.8),),
                             x_labels=("doc 1", "question"), y_labels=("layer 0",), group=group)

    steps = (heat("R2AG"), heat("plain RAG"), AnswerStep(iteration=1, text="x", backend="hf"))
    trace = Trace(id="t", question="q", method="r2ag", backend="hf", model="m", pack="p").with_steps(steps, 1.0)
    render_trace(trace, key="view")


def test_the_round_shows_one_column_per_run():
    at = AppTest.from_function(_page).run()
    assert not at.exception
    assert [m.value for m in at.markdown if m.value in ("**R2AG**", "**plain RAG**")] == ["**R2AG**", "**plain RAG**"]
    assert any("side by side" in m.value for m in at.markdown)


def _answers() -> None:
    from components.answer import render_answer
    from engine.evaluation.metrics import score_answer
    from engine.trace import AnswerStep

    gold = ("University of Chicago",)
    for n, text in enumerate(("University of Chicago", "George Washington University", "Chicago")):
        render_answer(AnswerStep(text=text, backend="offline"), key=f"a{n}", gold=gold,
                      scores=score_answer(text, gold, "factoid"))
    render_answer(AnswerStep(text="I don't know", refused=True, backend="offline"), key="idk")
    render_answer(AnswerStep(text="Warsaw", confidence=0.91, backend="offline"), key="no-gold")


def test_an_answer_that_misses_the_gold_answer_is_not_shown_as_a_success():
    at = AppTest.from_function(_answers).run()
    assert [s.value for s in at.success] == ["University of Chicago"]
    assert [e.value for e in at.error] == ["George Washington University", "Chicago"]  # overlap is not EM
    assert [w.value for w in at.warning] == ["I don't know"] and [i.value for i in at.info] == ["Warsaw"]
    assert sum("no gold answer" in c.value for c in at.caption) == 2  # the refusal and Warsaw have no gold
    assert any("✗ wrong" in m.value and "F1 0.50" in m.value for m in at.markdown)
