"""The HF backend on a CUDA GPU: NF4 by default, generation and attention capture on the device."""

from __future__ import annotations

import numpy as np
import pytest

from engine.llm import hf
from engine.llm.chat import GenerationSettings, Message, PromptSegment
from engine.llm.hf import HfModelConfig

torch = pytest.importorskip("torch")
pytestmark = [pytest.mark.gpu, pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")]


@pytest.fixture(scope="module")
def on_gpu(tiny_llama):
    return hf._load(HfModelConfig(str(tiny_llama)))  # auto: cuda + nf4


def test_auto_settings_on_cuda_load_nf4_on_the_gpu(on_gpu):
    import bitsandbytes as bnb

    assert on_gpu.device == "cuda" and on_gpu.quantization == "nf4"
    assert isinstance(on_gpu.model_obj.model.layers[0].mlp.up_proj, bnb.nn.Linear4bit)
    assert on_gpu.model_obj.device.type == "cuda"


def test_generation_and_attention_capture_run_on_the_gpu(on_gpu):
    messages = (Message("user", "Alpha text. Beta text. Which?"),)
    segments = (PromptSegment("a", "document", 0, 11), PromptSegment("b", "document", 12, 22))
    completion, (by_layer, _) = on_gpu.complete_with_attention(messages, segments, GenerationSettings(max_new_tokens=4))
    assert completion.tokens_out == 4
    assert np.allclose(np.array(by_layer.matrix).sum(axis=1), 1.0, atol=1e-2)  # bf16 compute
