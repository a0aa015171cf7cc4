"""Vectors by content hash in Chroma: read back by id in any later process; a failing store is an empty one."""

from __future__ import annotations

import numpy as np

from engine.retrieval.index import chroma_client
from engine.retrieval.vector_store import VectorStore, text_key


class FakeCollection:
    """An in-memory collection that records the size of every call and can be told to fail."""

    def __init__(self, fail: str = ""):
        self.rows: dict[str, list[float]] = {}
        self.calls: list[tuple[str, int]] = []
        self.fail = fail

    def get(self, ids, include):
        self.calls.append(("get", len(ids)))
        if self.fail == "get":
            raise RuntimeError("disk I/O error")
        found = [i for i in ids if i in self.rows]
        return {"ids": found, "embeddings": [self.rows[i] for i in found]}

    def upsert(self, ids, embeddings):
        self.calls.append(("upsert", len(ids)))
        if self.fail == "upsert":
            raise RuntimeError("database is locked")
        self.rows.update(zip(ids, np.asarray(embeddings).tolist()))


class FakeClient:
    def __init__(self, collection: FakeCollection):
        self.collection = collection

    def get_or_create_collection(self, name, embedding_function):
        return self.collection

    def get_max_batch_size(self) -> int:
        return 2


def test_vectors_written_by_one_store_are_read_by_id_by_another_on_the_same_folder(tmp_path) -> None:
    keys = [text_key(t) for t in ("alpha", "beta")]
    VectorStore(lambda: chroma_client(tmp_path / "chroma"), "rs-test-1").write(keys, np.eye(2, 3, dtype=np.float32))
    later = VectorStore(lambda: chroma_client(tmp_path / "chroma"), "rs-test-1")
    found = later.read([keys[1], text_key("gamma")])
    assert list(found) == [keys[1]] and found[keys[1]].tolist() == [0.0, 1.0, 0.0] and not later.problem


def test_reads_and_writes_go_in_batches_of_the_client_s_maximum() -> None:
    collection = FakeCollection()
    store = VectorStore(lambda: FakeClient(collection), "rs-test-2")
    store.write(list("abcde"), np.ones((5, 3), dtype=np.float32))
    assert len(store.read(list("abcdefg"))) == 5
    assert collection.calls == [("upsert", 2), ("upsert", 2), ("upsert", 1), ("get", 2), ("get", 2), ("get", 2),
                                ("get", 1)]


def test_a_store_that_fails_to_read_is_empty_says_why_and_is_not_asked_again() -> None:
    collection = FakeCollection(fail="get")
    store = VectorStore(lambda: FakeClient(collection), "rs-test-3")
    assert store.read(["a"]) == {} and store.read(["a"]) == {}
    assert collection.calls == [("get", 1)]
    assert store.problem == ("vector store rs-test-3 could not be read (RuntimeError: disk I/O error); "
                             "encoding instead")


def test_a_store_that_fails_to_write_does_not_raise() -> None:
    store = VectorStore(lambda: FakeClient(FakeCollection(fail="upsert")), "rs-test-4")
    store.write(["a"], np.ones((1, 3), dtype=np.float32))
    assert "could not be written (RuntimeError: database is locked)" in store.problem
