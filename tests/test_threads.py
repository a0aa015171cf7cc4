"""The suite caps torch at one thread (conftest), so a loaded machine cannot slow it 20-40×."""

from __future__ import annotations


def test_torch_runs_on_one_thread_in_tests():
    import torch

    assert torch.get_num_threads() == 1 and torch.get_num_interop_threads() >= 1
