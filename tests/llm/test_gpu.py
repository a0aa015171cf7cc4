"""The GPU check: a name and memory on CUDA, a plain reason without it."""

from __future__ import annotations

import pytest

from engine.llm.gpu import GpuStatus, gib, gpu_status


def test_without_cuda_the_status_says_why():
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA GPU")
    status = gpu_status()
    assert not status.available and "no CUDA GPU" in status.reason
    assert status.used_fraction == 0.0


@pytest.mark.gpu
def test_on_cuda_the_status_names_the_device_and_its_memory():
    import torch

    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA GPU")
    status = gpu_status()
    assert status.available and status.name
    assert 0 < status.used_bytes <= status.total_bytes


def test_memory_reads_in_gib():
    assert gib(3 * 2**30) == "3.0 GiB"
    assert GpuStatus(available=True, used_bytes=1, total_bytes=4).used_fraction == 0.25
