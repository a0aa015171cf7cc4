"""Explore marks the chunks of a pack question's supporting documents gold, and a question of the user's own
shows no gold column at all (issue 28)."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from streamlit.testing.v1 import AppTest

from engine.trace import AnswerStep, Hit, RetrievalStep, Trace
from paths import DEMO_PACK, ROOT
from ui_knobs import answer_every_guess

QUESTION = json.loads((DEMO_PACK / "questions.jsonl").read_text().splitlines()[0])  # a demo question with gold


@pytest.fixture()
def demo_app(ragscope_home) -> AppTest:
    """Explore on the bundled demo pack."""
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=180)
    at.query_params["pack"] = "demo"
    return at.run()


def _said(found: int, total: int) -> str:
    return f"{found} of {total} gold document{'s' if total != 1 else ''} retrieved"


def _table(at: AppTest):
    (frame,) = [f.value for f in at.dataframe if "rank" in f.value.columns]
    return frame


def _asked(question_id: str, docs: tuple[str, ...]) -> Trace:
    hits = tuple(Hit(doc, f"{doc}#0", f"Title of {doc}", f"text of {doc}", 1.0 - i / 10, i + 1)
                 for i, doc in enumerate(docs))
    steps = (RetrievalStep(iteration=1, title="Search", query="q", retriever="bm25", hits=hits),
             AnswerStep(iteration=1, text="x", evidence=docs, backend="offline"))
    head = Trace(id=f"t-{question_id}", question="q?", method="vanilla", backend="offline", model="", pack="demo",
                 question_id=question_id)
    return head.with_steps(steps, 1.0)


def test_a_demo_question_marks_its_supporting_documents_chunks_gold_and_says_how_many_came_back(demo_app):
    at = answer_every_guess(demo_app)
    at.text_area(key="explore.question").input(QUESTION["question"])
    at.button(key="explore.run").click().run()
    assert not at.exception
    frame, gold = _table(at), set(QUESTION["supporting_docs"])
    assert list(frame.columns)[0] == "gold"
    assert [mark == "✓" for mark in frame["gold"]] == [doc in gold for doc in frame["doc"]]
    assert any(frame["gold"] == "✓")  # the offline retriever finds Marie Curie's document
    assert any(c.value == _said(len(gold & set(frame["doc"])), len(gold)) for c in at.caption)
    marked = [m.value for m in at.markdown if m.value.startswith(":green-badge[✓ gold] ")]
    assert len(marked) == sum(frame["gold"] == "✓")  # "Read the chunks" marks the same chunks
    labels = [e.label.replace("\\", "") for e in at.expander if "cites " in e.label]  # md_text escapes "-"
    cited = {label.split("cites ", 1)[1].split(" — ")[0]: label for label in labels}
    assert cited and {doc for doc, label in cited.items() if label.startswith("✓ gold · ")} == set(cited) & gold


def test_only_the_chunks_of_supporting_documents_are_marked_and_the_caption_counts_distinct_documents(demo_app):
    gold = QUESTION["supporting_docs"][0]
    demo_app.session_state["explore.trace"] = _asked(QUESTION["id"], ("doc-x", gold, "doc-y", gold))
    at = demo_app.run()
    assert not at.exception
    assert list(_table(at)["gold"]) == ["", "✓", "", "✓"]
    assert any(c.value == _said(1, len(QUESTION["supporting_docs"])) for c in at.caption)


@pytest.mark.parametrize("question_id, pack", [("", "demo"), ("no-such-question", "demo"), (QUESTION["id"], "geo")])
def test_a_question_of_the_users_own_or_another_packs_shows_no_gold_column(demo_app, question_id, pack):
    demo_app.session_state["explore.trace"] = replace(_asked(question_id, (QUESTION["supporting_docs"][0],)),
                                                      pack=pack)
    at = demo_app.run()
    assert not at.exception
    assert "gold" not in _table(at).columns
    assert not any("gold document" in c.value for c in at.caption)
    assert not any(m.value.startswith("✓") for m in at.markdown)
