"""Persistent Chroma index of a pack's chunks, synced incrementally by content hash (DESIGN §6)."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from engine.knowledge.chunking import Chunk
from engine.retrieval.embedder import Embedder

Progress = Callable[[int, int], None]
_BATCH = 256
_CLIENTS: dict[str, object] = {}
_CLIENTS_LOCK = threading.Lock()


def chroma_client(index_dir: Path, url: str = ""):
    """One client per location per process: Chroma refuses two clients on one path."""
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    key = url or str(index_dir.resolve())
    with _CLIENTS_LOCK:
        if key not in _CLIENTS:
            settings = ChromaSettings(anonymized_telemetry=False)
            if url:
                match = re.match(r"^(https?)://([^:/]+)(?::(\d+))?", url)
                if not match:
                    raise ValueError(f"RAGSCOPE_CHROMA_URL {url!r} is not http(s)://host[:port]")
                _CLIENTS[key] = chromadb.HttpClient(
                    host=match[2], port=int(match[3] or 8000), ssl=match[1] == "https", settings=settings)
            else:
                index_dir.mkdir(parents=True, exist_ok=True)
                _CLIENTS[key] = chromadb.PersistentClient(str(index_dir), settings=settings)
        return _CLIENTS[key]


def collection_name(pack_key: str, embedder_id: str, chunking_key: str) -> str:
    """Chroma allows 3–512 chars of [a-zA-Z0-9._-]; the hash keeps distinct keys distinct."""
    digest = hashlib.sha256(f"{pack_key}|{embedder_id}|{chunking_key}".encode()).hexdigest()[:10]
    readable = re.sub(r"[^a-zA-Z0-9_-]+", "-", pack_key)[:40].strip("-_") or "pack"
    return f"rs-{readable}-{digest}"


@dataclass(frozen=True)
class SyncReport:
    added: int
    removed: int
    kept: int


class ChunkIndex:
    """A pack's chunks in one Chroma collection (cosine space), keyed by pack, encoder and chunking."""

    def __init__(self, client, name: str, embedder: Embedder):
        from langchain_chroma import Chroma

        self.name = name
        self.embedder = embedder
        self.store = Chroma(
            client=client, collection_name=name, embedding_function=embedder,
            collection_metadata={"hnsw:space": "cosine"},
        )
        self.collection = client.get_collection(name)
        self._lock = threading.Lock()

    def count(self) -> int:
        return self.collection.count()

    def sync(self, chunks: Sequence[Chunk], progress: Progress | None = None) -> SyncReport:
        """Embed only chunks that are new or whose text changed; drop chunks that disappeared."""
        with self._lock:
            existing = self.store.get(include=["metadatas"])
            have = {i: (m or {}).get("hash") for i, m in zip(existing["ids"], existing["metadatas"])}
            wanted = {c.id: c for c in chunks}
            stale = [i for i, h in have.items() if i not in wanted or wanted[i].hash != h]
            todo = [c for c in chunks if have.get(c.id) != c.hash]
            if stale:
                self.store.delete(ids=stale)
            for start in range(0, len(todo), _BATCH):
                batch = todo[start:start + _BATCH]
                self.store.add_texts(
                    texts=[_embedding_text(c) for c in batch],
                    metadatas=[{"doc_id": c.doc_id, "chunk_id": c.id, "title": c.title,
                                "hash": c.hash, "index": c.index} for c in batch],
                    ids=[c.id for c in batch],
                )
                if progress:
                    progress(start + len(batch), len(todo))
            return SyncReport(added=len(todo), removed=sum(1 for i in have if i not in wanted),
                              kept=len(chunks) - len(todo))

    def query(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity) best first."""
        k = max(1, min(k, self.count() or 1))
        results = self.collection.query(query_embeddings=[np.asarray(vector, dtype=np.float32)], n_results=k,
                                        include=["distances"])
        return [(i, 1.0 - float(d)) for i, d in zip(results["ids"][0], results["distances"][0])]


def _embedding_text(chunk: Chunk) -> str:
    """The title is embedded with the text: entity pages rarely repeat their own name."""
    return f"{chunk.title}. {chunk.text}" if chunk.title else chunk.text
