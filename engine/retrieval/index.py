"""Persistent Chroma index of a pack's chunks, synced incrementally by content hash (DESIGN §6).

Syncing streams (issue 16: 1M-chunk indexes): chunks are embedded and written a batch at a time, the
next batch embedded while the previous one is written, so beyond the chunks themselves and their ids
and hashes a sync holds one batch of vectors, whatever the corpus size.
"""

from __future__ import annotations

import hashlib
import re
import threading
import time
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from engine.cache import Registry
from engine.errors import BackendError
from engine.knowledge.chunking import Chunk
from engine.retrieval.embedder import Embedder
from engine.urls import http_url

Progress = Callable[[int, int], None]  # (chunks embedded so far, chunks to embed); (0, n) first when there is work
# encoder batches per embed-and-write step: enough for Chroma's insert to amortise, few enough that
# progress (and a cancel checked there) comes every few seconds; Chroma caps it at its max batch size
WRITE_BATCHES = 8
_READ_PAGE = 10_000  # ids and hashes read per call when diffing, so a 1M-chunk diff stays small in memory
_STAMP = "ragscope_chunks"  # collection metadata: fingerprint of the chunk set the index last synced to
_CLIENTS: Registry[str, object] = Registry()


def chroma_client(index_dir: Path, url: str = "") -> Any:
    """One client per location per process: Chroma refuses two clients on one path.

    A shared server (RAGSCOPE_CHROMA_URL) that is malformed or does not answer is a BackendError: the
    user pointed us at it, so the message names it and the CLI exits 2 instead of printing a traceback.
    """
    return _CLIENTS.get(url or str(index_dir.resolve()), lambda: _open_client(index_dir, url))


def _open_client(index_dir: Path, url: str) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings

    settings = ChromaSettings(anonymized_telemetry=False)
    if not url:
        index_dir.mkdir(parents=True, exist_ok=True)
        return chromadb.PersistentClient(str(index_dir), settings=settings)
    scheme, host, port = parse_chroma_url(url)
    try:
        return chromadb.HttpClient(host=host, port=port, ssl=scheme == "https", settings=settings)
    except Exception as exc:  # chromadb raises ValueError, httpx errors or its own by version
        raise BackendError(f"the Chroma server at RAGSCOPE_CHROMA_URL={url!r} did not answer "
                           f"({type(exc).__name__}: {exc}); start it (`chroma run`) or unset the "
                           "variable to use the local index") from exc


def parse_chroma_url(url: str) -> tuple[str, str, int]:
    """(scheme, host, port) of http(s)://host[:port][/]; anything else (paths, credentials, bad ports) is refused."""
    parts = http_url(url.strip(), "RAGSCOPE_CHROMA_URL", "http://127.0.0.1:8000", BackendError)
    if parts.username or parts.password or parts.path not in ("", "/") or parts.query or parts.fragment:
        raise BackendError(f"RAGSCOPE_CHROMA_URL {url!r} is not http(s)://host[:port]")
    port = parts.port or 8000
    return parts.scheme, parts.hostname, port


def collection_name(pack_key: str, embedder_id: str, chunking_key: str) -> str:
    """Chroma allows 3–512 chars of [a-zA-Z0-9._-]; the hash keeps distinct keys distinct."""
    digest = hashlib.sha256(f"{pack_key}|{embedder_id}|{chunking_key}".encode()).hexdigest()[:10]
    readable = re.sub(r"[^a-zA-Z0-9_-]+", "-", pack_key)[:40].strip("-_") or "pack"
    return f"rs-{readable}-{digest}"


def chunk_fingerprint(chunks: Sequence[Chunk]) -> str:
    """Hash of the chunk set (ids and content hashes, in order): equal fingerprints need no sync."""
    digest = hashlib.sha256()
    for chunk in chunks:
        digest.update(f"{chunk.id}\x1f{chunk.hash}\n".encode())
    return digest.hexdigest()


@dataclass(frozen=True)
class SyncReport:
    added: int
    removed: int
    kept: int


@dataclass(frozen=True)
class IndexProgress:
    """Where an index build stands, with the rate so far and the time left at that rate."""

    done: int
    total: int
    seconds: float

    @property
    def rate(self) -> float:
        """Chunks per second so far."""
        return self.done / self.seconds if self.seconds > 0 else 0.0

    @property
    def eta_s(self) -> float | None:
        """Seconds left at the rate so far; None before the first batch gives a rate."""
        return (self.total - self.done) / self.rate if self.rate > 0 else None

    def describe(self) -> str:
        eta = "" if self.eta_s is None or self.done >= self.total else f", {_duration(self.eta_s)} left"
        return f"{self.done:,} of {self.total:,} chunks ({self.rate:,.0f}/s{eta})"


def with_eta(report: Callable[[IndexProgress], None], clock: Callable[[], float] = time.perf_counter) -> Progress:
    """A `Progress` callback that hands `report` the rate and ETA, timed from the sync's (0, n) call."""
    started: list[float] = []

    def progress(done: int, total: int) -> None:
        now = clock()
        if done == 0 or not started:
            started[:] = [now]
        report(IndexProgress(done, total, now - started[0]))

    return progress


def _duration(seconds: float) -> str:
    minutes, secs = divmod(round(seconds), 60)
    hours, minutes = divmod(minutes, 60)
    return f"{hours}h{minutes:02d}m" if hours else f"{minutes}m{secs:02d}s" if minutes else f"{secs}s"


class ChunkIndex:
    """A pack's chunks in one Chroma collection (cosine space), keyed by pack, encoder and chunking."""

    def __init__(self, client: Any, name: str, embedder: Embedder):
        self.name = name
        self.embedder = embedder
        self.client = client
        # no embedding function: vectors always come from `embedder`, and Chroma's default one downloads
        self.collection = client.get_or_create_collection(name=name, embedding_function=None,
                                                          metadata={"hnsw:space": "cosine"})
        self._lock = threading.Lock()

    def count(self) -> int:
        return self.collection.count()

    def sync(self, chunks: Sequence[Chunk], progress: Progress | None = None) -> SyncReport:
        """Embed only chunks that are new or whose text changed; drop chunks that disappeared.

        An unchanged chunk set is recognised by the stamp the last sync left, without reading the index.
        """
        fingerprint = chunk_fingerprint(chunks)
        with self._lock:
            if self._stamp() == fingerprint and self.count() == len(chunks):
                return SyncReport(added=0, removed=0, kept=len(chunks))
            self._set_stamp("")  # a sync cut short must not leave a stamp that claims the old set
            have = self._stored_hashes()
            wanted = {c.id: c.hash for c in chunks}
            stale = [i for i, h in have.items() if wanted.get(i) != h]
            todo = [c for c in chunks if have.get(c.id) != c.hash]
            size = min(self.embedder.batch_size * WRITE_BATCHES, self.client.get_max_batch_size())
            for start in range(0, len(stale), size):
                self.collection.delete(ids=stale[start:start + size])
            self._write(todo, size, progress)
            self._set_stamp(fingerprint)
            return SyncReport(added=len(todo), removed=sum(1 for i in have if i not in wanted),
                              kept=len(chunks) - len(todo))

    def _stamp(self) -> str:
        metadata = self.client.get_collection(self.name).metadata or {}  # fresh: another process may sync
        return str(metadata.get(_STAMP, ""))

    def _set_stamp(self, fingerprint: str) -> None:
        self.collection.modify(metadata={_STAMP: fingerprint})  # the cosine space lives in its configuration

    def _stored_hashes(self) -> dict[str, str]:
        have: dict[str, str] = {}
        for offset in range(0, self.count(), _READ_PAGE):
            page = self.collection.get(include=["metadatas"], limit=_READ_PAGE, offset=offset)
            have.update((i, str((m or {}).get("hash"))) for i, m in zip(page["ids"], page["metadatas"]))
        return have

    def _write(self, todo: Sequence[Chunk], size: int, progress: Progress | None) -> None:
        """Embed batch n+1 while batch n is written: the encoder and Chroma's insert overlap."""
        if todo and progress:
            progress(0, len(todo))
        pending: Future | None = None
        with ThreadPoolExecutor(max_workers=1, thread_name_prefix="chroma-write") as writer:
            for start in range(0, len(todo), size):
                batch = todo[start:start + size]
                vectors = self.embedder.encode([embedding_text(c) for c in batch])
                if pending is not None:
                    pending.result()
                    if progress:
                        progress(start, len(todo))
                pending = writer.submit(
                    self.collection.upsert, ids=[c.id for c in batch], embeddings=vectors,
                    metadatas=[{"doc_id": c.doc_id, "chunk_id": c.id, "title": c.title,
                                "hash": c.hash, "index": c.index} for c in batch])
            if pending is not None:
                pending.result()
                if progress:
                    progress(len(todo), len(todo))

    def vectors(self, ids: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors of those chunk ids the index holds, by id (fetched by id, never the whole index)."""
        got = self.collection.get(ids=list(dict.fromkeys(ids)), include=["embeddings"])
        return {i: np.asarray(v, dtype=np.float32) for i, v in zip(got["ids"], got["embeddings"])}

    def query(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity) best first; Chroma itself returns fewer when it holds fewer."""
        results = self.collection.query(query_embeddings=[np.asarray(vector, dtype=np.float32)],
                                        n_results=max(1, k), include=["distances"])
        return [(i, 1.0 - float(d)) for i, d in zip(results["ids"][0], results["distances"][0])]


class Titled(Protocol):
    title: str
    text: str


def embedding_text(chunk: Titled) -> str:
    """What the index embeds for a chunk (a `Chunk` or the `Hit` it came back as), and so what every method that
    compares with those vectors embeds: the title with the text, as entity pages rarely repeat their own name."""
    return f"{chunk.title}. {chunk.text}" if chunk.title else chunk.text
