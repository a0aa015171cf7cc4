"""A pack's retrieval stack in one object: chunks, the Chroma index, the BM25 index and the fused retriever."""

from __future__ import annotations

import hashlib
import threading
from functools import cached_property

from langchain_core.documents import Document as LcDocument
from langchain_core.retrievers import BaseRetriever

from engine.cache import Registry
from engine.knowledge.chunking import Chunk, ChunkingConfig, chunk_documents
from engine.knowledge.records import Pack
from engine.retrieval.embedder import Embedder, load_embedder
from engine.retrieval.index import ChunkIndex, Progress, SyncReport, chroma_client, collection_name
from engine.retrieval.query_encoder import FINETUNED_RETRIEVER, FinetunedDenseRetriever, load_query_encoder
from engine.retrieval.retrievers import BM25Retriever, DenseRetriever, HybridRetriever
from engine.retrieval.sparse import SparseIndex, open_sparse, sparse_folder
from engine.retrieval.user import RetrieverInputs, RetrieverNames, UserRetriever, build, resolve
from engine.settings import Settings
from engine.trace import Hit
from engine.untraced import untraced

# "dense-ft" needs a query encoder trained by `python -m engine train-retriever` (RuleRAG-FT)
BUILTIN_RETRIEVERS = ("hybrid", "dense", "bm25", FINETUNED_RETRIEVER)
# every method's `retriever=` choices: the built-ins, then the user's own (engine.retrieval.user)
RETRIEVER_NAMES = RetrieverNames()


def pack_key(pack: Pack) -> str:
    """Identity of a pack for its index: name plus where it lives (content changes sync in place)."""
    where = str(pack.path) if pack.path else pack.fingerprint
    return f"{pack.info.name}-{hashlib.sha256(where.encode()).hexdigest()[:6]}"


class Retrieval:
    def __init__(self, pack: Pack, settings: Settings, chunking: ChunkingConfig = ChunkingConfig(),
                 embedder: Embedder | None = None):
        self.pack = pack
        self.settings = settings
        self.chunking = chunking
        self._embedder = embedder
        self._synced = False
        self._lock = threading.Lock()
        self._users: Registry[str, UserRetriever] = Registry()

    @cached_property
    def embedder(self) -> Embedder:
        return self._embedder or load_embedder(self.settings.embedder or None)

    @cached_property
    def chunks(self) -> tuple[Chunk, ...]:
        return tuple(chunk_documents(self.pack.documents, self.chunking))

    @cached_property
    def chunks_by_id(self) -> dict[str, Chunk]:
        return {c.id: c for c in self.chunks}

    @cached_property
    def index(self) -> ChunkIndex:
        client = chroma_client(self.settings.index_dir, self.settings.chroma_url)
        name = collection_name(pack_key(self.pack), self.embedder.id, self.chunking.key)
        return ChunkIndex(client, name, self.embedder)

    @cached_property
    def sparse(self) -> SparseIndex:
        """The BM25 index of these chunks: loaded when any process built it before, else built and saved."""
        return open_sparse(sparse_folder(self.settings, pack_key(self.pack), self.chunking.key), self.chunks)

    def ensure_index(self, progress: Progress | None = None) -> SyncReport | None:
        """Sync the dense index and open the sparse one once per process; later calls are free."""
        with self._lock:
            if self._synced:
                return None
            report = self.index.sync(self.chunks, progress)
            _ = self.sparse  # built here, when the chunk set changed, rather than in the first search
            self._synced = True
            return report

    def retriever(self, name: str = "hybrid", k: int = 5) -> BaseRetriever:
        """A built-in by name, or a user's retriever (its factory called once per pack and process)."""
        if name not in BUILTIN_RETRIEVERS:
            return self._users.get(name, lambda: self._user(name)).model_copy(update={"k": k})
        if name == "bm25":
            return self._bm25.model_copy(update={"k": k})
        if name == FINETUNED_RETRIEVER:
            encoder = self.query_encoder()  # fails before the index is synced when nothing was trained
            self.ensure_index()
            return FinetunedDenseRetriever(chunks=self.chunks_by_id, index=self.index, embedder=encoder, k=k)
        self.ensure_index()
        return (self._dense if name == "dense" else self._hybrid).model_copy(update={"k": k})

    def _user(self, name: str) -> UserRetriever:
        found = resolve(name, self.settings)
        inner = build(found, RetrieverInputs(self.pack, self))
        return UserRetriever(name=name, source=found.source, inner=inner, chunks=self.chunks_by_id)

    # Built once and copied per call: validating the chunk map costs ~25 ms per 100k chunks, ten times a query.
    @cached_property
    def _bm25(self) -> BM25Retriever:
        return BM25Retriever(chunks=self.chunks_by_id, index=self.sparse)

    @cached_property
    def _dense(self) -> DenseRetriever:
        return DenseRetriever(chunks=self.chunks_by_id, index=self.index, embedder=self.embedder)

    @cached_property
    def _hybrid(self) -> HybridRetriever:
        return HybridRetriever(chunks=self.chunks_by_id, dense=self._dense, sparse=self._bm25)

    def query_encoder(self) -> Embedder:
        """The fine-tuned query encoder for this pack and embedder (RuleRAG-FT); UnknownNameError if untrained."""
        return load_query_encoder(self.settings, pack_key(self.pack), self.embedder.id,
                                  str(self.pack.path) if self.pack.path else "")

    def search(self, query: str, k: int = 5, retriever: str = "hybrid", provenance: str = "") -> tuple[Hit, ...]:
        chosen = self.retriever(retriever, k)
        with untraced():  # a user's retriever is a LangChain call: no LangSmith trace leaves the machine
            return hits_from_documents(chosen.invoke(query), provenance)


def hits_from_documents(docs: list[LcDocument], provenance: str = "") -> tuple[Hit, ...]:
    """Our retrievers' Documents (engine.retrieval.retrievers, user.UserRetriever) as hits; score None stays None."""
    return tuple(
        Hit(doc_id=d.metadata["doc_id"], chunk_id=d.metadata["chunk_id"], title=d.metadata["title"],
            text=d.page_content, score=None if d.metadata["score"] is None else float(d.metadata["score"]),
            rank=int(d.metadata["rank"]), retriever=d.metadata["retriever"], provenance=provenance)
        for d in docs
    )


_OPEN: Registry[tuple[str, str, str], Retrieval] = Registry()


def open_retrieval(pack: Pack, settings: Settings) -> Retrieval:
    """One Retrieval per (pack, content, settings) per process, shared by all sessions."""
    return _OPEN.get((pack_key(pack), pack.fingerprint, repr(settings)), lambda: Retrieval(pack, settings))
