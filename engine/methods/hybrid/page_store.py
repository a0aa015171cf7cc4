"""Where the hybrid method's chunk vectors live: one Chroma collection per pack, encoder and chunking.

Issue 16: every question used to embed its pages' chunks again (276 s for the first question on a
50-page pack); now a text is embedded once, and later questions and processes read its vector back.
The pack's document chunks the method adds as extra search results go through the same store.
"""

from __future__ import annotations

from engine.cache import Registry
from engine.methods.hybrid.pages import PER_CHUNK, TABLE_PREVIEW_ROWS, TextVectors
from engine.retrieval.index import chroma_client, collection_name
from engine.retrieval.suite import Retrieval, pack_key
from engine.retrieval.vector_store import VectorStore

_OPEN: Registry[tuple[str, str], TextVectors] = Registry()


def chunking_key(sentence_cap: int) -> str:
    return f"hybrid-pages-cap{sentence_cap}-group{PER_CHUNK}-preview{TABLE_PREVIEW_ROWS}"


def page_vectors(retrieval: Retrieval, sentence_cap: int) -> TextVectors:
    """One per (Chroma location, collection) per process, shared by every session and question."""
    settings, embedder = retrieval.settings, retrieval.embedder
    name = collection_name(f"{pack_key(retrieval.pack)}-pages", embedder.id, chunking_key(sentence_cap))
    where = settings.chroma_url or str(settings.index_dir.resolve())
    return _OPEN.get((where, name), lambda: TextVectors(
        embedder, VectorStore(lambda: chroma_client(settings.index_dir, settings.chroma_url), name)))
