"""Dense, BM25 and RRF-hybrid LangChain retrievers over a pack's chunks.

Every returned Document carries `score`, `rank`, `doc_id`, `chunk_id`, `title` and `retriever`
in its metadata, so methods and the UI can show why a chunk came back.
"""

from __future__ import annotations

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LcDocument
from langchain_core.retrievers import BaseRetriever
from pydantic import ConfigDict

from engine.knowledge.chunking import Chunk
from engine.retrieval.embedder import Embedder
from engine.retrieval.index import ChunkIndex
from engine.retrieval.sparse import SparseIndex

RRF_K = 60  # Cormack et al. 2009; the usual constant for reciprocal-rank fusion


def as_document(chunk: Chunk, score: float, rank: int, retriever: str) -> LcDocument:
    return LcDocument(
        id=chunk.id,
        page_content=chunk.text,
        metadata={"score": float(score), "rank": rank, "doc_id": chunk.doc_id, "chunk_id": chunk.id,
                  "title": chunk.title, "retriever": retriever},
    )


class _ChunkRetriever(BaseRetriever):
    model_config = ConfigDict(arbitrary_types_allowed=True)
    chunks: dict[str, Chunk]
    k: int = 5


class DenseRetriever(_ChunkRetriever):
    """Cosine similarity of MiniLM embeddings through the persistent Chroma index."""

    index: ChunkIndex
    embedder: Embedder

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[LcDocument]:
        vector = self.embedder.encode_queries([query])[0]
        return [as_document(self.chunks[cid], score, rank, "dense")
                for rank, (cid, score) in enumerate(self.index.query(vector, self.k), start=1)
                if cid in self.chunks]


class BM25Retriever(_ChunkRetriever):
    """BM25 (Lucene's variant, bm25s) over title + text of each chunk, from the persisted sparse index."""

    index: SparseIndex

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[LcDocument]:
        return [as_document(self.chunks[cid], score, rank, "bm25")
                for rank, (cid, score) in enumerate(self.index.query(query, self.k), start=1)]


class HybridRetriever(_ChunkRetriever):
    """Reciprocal-rank fusion of dense and BM25: score = Σ 1 / (RRF_K + rank)."""

    dense: DenseRetriever
    sparse: BM25Retriever
    depth: int = 20  # how deep each list is read before fusing

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[LcDocument]:
        fused: dict[str, float] = {}
        for retriever in (self.dense, self.sparse):
            deep = retriever.model_copy(update={"k": max(self.depth, self.k)})
            for doc in deep.invoke(query):
                cid = doc.metadata["chunk_id"]
                fused[cid] = fused.get(cid, 0.0) + 1.0 / (RRF_K + doc.metadata["rank"])
        # ties (dense rank 1 + BM25 rank 3 = dense 3 + BM25 1) keep the dense list's order, never the ids'
        best = sorted(fused.items(), key=lambda item: -item[1])[: self.k]
        return [as_document(self.chunks[cid], score, rank, "hybrid")
                for rank, (cid, score) in enumerate(best, start=1)]
