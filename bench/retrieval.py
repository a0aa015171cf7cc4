"""Index build, reopen, and our dense retrieval against a bare Chroma query (DESIGN §11).

Usage: python bench/retrieval.py [PACK_DIR]   (default: the demo pack)
"""

from __future__ import annotations

import numpy as np

from common import fresh_settings, median_ms, pack_path, timed
from engine.knowledge.loader import load_pack
from engine.retrieval.embedder import load_embedder
from engine.retrieval.index import embedding_text as _embedding_text
from engine.retrieval.suite import Retrieval


def main() -> None:
    pack = load_pack(pack_path())
    settings = fresh_settings()
    embedder = load_embedder()
    embedder.encode(["warm up the encoder"])  # model load is not index time

    retrieval = Retrieval(pack, settings, embedder=embedder)
    texts = [_embedding_text(c) for c in retrieval.chunks]
    bare_encode_s = timed(lambda: embedder.encode(texts))
    build_s = timed(retrieval.ensure_index)
    reopen_s = timed(lambda: Retrieval(pack, settings, embedder=embedder).ensure_index())

    questions = [q.question for q in pack.questions] or [d.title for d in pack.documents[:50]]
    dense = retrieval.retriever("dense", k=5)
    collection = retrieval.index.collection

    def ours() -> None:
        embedder._cache.clear()  # measure the uncached path; the cache only helps us
        dense.invoke(questions[ours.i % len(questions)])
        ours.i += 1

    def bare() -> None:
        vector = embedder.encode([questions[bare.i % len(questions)]])[0]
        collection.query(query_embeddings=[np.asarray(vector)], n_results=5)
        bare.i += 1

    ours.i = bare.i = 0
    repeats = max(50, len(questions))
    median_ms(ours, 10), median_ms(bare, 10)  # warm both paths
    ours_ms, bare_ms = median_ms(ours, repeats), median_ms(bare, repeats)

    print(f"pack: {pack.info.name} ({len(pack.documents)} documents, {len(retrieval.chunks)} chunks)")
    print(f"index build:         {build_s:6.2f} s   (budget ≤ 15 s)")
    print(f"index reopen + sync: {reopen_s:6.2f} s   (budget ≤ 1 s)")
    print(f"indexing throughput: {len(texts) / build_s:6.1f} chunks/s vs bare encoder "
          f"{len(texts) / bare_encode_s:.1f} chunks/s → ratio {bare_encode_s / build_s:.2f} (budget ≥ 0.8)")
    print(f"dense retrieval:     {ours_ms:6.2f} ms median vs bare Chroma query {bare_ms:.2f} ms "
          f"→ ratio {ours_ms / bare_ms:.2f} (budget ≤ 1.5)")


if __name__ == "__main__":
    main()
