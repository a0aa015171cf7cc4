"""History's run diff in-process (AppTest): two selected runs show the diff view; three ask for one or two."""

from __future__ import annotations

import sqlite3
import uuid
from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

from engine.runs import RunStore
from engine.trace import AnswerStep, GraphDeltaStep, Hit, Node, RetrievalStep, Trace

HTML_ANSWER = "<b>1906</b> <script>alert(1)</script>"
PAGE = "views/history.py"


@pytest.fixture()
def store(ragscope_home) -> RunStore:
    return RunStore(ragscope_home / "runs.sqlite3")


def _hit(chunk: str, rank: int) -> Hit:
    return Hit(doc_id=chunk[:3], chunk_id=chunk, title=f"Doc {chunk}", text="text", score=1.0 / rank, rank=rank)


def _run(question: str, method: str, second: int, answer: str, chunks: tuple[str, ...],
         nodes: tuple[str, ...]) -> Trace:
    head = Trace(id=uuid.uuid4().hex[:12], question=question, method=method, backend="offline", model="",
                 pack="mini", started=f"2030-01-01T00:00:0{second}+00:00")
    return head.with_steps((
        RetrievalStep(iteration=1, title="Retrieve", query=question, retriever="dense",
                      hits=tuple(_hit(c, n) for n, c in enumerate(chunks, start=1))),
        GraphDeltaStep(iteration=1, title="Graph", added_nodes=tuple(Node(n, n.title()) for n in nodes)),
        AnswerStep(iteration=1, title="Answer", text=answer, confidence=0.7, evidence=tuple(c[:3] for c in chunks)),
    ), 10.0)


@pytest.fixture()
def pair(store) -> tuple[Trace, Trace]:
    question = f"When was Grace Hopper born? ({uuid.uuid4().hex[:6]})"
    a = _run(question, "vanilla", 1, "1906", ("m07#0", "m01#0"), ("hopper", "navy"))
    b = _run(question, "ras", 2, HTML_ANSWER, ("m07#0", "m04#0"), ("hopper",))
    for trace in (a, b):
        store.save(trace)
    return a, b


def _runs_table(at: AppTest):
    return next(d for d in at.dataframe if d.key and d.key.startswith("history.runs."))


def _select(at: AppTest, *traces: Trace) -> AppTest:
    table = _runs_table(at)
    rows = [list(table.value["run id"]).index(t.id) for t in traces]
    at.session_state[table.key] = {"selection": {"rows": rows, "columns": []}}
    return at.run()


def _frame(at: AppTest, column: str):
    """The diff's table with this column (a table without selection has no key in AppTest)."""
    return next(d.value for d in at.dataframe if column in d.value.columns)


def _graph(at: AppTest):
    """The graph's two tables (removed, added); None for a side that says "nothing"."""
    sides = {}
    for column in at.columns:
        titles = [m.value for m in column.markdown]
        if titles and titles[0].startswith(("**Removed", "**Added")):
            sides[titles[0].strip("*").split(":")[0]] = column.dataframe[0].value if len(column.dataframe) else None
    return sides["Removed"], sides["Added"]


def test_two_selected_runs_show_their_diff(pair, open_app):
    a, b = pair
    at = _select(open_app(PAGE), b, a)  # the table lists the newer first; A is still the earlier run
    assert not at.exception
    assert any(h.value == "Diff of the two selected runs" for h in at.subheader)
    assert "history.open" not in {x.key for x in at.button}  # the one-run actions are for one run
    settings = _frame(at, "setting")
    method = settings[settings["setting"] == "method"].iloc[0]
    assert (method["A"], method["B"], bool(method["differs"])) == ("vanilla", "ras", True)
    chunks = _frame(at, "chunk")
    assert dict(zip(chunks["chunk"], chunks["in"])) == {"m01#0": "A only", "m04#0": "B only", "m07#0": "both"}
    steps = _frame(at, "status")
    assert list(zip(steps["kind"], steps["status"])) == [("retrieval", "changed"), ("graph_delta", "changed"),
                                                         ("answer", "changed")]
    assert "hits: 1 only in A (m01#0); 1 only in B (m04#0); 1 in both" in set(steps["what changed"])
    removed, added = _graph(at)
    assert list(zip(removed["what"], removed["id"])) == [("node", "navy")] and added is None


def test_a_runs_html_answer_is_shown_as_text(pair, open_app):
    at = _select(open_app(PAGE), *pair)
    shown = [m.value for m in at.markdown] + [c.value for c in at.caption]
    assert not any("<script>" in text or "<b>" in text for text in shown)  # escaped, never markup
    assert any("&lt;script&gt;alert" in text for text in shown)


def test_swap_makes_the_later_run_the_reference(pair, open_app):
    a, b = pair
    at = _select(open_app(PAGE), a, b)
    at = at.toggle(key="history.diff_swap").set_value(True).run()
    method = _frame(at, "setting")
    row = method[method["setting"] == "method"].iloc[0]
    assert (row["A"], row["B"]) == ("ras", "vanilla")
    removed, added = _graph(at)
    assert removed is None and list(added["id"]) == ["navy"]


def test_three_selected_runs_ask_for_one_or_two(pair, store, open_app):
    third = _run(pair[0].question, "tog2", 3, "1906", (), ())
    store.save(third)
    at = _select(open_app(PAGE), *pair, third)
    assert not at.exception
    assert any("select one run to open it, or two to diff them" in c.value for c in at.caption)
    assert len(at.dataframe) == 1 and not at.subheader  # the runs table only: no diff


def test_only_steps_that_differ_hides_the_same_ones(store, open_app):
    question = f"Who? ({uuid.uuid4().hex[:6]})"
    a = _run(question, "vanilla", 1, "1906", ("m07#0",), ())
    b = replace(_run(question, "vanilla", 2, "1906", ("m07#0",), ()), params={"k": 9})
    for trace in (a, b):
        store.save(trace)
    at = _select(open_app(PAGE), a, b)
    assert set(_frame(at, "status")["status"]) == {"same"}
    at = at.toggle(key="history.diff.changed_only").set_value(True).run()
    assert any(c.value == "Every step is the same in both runs." for c in at.caption)
    assert not any("status" in d.value.columns for d in at.dataframe)


def test_a_damaged_run_says_so_and_the_page_stays_up(pair, store, open_app):
    with sqlite3.connect(store.path) as db:
        db.execute("UPDATE runs SET trace = ? WHERE id = ?", ('{"not": "a trace"}', pair[1].id))
    at = _select(open_app(PAGE), *pair)
    assert not at.exception
    assert any(f"Run {pair[1].id} cannot be opened" in e.value for e in at.error)
    assert not any("status" in d.value.columns for d in at.dataframe)
