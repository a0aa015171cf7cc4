"""Dense index (persistent, incremental), BM25 and RRF hybrid as LangChain retrievers."""

from __future__ import annotations

from dataclasses import replace

import pytest
from langchain_core.retrievers import BaseRetriever

from engine.errors import UnknownNameError
from engine.knowledge.records import Document, Pack, PackInfo
from engine.retrieval.suite import RETRIEVER_NAMES, Retrieval
from engine.settings import Settings

METADATA_KEYS = {"score", "rank", "doc_id", "chunk_id", "title", "retriever"}


@pytest.fixture()
def own_settings(tmp_path) -> Settings:
    return Settings(home=tmp_path)


@pytest.mark.parametrize("name", [n for n in RETRIEVER_NAMES if n != "dense-ft"])  # dense-ft: test_query_encoder.py
def test_every_retriever_is_a_langchain_retriever_with_scores_in_metadata(mini_workbench, name):
    retriever = mini_workbench.retrieval.retriever(name, k=3)
    assert isinstance(retriever, BaseRetriever)
    docs = retriever.invoke("Where was Grace Hopper born?")
    assert docs and METADATA_KEYS <= set(docs[0].metadata)
    assert [d.metadata["rank"] for d in docs] == list(range(1, len(docs) + 1))
    scores = [d.metadata["score"] for d in docs]
    assert scores == sorted(scores, reverse=True)
    assert docs[0].metadata["doc_id"] == "m07"


def test_bm25_finds_exact_terms_and_returns_nothing_for_stopwords_only(mini_workbench):
    hits = mini_workbench.retrieval.search("Analytical Engine", k=2, retriever="bm25")
    assert {h.doc_id for h in hits} <= {"m09", "m01", "m02"}
    assert mini_workbench.retrieval.search("the of and", retriever="bm25") == ()


def test_unknown_retriever_name_lists_the_known_ones(mini_workbench):
    with pytest.raises(UnknownNameError, match="known: hybrid, dense, bm25"):
        mini_workbench.retrieval.retriever("grep")


def test_index_reopens_without_embedding_again(mini_pack, own_settings):
    first = Retrieval(mini_pack, own_settings).ensure_index()
    assert first.added == len(Retrieval(mini_pack, own_settings).chunks) and first.kept == 0
    again = Retrieval(mini_pack, own_settings).ensure_index()
    assert again.added == 0 and again.removed == 0 and again.kept == first.added


def test_index_embeds_only_changed_chunks_and_drops_removed_ones(mini_pack, own_settings):
    Retrieval(mini_pack, own_settings).ensure_index()
    docs = list(mini_pack.documents)
    docs[0] = replace(docs[0], text=docs[0].text + " She died in 1852.")
    edited = Pack(info=mini_pack.info, documents=tuple(docs[:-1]), path=mini_pack.path)
    report = Retrieval(edited, own_settings).ensure_index()
    assert (report.added, report.removed) == (1, 1)
    retrieval = Retrieval(edited, own_settings)
    retrieval.ensure_index()
    assert retrieval.index.count() == len(retrieval.chunks)
    assert retrieval.search("When did Ada Lovelace die?", k=1, retriever="dense")[0].doc_id == "m01"


def test_packs_with_the_same_name_in_different_places_get_separate_indexes(own_settings, tmp_path):
    def pack(where: str, text: str) -> Pack:
        return Pack(info=PackInfo(name="same"), documents=(Document(id="d", title="T", text=text),),
                    path=tmp_path / where)

    a, b = Retrieval(pack("a", "apples grow on trees"), own_settings), Retrieval(pack("b", "rockets fly"), own_settings)
    assert a.index.name != b.index.name
    a.ensure_index(), b.ensure_index()
    assert a.search("fruit", retriever="dense")[0].text == "apples grow on trees"
    assert b.search("fruit", retriever="dense")[0].text == "rockets fly"
