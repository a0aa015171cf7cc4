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


def test_the_model_loads_on_the_chosen_device_with_a_batch_size_for_it(gpu, monkeypatch, tmp_path):
    import shutil

    from engine.retrieval.embedder import default_embedder_path

    loaded = {}

    class FakeSentenceTransformer:
        def __init__(self, path: str, device: str, local_files_only: bool):
            loaded["sentence-transformers"] = (device, local_files_only)

    class FakeMeanPooling:
        def __init__(self, folder, device: str):
            loaded["mean-pooling"] = device

    monkeypatch.setattr("sentence_transformers.SentenceTransformer", FakeSentenceTransformer)
    monkeypatch.setattr("engine.retrieval.mean_pooling.MeanPoolingEncoder", FakeMeanPooling)
    gpu(True)
    on_gpu = Embedder()  # MiniLM: a plain mean-pooling model, encoded without sentence-transformers
    assert isinstance(on_gpu._model, FakeMeanPooling) and loaded == {"mean-pooling": "cuda"}
    assert on_gpu.batch_size == 256
    other = tmp_path / "cls-pooled"  # any other layout still loads with sentence-transformers
    shutil.copytree(default_embedder_path(), other)
    (other / "1_Pooling" / "config.json").write_text('{"pooling_mode_cls_token": true}')
    assert isinstance(Embedder(other)._model, FakeSentenceTransformer)
    assert loaded["sentence-transformers"] == ("cuda", True)
    gpu(False)
    assert Embedder().batch_size == 64 and Embedder(batch_size=8).batch_size == 8
