"""Vectors of texts kept by content hash in a Chroma collection (issue 16): a text is embedded once, ever.

For text sets that are not a pack's document chunks (the hybrid method's web pages), so unlike
`ChunkIndex` nothing is synced or deleted: a text's vector is looked up by the hash of the text, and
what is missing is embedded by the caller and added. The store is only a cache: when Chroma cannot
be opened, read or written, it logs why once, says so in `problem`, and the caller encodes instead.
"""

from __future__ import annotations

import hashlib
import logging
import threading
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

log = logging.getLogger(__name__)


def text_key(text: str) -> str:
    """The id a text's vector is stored under (content hash: the same text never embeds twice)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


class VectorStore:
    """One Chroma collection of vectors by `text_key`, opened on first use; unusable → empty (logged once)."""

    def __init__(self, open_client: Callable[[], Any], name: str):
        self.name = name
        self._open_client = open_client
        self._collection: Any = None
        self._batch = 0  # ids per Chroma call: the client's maximum batch size
        self._lock = threading.Lock()
        self.problem = ""  # why the store is out of use; empty while it works

    def read(self, keys: Sequence[str]) -> dict[str, np.ndarray]:
        """The stored vectors among `keys` (fetched by id, never the whole collection)."""
        collection = self._ready()
        if collection is None or not keys:
            return {}
        found: dict[str, np.ndarray] = {}
        try:
            for start in range(0, len(keys), self._batch):
                got = collection.get(ids=list(keys[start:start + self._batch]), include=["embeddings"])
                found.update((i, np.asarray(v, dtype=np.float32)) for i, v in zip(got["ids"], got["embeddings"]))
        except Exception as exc:  # noqa: BLE001  a damaged store costs re-encoding, never the run
            self._fail("read", exc)
            return {}
        return found

    def write(self, keys: Sequence[str], vectors: np.ndarray) -> None:
        collection = self._ready()
        if collection is None or not keys:
            return
        try:
            for start in range(0, len(keys), self._batch):
                collection.upsert(ids=list(keys[start:start + self._batch]),
                                  embeddings=vectors[start:start + self._batch])
        except Exception as exc:  # noqa: BLE001  as in read: the caller still has its vectors
            self._fail("written", exc)

    def _ready(self) -> Any:
        with self._lock:  # two sessions' first questions open the collection once
            if self._collection is None and not self.problem:
                try:
                    client = self._open_client()
                    # no embedding function: vectors come from the caller (Chroma's default one downloads)
                    self._collection = client.get_or_create_collection(name=self.name, embedding_function=None)
                    self._batch = int(client.get_max_batch_size())
                except Exception as exc:  # noqa: BLE001  an unopenable store is a missing cache
                    self._fail("opened", exc)
            return self._collection

    def _fail(self, what: str, exc: Exception) -> None:
        self.problem = f"vector store {self.name} could not be {what} ({type(exc).__name__}: {exc}); encoding instead"
        log.warning("%s", self.problem)
        self._collection = None
