"""The dense index sync: streamed in batches, progress with rate and ETA, and a stamp that makes reopening free."""

from __future__ import annotations

import pytest

import engine.retrieval.index as index_module
from engine.retrieval.index import ChunkIndex, IndexProgress, with_eta
from engine.retrieval.suite import Retrieval
from engine.settings import Settings


class Clock:
    def __init__(self, *times: float):
        self.times = list(times)

    def __call__(self) -> float:
        return self.times.pop(0)


def test_with_eta_times_from_the_first_call_and_projects_the_rest_at_the_rate_so_far():
    seen: list[IndexProgress] = []
    progress = with_eta(seen.append, clock=Clock(100.0, 102.0, 110.0))
    progress(0, 1000), progress(200, 1000), progress(1000, 1000)
    assert [(p.done, p.seconds) for p in seen] == [(0, 0.0), (200, 2.0), (1000, 10.0)]
    assert seen[0].eta_s is None and seen[1].rate == 100.0 and seen[1].eta_s == 8.0 and seen[2].eta_s == 0.0
    assert seen[1].describe() == "200 of 1,000 chunks (100/s, 8s left)"
    assert IndexProgress(1000, 400_000, 10.0).describe() == "1,000 of 400,000 chunks (100/s, 1h06m left)"
    assert IndexProgress(0, 5, 0.0).describe() == "0 of 5 chunks (0/s)"


def test_sync_embeds_and_writes_in_batches_and_reports_each(mini_pack, tmp_path, monkeypatch):
    retrieval = Retrieval(mini_pack, Settings(home=tmp_path))
    monkeypatch.setattr(retrieval.embedder, "_batch_size", 5)
    monkeypatch.setattr(index_module, "WRITE_BATCHES", 1)
    sizes: list[int] = []
    encode = retrieval.embedder.encode
    monkeypatch.setattr(retrieval.embedder, "encode", lambda texts: sizes.append(len(texts)) or encode(texts))
    calls: list[tuple[int, int]] = []
    retrieval.index.sync(retrieval.chunks, lambda done, total: calls.append((done, total)))
    n = len(retrieval.chunks)  # 12 in the mini pack
    assert sizes == [5, 5, n - 10]  # memory is bounded by the batch, not by the pack
    assert calls == [(0, n), (5, n), (10, n), (n, n)]
    assert retrieval.index.count() == n


def test_an_unchanged_chunk_set_is_recognised_without_reading_the_index(mini_pack, tmp_path, monkeypatch):
    settings = Settings(home=tmp_path)
    Retrieval(mini_pack, settings).ensure_index()

    def no_reading(self: ChunkIndex) -> dict[str, str]:
        raise AssertionError("the stamp should have said the index is current")

    monkeypatch.setattr(ChunkIndex, "_stored_hashes", no_reading)
    again = Retrieval(mini_pack, settings)
    report = again.ensure_index()
    assert (report.added, report.removed, report.kept) == (0, 0, len(again.chunks))


def test_a_sync_cut_short_leaves_no_stamp_and_the_next_one_finishes_the_job(mini_pack, tmp_path, monkeypatch):
    settings = Settings(home=tmp_path)
    monkeypatch.setattr(Retrieval(mini_pack, settings).embedder, "_batch_size", 2)  # the shared embedder
    monkeypatch.setattr(index_module, "WRITE_BATCHES", 2)

    def cancel(done: int, total: int) -> None:
        if done >= 4:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        Retrieval(mini_pack, settings).ensure_index(cancel)
    resumed = Retrieval(mini_pack, settings)
    report = resumed.ensure_index()
    assert report.kept == 4 and report.added == len(resumed.chunks) - 4
    assert resumed.index.count() == len(resumed.chunks)
    assert resumed.search("Where was Grace Hopper born?", k=1, retriever="dense")[0].doc_id == "m07"
