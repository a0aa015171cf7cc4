"""Small encodes run on one torch thread (issue 22): with a spinning thread per core, a busy 2-core
machine made a RAS question 3 s → 35 s; a large batch (an index build) keeps every thread."""

from __future__ import annotations

import numpy as np
import torch

from engine.retrieval.embedder import Embedder, load_embedder


class _Recorder:
    """Stands in for the sentence-transformers model: notes the thread count each encode runs with."""

    def __init__(self) -> None:
        self.threads: list[int] = []

    def encode(self, texts, **_kwargs):
        self.threads.append(torch.get_num_threads())
        return np.zeros((len(texts), 4), dtype=np.float32)


def test_a_small_batch_runs_on_one_thread_and_the_count_is_restored(monkeypatch):
    embedder = Embedder(load_embedder().path)
    recorder = _Recorder()
    embedder.__dict__.update(_model=recorder, device="cpu")
    before = torch.get_num_threads()
    torch.set_num_threads(2)  # the app's default on a 2-core machine (the suite runs on one)
    try:
        embedder.encode(["moved to", "born in"])
        embedder.encode([f"sentence {i}" for i in range(500)])
        assert recorder.threads == [1, 2]
        assert torch.get_num_threads() == 2
    finally:
        torch.set_num_threads(before)
