"""Which device the encoder runs on (GPU when torch sees one, RAGSCOPE_DEVICE overrides) and its batch size."""

from __future__ import annotations

import pytest
import torch

from engine.errors import BackendError
from engine.retrieval.embedder import Embedder, select_device


@pytest.fixture()
def gpu(monkeypatch):
    """`gpu(True)` makes torch report a CUDA GPU, `gpu(False)` none."""
    monkeypatch.delenv("RAGSCOPE_DEVICE", raising=False)
    return lambda present: monkeypatch.setattr(torch.cuda, "is_available", lambda: present)


def test_the_gpu_is_chosen_when_torch_sees_one(gpu):
    gpu(True)
    assert select_device() == "cuda"
    gpu(False)
    assert select_device() == "cpu"


def test_ragscope_device_overrides_the_choice(gpu, monkeypatch):
    gpu(True)
    monkeypatch.setenv("RAGSCOPE_DEVICE", "cpu")
    assert select_device() == "cpu"
    monkeypatch.setenv("RAGSCOPE_DEVICE", "cuda:1")
    assert select_device() == "cuda:1"


def test_asking_for_cuda_without_a_gpu_says_how_to_fix_it(gpu, monkeypatch):
    gpu(False)
    monkeypatch.setenv("RAGSCOPE_DEVICE", "cuda")
    with pytest.raises(BackendError, match=r"RAGSCOPE_DEVICE='cuda' but torch sees no CUDA GPU; unset it"):
        select_device()


def test_the_model_loads_on_the_chosen_device_with_a_batch_size_for_it(gpu, monkeypatch):
    loaded = {}

    class FakeSentenceTransformer:
        def __init__(self, path: str, device: str, local_files_only: bool):
            loaded.update(device=device, local_files_only=local_files_only)

    monkeypatch.setattr("sentence_transformers.SentenceTransformer", FakeSentenceTransformer)
    gpu(True)
    on_gpu = Embedder()
    assert isinstance(on_gpu._model, FakeSentenceTransformer)
    assert loaded == {"device": "cuda", "local_files_only": True} and on_gpu.batch_size == 256
    gpu(False)
    assert Embedder().batch_size == 64 and Embedder(batch_size=8).batch_size == 8
