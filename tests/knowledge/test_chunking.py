"""Chunks are whole sentences within a word budget, with stable ids and content hashes."""

from __future__ import annotations

from dataclasses import replace

import pytest

from engine.knowledge.chunking import ChunkingConfig, chunk_document, chunk_documents, split_sentences
from engine.knowledge.records import Document

LONG = Document(id="doc", title="Long", text=" ".join(
    f"Sentence number {n} has exactly seven words." for n in range(1, 31)))


def test_chunk_ids_are_the_doc_id_and_index_and_stable_across_runs():
    first = chunk_document(LONG, ChunkingConfig(max_words=30))
    again = chunk_document(LONG, ChunkingConfig(max_words=30))
    assert [c.id for c in first] == [f"doc#{i}" for i in range(len(first))]
    assert first == again


def test_hashes_change_with_the_text_but_not_with_the_doc_id():
    base = chunk_document(Document(id="a", title="T", text="One fact. Another fact."))[0]
    renamed = chunk_document(Document(id="b", title="T", text="One fact. Another fact."))[0]
    edited = chunk_document(Document(id="a", title="T", text="One fact. A changed fact."))[0]
    assert base.hash == renamed.hash
    assert base.hash != edited.hash


def test_editing_one_sentence_changes_only_the_hashes_of_chunks_that_hold_it():
    config = ChunkingConfig(max_words=21, overlap_sentences=0)
    before = chunk_document(LONG, config)
    edited = replace(LONG, text=LONG.text.replace("number 30 has", "number thirty has"))
    after = chunk_document(edited, config)
    changed = [i for i, (a, b) in enumerate(zip(before, after)) if a.hash != b.hash]
    assert changed == [len(before) - 1]


@pytest.mark.parametrize("max_words,overlap", [(20, 0), (30, 1), (50, 2)])
def test_no_chunk_exceeds_max_words_when_sentences_fit(max_words, overlap):
    chunks = chunk_document(LONG, ChunkingConfig(max_words=max_words, overlap_sentences=overlap))
    assert len(chunks) > 1
    assert all(len(c.text.split()) <= max_words for c in chunks)


def test_every_sentence_lands_in_some_chunk():
    chunks = chunk_document(LONG, ChunkingConfig(max_words=25))
    joined = " ".join(c.text for c in chunks)
    assert all(s in joined for s in split_sentences(LONG.text))


def test_a_document_without_sentences_still_gives_one_chunk():
    chunks = chunk_documents([Document(id="e", title="Only a title", text="")])
    assert [(c.id, c.text) for c in chunks] == [("e#0", "Only a title")]


def test_initials_like_j_j_thomson_are_not_split():
    sentences = split_sentences("The electron was found by J. J. Thomson in 1897. He won a prize.")
    assert sentences == ["The electron was found by J. J. Thomson in 1897.", "He won a prize."]
