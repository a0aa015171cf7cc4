"""--splitter: each LangChain splitter cuts the text, its pieces stay whole chunks, and a pack built with
each one loads and answers a question; the default ingest is unchanged."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.app import runs
from engine.errors import IngestError, PackError
from engine.knowledge.chunking import chunk_documents
from engine.knowledge.ingest import IngestOptions, ingest_paths
from engine.knowledge.loader import load_pack
from engine.knowledge.splitters import SPLITTERS, SplitterConfig, make_split
from engine.knowledge.writer import write_pack

TEXT = ("# Ada Lovelace\n\nAda Lovelace was born in London in 1815. She wrote the first published program "
        "for the Analytical Engine.\n\nCharles Babbage designed the Analytical Engine. Mr. J. Smith built "
        "none of it.\n\n") * 6


def _notes(tmp_path: Path) -> Path:
    path = tmp_path / "notes.md"
    path.write_text(TEXT, encoding="utf-8")
    return path


@pytest.mark.parametrize("name", SPLITTERS)
def test_each_splitter_makes_a_pack_that_loads_and_answers(name, tmp_path, settings):
    size = 40 if name == "tokens" else 200
    pack = ingest_paths([_notes(tmp_path)], "split-" + name,
                        options=IngestOptions(splitter=SplitterConfig(name, size, 10)))
    assert len(pack.documents) > 3 and {d.splitter for d in pack.documents} == {name}
    loaded = load_pack(write_pack(pack, tmp_path / "pack"))
    assert loaded.documents == pack.documents  # the splitter's name survives documents.jsonl
    assert len(chunk_documents(loaded.documents)) == len(loaded.documents)  # a piece is one chunk
    trace = runs.open_workbench(loaded, settings).ask("Where was Ada Lovelace born?", "vanilla",
                                                      {"min_confidence": 0.0})
    assert "London" in trace.answer.text


def test_sentence_pieces_end_at_sentence_ends_and_keep_initials_whole():
    pieces = make_split(SplitterConfig("sentence", 60, 0))("T", TEXT)
    assert all(text.endswith((".", "# Ada Lovelace")) for _, text in pieces)  # a line break ends a sentence
    assert any("Mr. J. Smith built none of it." in text for _, text in pieces)


def test_token_pieces_fit_the_embedder_word_piece_budget():
    from transformers import PreTrainedTokenizerFast

    from engine.retrieval.embedder import default_embedder_path

    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(default_embedder_path() / "tokenizer.json"))
    pieces = make_split(SplitterConfig("tokens", 30, 0))("T", TEXT)
    assert len(pieces) > 5 and all(len(tokenizer.encode(text, add_special_tokens=False)) <= 30 for _, text in pieces)


def test_without_a_splitter_documents_are_our_paragraphs_and_sentence_windows(tmp_path):
    pack = ingest_paths([_notes(tmp_path)], "plain")
    assert {d.splitter for d in pack.documents} == {""}
    assert pack.documents == ingest_paths([_notes(tmp_path)], "plain", options=IngestOptions()).documents


@pytest.mark.parametrize(("config", "message"), [
    (SplitterConfig("words"), "unknown splitter 'words'; known: recursive, sentence, tokens"),
    (SplitterConfig("tokens", 5000), "chunk size 5000 for the tokens splitter is outside 1–256 word pieces"),
    (SplitterConfig("recursive", 100, 100), "chunk overlap 100 must be smaller than the chunk size 100"),
])
def test_a_bad_splitter_choice_is_refused_with_what_is_allowed(config, message):
    with pytest.raises(IngestError, match=message):
        make_split(config)


def test_a_piece_longer_than_a_document_line_is_cut(tmp_path):
    path = tmp_path / "word.txt"
    path.write_text("x" * 250_000, encoding="utf-8")
    pack = ingest_paths([path], "long", options=IngestOptions(splitter=SplitterConfig("sentence", 100_000, 0)))
    assert [len(d.text) for d in pack.documents] == [100_000, 100_000, 50_000]


def test_a_splitter_field_that_is_not_text_is_a_pack_problem(make_pack):
    record = '{"id": "a", "title": "A", "text": "Some text.", "splitter": 3}\n'
    with pytest.raises(PackError, match=r"documents.jsonl:1: field 'splitter' must be str, got int"):
        load_pack(make_pack(files={"documents.jsonl": record, "questions.jsonl": None, "rules.jsonl": None,
                                   "pages.jsonl": None}))
