"""The persisted BM25 index (bm25s): built once per chunk set, reused by later processes, rebuilt on edits."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from dataclasses import replace

import numpy as np
import pytest

import engine.text
from engine.knowledge.records import Pack
from engine.retrieval.sparse import SparseIndex, _top, chunk_terms, sparse_folder
from engine.retrieval.suite import Retrieval, pack_key
from engine.settings import Settings
from engine.text import content_words
from paths import ROOT

# What rank-bm25 (the BM25 before issue 16) returned on the mini pack, ties in pack order.
RANK_BM25_TOP = {
    "In which city was Ada Lovelace born?": ["m01#0", "m09#0", "m07#0", "m08#0", "m06#0"],
    "When was Grace Hopper born?": ["m07#0", "m01#0", "m02#0", "m04#0"],
    "In which country is the college where Alan Turing studied?": ["m04#0", "m10#0", "m05#0", "m11#0"],
    "When did Grace Hopper win the Turing Award for the Analytical Engine?":
        ["m07#0", "m09#0", "m02#0", "m01#0", "m10#0"],
    "Lovelace": ["m01#0", "m09#0"],
}

OTHER_PROCESS = textwrap.dedent("""
    import json, sys
    from pathlib import Path
    from engine.knowledge.loader import load_pack
    from engine.retrieval.suite import Retrieval
    from engine.settings import Settings
    retrieval = Retrieval(load_pack(sys.argv[1]), Settings(home=Path(sys.argv[2])))
    hits = retrieval.search("Where was Grace Hopper born?", k=3, retriever="bm25")
    print(json.dumps({"built": retrieval.sparse.built, "hits": [h.chunk_id for h in hits],
                      "mmap": type(retrieval.sparse.model.scores["data"]).__name__}))
""")


def _generations(retrieval: Retrieval) -> list[str]:
    folder = sparse_folder(retrieval.settings, pack_key(retrieval.pack), retrieval.chunking.key)
    return sorted(p.name for p in folder.iterdir())


def _edited(pack: Pack) -> Pack:
    docs = list(pack.documents)
    docs[0] = replace(docs[0], text=docs[0].text + " She corresponded with Mary Somerville.")
    return Pack(info=pack.info, documents=tuple(docs), path=pack.path)


def test_a_new_process_loads_the_saved_sparse_index_instead_of_rebuilding_it(mini_pack, tmp_path):
    first = Retrieval(mini_pack, Settings(home=tmp_path))
    expected = [h.chunk_id for h in first.search("Where was Grace Hopper born?", k=3, retriever="bm25")]
    assert first.sparse.built
    [generation] = _generations(first)
    folder = sparse_folder(first.settings, pack_key(mini_pack), first.chunking.key) / generation
    written = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}

    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run([sys.executable, "-c", OTHER_PROCESS, str(mini_pack.path), str(tmp_path)],
                          cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    other = json.loads(done.stdout.strip().splitlines()[-1])
    assert other == {"built": False, "hits": expected, "mmap": "memmap"}
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == written
    assert _generations(first) == [generation]


def test_an_edited_pack_rebuilds_the_sparse_index_and_drops_the_old_one(mini_pack, tmp_path):
    settings = Settings(home=tmp_path)
    before = Retrieval(mini_pack, settings)
    assert before.search("Mary Somerville", retriever="bm25") == ()
    [old] = _generations(before)

    after = Retrieval(_edited(mini_pack), settings)
    hits = after.search("Mary Somerville", retriever="bm25")
    assert after.sparse.built and [h.chunk_id for h in hits] == ["m01#0"]
    assert len(_generations(after)) == 1 and _generations(after) != [old]
    assert not Retrieval(_edited(mini_pack), settings).sparse.built


def test_ensure_index_builds_the_sparse_index_before_the_first_search(mini_pack, tmp_path):
    retrieval = Retrieval(mini_pack, Settings(home=tmp_path))
    retrieval.ensure_index()
    assert "sparse" in vars(retrieval) and len(_generations(retrieval)) == 1


@pytest.mark.parametrize("question", list(RANK_BM25_TOP))
def test_bm25s_returns_the_same_top_chunks_as_rank_bm25_did(mini_workbench, question):
    hits = mini_workbench.retrieval.search(question, k=5, retriever="bm25")
    assert [h.chunk_id for h in hits] == RANK_BM25_TOP[question]
    assert all(h.score > 0 for h in hits) and {h.retriever for h in hits} == {"bm25"}


def test_the_index_holds_the_content_words_of_engine_text_and_queries_use_them_too(mini_pack, tmp_path):
    retrieval = Retrieval(mini_pack, Settings(home=tmp_path))
    terms = {t for c in retrieval.chunks for t in chunk_terms(c)}
    assert set(retrieval.sparse.model.vocab_dict) == terms
    assert terms == {t for c in retrieval.chunks for t in content_words(f"{c.title} {c.text}")}
    assert not terms & engine.text.STOPWORDS
    # a possessive, upper case and stopwords tokenise as in engine.text: the query is "lovelace"
    assert [h.chunk_id for h in retrieval.search("WHO was LOVELACE's", retriever="bm25")] == \
        [h.chunk_id for h in retrieval.search("Lovelace", retriever="bm25")]


def test_a_changed_tokenizer_gets_its_own_index(mini_pack, tmp_path, monkeypatch):
    settings = Settings(home=tmp_path)
    Retrieval(mini_pack, settings).sparse  # noqa: B018 — build it
    monkeypatch.setattr(engine.text, "STOPWORDS", engine.text.STOPWORDS | {"born"})
    rebuilt = Retrieval(mini_pack, settings)
    assert rebuilt.sparse.built and "born" not in rebuilt.sparse.model.vocab_dict


def test_a_damaged_sparse_index_is_rebuilt_with_a_warning(mini_pack, tmp_path, caplog):
    settings = Settings(home=tmp_path)
    first = Retrieval(mini_pack, settings)
    assert first.sparse.built
    folder = sparse_folder(settings, pack_key(mini_pack), first.chunking.key)
    [generation] = _generations(first)
    (folder / generation / "data.csc.index.npy").write_bytes(b"not numpy")
    again = Retrieval(mini_pack, settings)
    assert again.search("Grace Hopper", retriever="bm25")[0].doc_id == "m07"
    assert again.sparse.built and "unreadable" in caplog.text
    assert not Retrieval(mini_pack, settings).sparse.built  # the rebuilt one was saved


def test_top_keeps_positive_scores_best_first_and_breaks_ties_by_pack_order():
    scores = np.array([0.0, 2.0, 1.0, 2.0, 1.0, 1.0, -1.0], dtype=np.float32)
    assert _top(scores, 3).tolist() == [1, 3, 2]
    assert _top(scores, 10).tolist() == [1, 3, 2, 4, 5]
    assert _top(np.zeros(4, dtype=np.float32), 2).tolist() == []


def test_a_chunk_without_content_words_is_indexed_and_never_returned(mini_pack, tmp_path):
    chunks = Retrieval(mini_pack, Settings(home=tmp_path)).chunks
    empty = replace(chunks[0], id="blank#0", title="", text="the of and")
    index = SparseIndex.build((empty, *chunks))
    assert [cid for cid, _ in index.query("Lovelace", 20)] == ["m01#0", "m09#0"]
    assert index.query("the of", 5) == [] and index.query("Lovelace", 0) == []
