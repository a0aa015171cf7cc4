"""BM25 over a pack's chunks with bm25s, persisted beside the Chroma index and memory-mapped on reopen (issue 16).

BM25's IDF and average chunk length are corpus-wide, so any change to the chunk set changes every
score: "incremental" here means the index is rebuilt only when the chunk set changed, never when a
process starts. Each chunk set has its own folder, named by its fingerprint (chunk ids and content
hashes, the tokenizer and the BM25 variant), written atomically (temp folder, then one rename);
folders of older chunk sets are removed after a rebuild.
"""

from __future__ import annotations

import hashlib
import logging
import shutil
from array import array
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from engine import text
from engine.errors import CheckpointError, PackError
from engine.knowledge.chunking import Chunk
from engine.knowledge.writer import is_staging, staged, sweep_staging
from engine.retrieval.index import chunk_fingerprint, collection_name
from engine.settings import Settings

# bm25s defaults k1=1.5, b=0.75 (as rank-bm25's Okapi had); Lucene's IDF never goes negative, so a term
# found in most chunks of a small pack still counts for a little instead of against a chunk
SPARSE_ID = "bm25s-lucene"
_PARAMS = "params.index.json"  # bm25s writes it last; a folder is only ever renamed into place complete
log = logging.getLogger(__name__)


def chunk_terms(chunk: Chunk) -> list[str]:
    """What BM25 indexes: the content words of title and text (engine.text, the one tokenizer)."""
    return text.content_words(f"{chunk.title} {chunk.text}")


def tokenizer_id() -> str:
    """Changes with engine.text's word pattern or stopwords, so an index is never read with other terms."""
    spec = text.WORD.pattern + "\x1f" + " ".join(sorted(text.STOPWORDS))
    return hashlib.sha256(spec.encode()).hexdigest()[:12]


def sparse_folder(settings: Settings, pack_key: str, chunking_key: str) -> Path:
    """Beside the Chroma index, keyed like its collection but for the encoder, which BM25 does not use."""
    return settings.bm25 / collection_name(pack_key, SPARSE_ID, chunking_key)


class SparseIndex:
    """A bm25s index and the chunk id of each of its rows."""

    def __init__(self, model, chunk_ids: Sequence[str], built: bool):  # noqa: ANN001 — bm25s.BM25, imported lazily
        self.model = model
        self.chunk_ids = chunk_ids
        self.built = built  # True when this process built it, False when it was loaded from disk

    @classmethod
    def build(cls, chunks: Sequence[Chunk]) -> SparseIndex:
        """Token ids are assigned while tokenising, so no list of term strings per chunk is ever held."""
        import bm25s

        vocab: dict[str, int] = {}
        rows = [array("i", [vocab.setdefault(t, len(vocab)) for t in chunk_terms(c)]) for c in chunks]
        model = bm25s.BM25(method="lucene")
        model.index((rows, vocab), create_empty_token=False, show_progress=False)
        return cls(model, [c.id for c in chunks], built=True)

    @classmethod
    def load(cls, folder: Path, chunks: Sequence[Chunk]) -> SparseIndex:
        """The score matrix stays on disk (mmap); only the vocabulary is read into memory."""
        import bm25s

        model = bm25s.BM25.load(folder, mmap=True, show_progress=False)
        if model.scores["num_docs"] != len(chunks):
            raise CheckpointError(f"{folder} holds {model.scores['num_docs']} chunks, the pack {len(chunks)}")
        return cls(model, [c.id for c in chunks], built=False)

    def save(self, folder: Path) -> None:
        self.model.save(folder, show_progress=False)

    def query(self, query: str, k: int) -> list[tuple[str, float]]:
        """(chunk id, BM25 score) best first; chunks sharing no term with the query are left out."""
        ids = self.model.get_tokens_ids(text.content_words(query))
        if not ids or k < 1:
            return []
        scores = self.model.get_scores_from_ids(ids)
        return [(self.chunk_ids[i], float(scores[i])) for i in _top(scores, k)]


def _top(scores: np.ndarray, k: int) -> np.ndarray:
    """Rows of the k best positive scores, best first; ties keep pack order, so results are reproducible."""
    rows = np.flatnonzero(scores > 0)
    if len(rows) > k:
        kth = np.partition(scores[rows], -k)[-k]
        rows = rows[scores[rows] >= kth]  # every row tied with the k-th stays, and the sort below decides
    return rows[np.lexsort((rows, -scores[rows]))[:k]]


def open_sparse(folder: Path, chunks: Sequence[Chunk]) -> SparseIndex:
    """This chunk set's index: loaded if any process built it before, else built, saved and returned."""
    generation = folder / _generation(chunks)
    if (generation / _PARAMS).is_file():
        try:
            return SparseIndex.load(generation, chunks)
        except (OSError, ValueError, CheckpointError) as exc:  # a damaged or stale folder costs a rebuild
            log.warning("sparse index %s is unreadable (%s); rebuilding it", generation, exc)
            shutil.rmtree(generation, ignore_errors=True)
    index = SparseIndex.build(chunks)
    try:
        with staged(generation) as staging:
            index.save(staging)
    except (PackError, OSError):
        if not (generation / _PARAMS).is_file():
            raise
        # another process saved the same chunk set meanwhile: its index equals ours
    _remove_other_generations(folder, keep=generation.name)
    return index


def _generation(chunks: Sequence[Chunk]) -> str:
    spec = f"{SPARSE_ID}|{tokenizer_id()}|{chunk_fingerprint(chunks)}"
    return hashlib.sha256(spec.encode()).hexdigest()[:32]


def _remove_other_generations(folder: Path, keep: str) -> None:
    """Older chunk sets' folders go; a process still reading one keeps its open files (POSIX unlink)."""
    sweep_staging(folder)
    for entry in folder.iterdir():
        if entry.name != keep and entry.is_dir() and not entry.is_symlink() and not is_staging(entry):
            shutil.rmtree(entry, ignore_errors=True)
