"""The retrieval step's gold caption counts the question's supporting documents the list holds, once each."""

from __future__ import annotations

from components.retrieval import gold_found
from engine.trace import Hit, RetrievalStep


def _step(*docs: str) -> RetrievalStep:
    return RetrievalStep(title="Search", query="q", retriever="bm25",
                         hits=tuple(Hit(doc, f"{doc}#{i}", doc, "text", None, i + 1) for i, doc in enumerate(docs)))


def test_the_caption_counts_distinct_supporting_documents_found():
    assert gold_found(_step("a", "x", "a", "b"), frozenset({"a", "b"})) == "2 of 2 gold documents retrieved"
    assert gold_found(_step("a", "a"), frozenset({"a", "b"})) == "1 of 2 gold documents retrieved"


def test_the_caption_says_none_when_no_supporting_document_came_back_and_singular_for_one():
    assert gold_found(_step("x", "y"), frozenset({"a"})) == "0 of 1 gold document retrieved"
