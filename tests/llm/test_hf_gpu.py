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

    assert on_gpu.device == "cuda" and on_gpu.precision == "nf4"
    assert isinstance(on_gpu.model_obj.model.layers[0].mlp.up_proj, bnb.nn.Linear4bit)
    assert on_gpu.model_obj.device.type == "cuda"


def test_generation_and_attention_capture_run_on_the_gpu(on_gpu):
    messages = (Message("user", "Alpha text. Beta text. Which?"),)
    segments = (PromptSegment("a", "document", 0, 11), PromptSegment("b", "document", 12, 22))
    completion, (by_layer, _) = on_gpu.complete_with_attention(messages, segments, GenerationSettings(max_new_tokens=4))
    assert completion.tokens_out == 4
    assert np.allclose(np.array(by_layer.matrix).sum(axis=1), 1.0, atol=1e-2)  # bf16 compute


def test_r2ag_injection_into_an_nf4_model_changes_the_next_token_distribution(on_gpu):
    from engine.methods.r2ag.injection import prompt_embeddings
    from engine.methods.r2ag.prompt import PromptDoc, prompt_pieces, tokenize_prompt

    docs = [PromptDoc("A", "Alpha was born in Ardmore."), PromptDoc("B", "Beta works in Bray.")]
    prompt = tokenize_prompt(on_gpu.tokenizer, prompt_pieces("Where was Alpha born?", docs, slots=True), 4096)
    hidden = on_gpu.model_obj.get_input_embeddings().weight.shape[1]
    vectors = torch.randn(len(docs), hidden, device="cuda")
    with torch.no_grad():
        plain = on_gpu.model_obj(inputs_embeds=prompt_embeddings(on_gpu.model_obj, prompt, None)).logits[0, -1]
        injected = on_gpu.model_obj(inputs_embeds=prompt_embeddings(on_gpu.model_obj, prompt, vectors)).logits[0, -1]
    assert torch.isfinite(injected).all() and not torch.allclose(plain.float(), injected.float(), atol=1e-3)
