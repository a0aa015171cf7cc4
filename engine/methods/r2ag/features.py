"""Retrieval features r, γ, ζ of a top-k list from the embedder's own vectors (spec §2.1, §3 steps 1-5)."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from engine.retrieval.index import embedding_text

if TYPE_CHECKING:
    from engine.retrieval.suite import Retrieval
    from engine.trace import Hit

# [decide 4] the paper's order (r, γ, ζ), not the code's (r, ζ, γ); a checkpoint stores it.
FEATURE_ORDER = ("r", "gamma", "zeta")


@dataclass(frozen=True)
class ListFeatures:
    """Features of one list, already sorted by r descending (the rank every R2AG stage uses).

    `order[i]` is the index, in the list handed in, of the document at rank i.
    """

    order: tuple[int, ...]
    r: tuple[float, ...]
    gamma: tuple[float, ...]
    zeta: tuple[float, ...]

    def matrix(self) -> np.ndarray:
        """(k, 3) float32 in FEATURE_ORDER: the only input the R2-Former ever sees."""
        return np.stack([self.r, self.gamma, self.zeta], axis=1).astype(np.float32) if self.order \
            else np.zeros((0, 3), dtype=np.float32)


def _unit(x: np.ndarray) -> np.ndarray:
    norms = np.linalg.norm(x, axis=-1, keepdims=True)
    return x / np.where(norms == 0, 1.0, norms)


def list_features(query: np.ndarray, docs: np.ndarray, by_relevance: bool = True) -> ListFeatures:
    """query (d,), docs (n, d) → features of the n docs, sorted by cosine to the query or kept in the
    order given (the retriever's rank).

    Cosine is recomputed from the vectors (never the index's distances); γ_1 = 1 as in the code.
    """
    n = len(docs)
    if n == 0:
        return ListFeatures((), (), (), ())
    q, x = _unit(np.asarray(query, dtype=np.float64)), _unit(np.asarray(docs, dtype=np.float64))
    raw = x @ q                                              # (n,)
    order = np.argsort(-raw, kind="stable") if by_relevance else np.arange(n)
    x, r = x[order], raw[order]
    gamma = np.ones(n)
    for i in range(1, n):
        # softmax over predecessors; under cosine the paper's global normaliser cancels (spec §2.1)
        w = np.exp(r[:i] - r[:i].max())
        precedent = _unit((w / w.sum()) @ x[:i])
        gamma[i] = float(x[i] @ precedent)
    neighbour = np.einsum("id,id->i", x[:-1], x[1:])         # s_i = cos(x_i, x_{i+1}), (n-1,)
    if n == 1:
        zeta = np.ones(1)
    else:
        zeta = np.empty(n)
        zeta[0], zeta[-1] = neighbour[0], neighbour[-1]
        zeta[1:-1] = (neighbour[:-1] + neighbour[1:]) / 2
    return ListFeatures(order=tuple(int(i) for i in order), r=_floats(r), gamma=_floats(gamma), zeta=_floats(zeta))


def _floats(values: np.ndarray) -> tuple[float, ...]:
    return tuple(float(v) for v in values)


def hit_vectors(retrieval: Retrieval, query: str, hits: Sequence[Hit]) -> tuple[np.ndarray, np.ndarray]:
    """The query's and the hits' vectors from the retriever's own encoder (the chunks' as indexed)."""
    query_vector = retrieval.embedder.encode_queries([query])[0]
    if not hits:
        return query_vector, np.zeros((0, len(query_vector)), dtype=np.float32)
    retrieval.ensure_index()
    ids = [h.chunk_id for h in hits]
    by_id = retrieval.index.vectors(ids)
    missing = [h for h in hits if h.chunk_id not in by_id]
    if missing:  # e.g. a chunk changed since indexing: encode the text as the index would
        encoded = retrieval.embedder.encode([embedding_text(h) for h in missing])
        by_id.update({h.chunk_id: v for h, v in zip(missing, encoded)})
    return query_vector, np.stack([np.asarray(by_id[i], dtype=np.float32) for i in ids])


def ranked_features(retrieval: Retrieval, query: str, hits: Sequence[Hit],
                    by_relevance: bool = True) -> tuple[tuple[Hit, ...], ListFeatures]:
    """The hits in list order (every later stage and the prompt use it) and their features.

    The paper sorts by r (spec §2.1) because r is its dense retriever's own score; `by_relevance=False`
    keeps the retriever's rank instead, which is the same list for the dense retriever.
    """
    query_vector, vectors = hit_vectors(retrieval, query, sorted(hits, key=lambda h: h.rank))
    features = list_features(query_vector, vectors, by_relevance)
    ordered = sorted(hits, key=lambda h: h.rank)
    return tuple(ordered[i] for i in features.order), features
