"""Pack summaries: the counts the Knowledge page's overview shows."""

from __future__ import annotations

from engine.knowledge.chunking import chunk_documents
from engine.knowledge.loader import load_pack
from engine.knowledge.summary import summarize_pack, unloadable_pack


def test_a_summary_counts_every_file_of_the_pack(make_pack):
    summary = summarize_pack(load_pack(make_pack()))
    assert (summary.name, summary.title) == ("tiny", "Tiny pack")
    assert (summary.documents, summary.triples, summary.rules, summary.questions, summary.pages) == (2, 3, 1, 1, 1)
    assert summary.question_types == (("multi_hop", 1),)


def test_chunks_are_counted_the_way_the_index_cuts_them(mini_pack):
    assert summarize_pack(mini_pack).chunks == len(chunk_documents(mini_pack.documents))


def test_question_types_follow_the_format_order_then_unknown_types(demo_pack):
    types = [t for t, _ in summarize_pack(demo_pack).question_types]
    assert types[0] == "factoid"
    assert sum(n for _, n in summarize_pack(demo_pack).question_types) == len(demo_pack.questions)


def test_a_row_joins_question_types_and_a_pack_that_does_not_load_shows_its_first_problem(make_pack):
    row = summarize_pack(load_pack(make_pack())).row()
    assert row["question types"] == "multi_hop 1" and row["problem"] == ""
    bad = unloadable_pack("broken", "documents.jsonl:3: missing field 'text'\nrules.jsonl:1: bad")
    assert bad.row()["problem"] == "documents.jsonl:3: missing field 'text'"
    assert bad.row()["documents"] == 0
