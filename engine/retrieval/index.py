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
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import numpy as np

from engine.cache import Registry
from engine.disk import exception_chain, raising_disk_full
from engine.errors import BackendError, RagscopeError
from engine.knowledge.chunking import Chunk
from engine.retrieval.embedder import Embedder
from engine.settings import env_seconds
from engine.urls import http_url

Progress = Callable[[int, int], None]  # (chunks embedded so far, chunks to embed); (0, n) first when there is work
# encoder batches per embed-and-write step: enough for Chroma's insert to amortise, few enough that
# progress (and a cancel checked there) comes every few seconds; Chroma caps it at its max batch size
WRITE_BATCHES = 8
_READ_PAGE = 10_000  # ids and hashes read per call when diffing, so a 1M-chunk diff stays small in memory
_STAMP = "ragscope_chunks"  # collection metadata: fingerprint of the chunk set the index last synced to
_CLIENTS: Registry[str, object] = Registry()
TIMEOUT_VARIABLE = "RAGSCOPE_CHROMA_TIMEOUT_S"
DEFAULT_TIMEOUT_S = 30.0  # per request to a Chroma server: a sync writes a batch at a time, a query takes ms


def chroma_client(index_dir: Path, url: str = "") -> Any:
    """One client per location per process: Chroma refuses two clients on one path.

    A shared server (RAGSCOPE_CHROMA_URL) that is malformed, does not answer or answers nothing within
    RAGSCOPE_CHROMA_TIMEOUT_S is a BackendError; a full disk under the local index is DiskFull. Either
    names where and says what to do, and the CLI exits 2 with it instead of printing a traceback.
    """
    if not url:
        return _CLIENTS.get(str(index_dir.resolve()), lambda: _open_local(index_dir.resolve()))
    timeout_s = chroma_timeout_s()
    return _CLIENTS.get(f"{url} timeout={timeout_s:g}", lambda: _open_server(url, timeout_s))


def chroma_timeout_s() -> float:
    """Seconds one request to a Chroma server may wait for it: RAGSCOPE_CHROMA_TIMEOUT_S, default 30."""
    text, seconds = env_seconds(TIMEOUT_VARIABLE)
    if not text:
        return DEFAULT_TIMEOUT_S
    if seconds is None:
        raise BackendError(f"{TIMEOUT_VARIABLE}={text!r} is not a number of seconds above 0; "
                           f"e.g. {DEFAULT_TIMEOUT_S:g}, or unset it")
    return seconds


def _open_local(index_dir: Path) -> Any:
    import chromadb
    from chromadb.config import Settings as ChromaSettings
    from chromadb.errors import InternalError

    with raising_disk_full(index_dir, unexplained=(InternalError,)):
        index_dir.mkdir(parents=True, exist_ok=True)
        try:
            return chromadb.PersistentClient(str(index_dir), settings=ChromaSettings(anonymized_telemetry=False))
        except Exception:
            _forget_failed_start(str(index_dir))
            raise


def _forget_failed_start(identifier: str) -> None:
    """chromadb 1.5.9 caches a path's System before starting it and keeps it when the start fails (a full
    disk): every later client on that path, after space was freed too, fails with "'RustBindingsAPI' object
    has no attribute 'bindings'". Drop it, so the next open starts afresh; one that a client holds (a
    reference counted) started fine and stays."""
    from chromadb.api.shared_system_client import SharedSystemClient

    if identifier not in SharedSystemClient._identifier_to_refcount:
        SharedSystemClient._identifier_to_system.pop(identifier, None)


def _open_server(url: str, timeout_s: float) -> Any:
    import chromadb
    import httpx
    from chromadb.config import Settings as ChromaSettings

    scheme, host, port = parse_chroma_url(url)
    try:
        # the constructor already asks the server (identity, tenant, database) on a session with no timeout
        client = _within(timeout_s, lambda: chromadb.HttpClient(
            host=host, port=port, ssl=scheme == "https", settings=ChromaSettings(anonymized_telemetry=False)))
    except Exception as exc:  # chromadb raises ValueError, httpx errors or its own by version
        raise server_failure(url, "connecting", exc) from exc
    # chromadb 1.5.9 builds that httpx session with timeout=None and has no setting for it (chroma-core/chroma
    # issue 5805): a stalled server would hang every later call for ever
    client._server._session.timeout = httpx.Timeout(timeout_s)
    return client


def _within(seconds: float, build: Callable[[], Any]) -> Any:
    """`build()` in a daemon thread, given up on (TimeoutError) after `seconds`: the thread may stay blocked
    until the server wakes, but neither the caller nor the process's exit waits for it."""
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def run() -> None:
        try:
            outcome["value"] = build()
        except BaseException as exc:  # noqa: BLE001  handed to the caller below
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=run, name="chroma-connect", daemon=True).start()
    if not done.wait(seconds):
        raise TimeoutError(f"no answer within {seconds:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def server_failure(url: str, doing: str, exc: BaseException) -> BackendError:
    """A Chroma server's failure as the user can act on it: which server, what we were doing, what to do."""
    import httpx

    causes = tuple(exception_chain(exc))  # chromadb re-raises some (a refused connection) as a ValueError
    if any(isinstance(c, (httpx.TimeoutException, TimeoutError)) for c in causes):
        what = "gave no answer in time"
        hint = (f"check that it runs and is not stalled, or raise {TIMEOUT_VARIABLE} (default "
                f"{DEFAULT_TIMEOUT_S:g} s) if it is only slow")
    elif any(isinstance(c, (httpx.TransportError, ConnectionError)) for c in causes):  # refused, reset, cut off
        what, hint = "did not answer", "start it (`chroma run`)"
    else:
        what, hint = "failed", "see the server's log"
    return BackendError(f"the Chroma server at RAGSCOPE_CHROMA_URL={url!r} {what} while {doing} "
                        f"({type(exc).__name__}: {exc}); {hint}, or unset RAGSCOPE_CHROMA_URL to use the local index")


@contextmanager
def chroma_errors(client: Any, doing: str) -> Iterator[None]:
    """A Chroma call's failure as an error the user can act on: under a local index a full disk becomes
    DiskFull naming its folder; with a server every failure becomes a BackendError naming the server (the
    run that met it then ends with `backend_failure`, engine.runner)."""
    from chromadb.errors import InternalError

    settings = client.get_settings()
    if settings.is_persistent:
        with raising_disk_full(Path(settings.persist_directory), unexplained=(InternalError,)):
            yield
        return
    try:
        yield
    except RagscopeError:
        raise
    except Exception as exc:
        scheme = "https" if settings.chroma_server_ssl_enabled else "http"
        raise server_failure(f"{scheme}://{settings.chroma_server_host}:{settings.chroma_server_http_port}",
                             doing, exc) from exc


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
        with chroma_errors(client, f"opening collection {name}"):
            self.collection = client.get_or_create_collection(name=name, embedding_function=None,
                                                              metadata={"hnsw:space": "cosine"})
        self._lock = threading.Lock()

    def count(self) -> int:
        with chroma_errors(self.client, f"counting collection {self.name}"):
            return self.collection.count()

    def sync(self, chunks: Sequence[Chunk], progress: Progress | None = None) -> SyncReport:
        """Embed only chunks that are new or whose text changed; drop chunks that disappeared.

        An unchanged chunk set is recognised by the stamp the last sync left, without reading the index.
        """
        fingerprint = chunk_fingerprint(chunks)
        with self._lock, chroma_errors(self.client, f"syncing collection {self.name}"):
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
        with chroma_errors(self.client, f"reading vectors of collection {self.name}"):
            got = self.collection.get(ids=list(dict.fromkeys(ids)), include=["embeddings"])
        return {i: np.asarray(v, dtype=np.float32) for i, v in zip(got["ids"], got["embeddings"])}

    def query(self, vector: Sequence[float], k: int) -> list[tuple[str, float]]:
        """(chunk id, cosine similarity) best first; Chroma itself returns fewer when it holds fewer."""
        with chroma_errors(self.client, f"querying collection {self.name}"):
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
