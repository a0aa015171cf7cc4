"""Injection into inputs_embeds on a tiny random Llama (CPU): logits change, other rows do not, attention is kept."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from engine.llm import hf  # noqa: E402
from engine.llm.hf import HfModelConfig  # noqa: E402
from engine.methods.r2ag.injection import greedy_decode, prompt_embeddings  # noqa: E402
from engine.methods.r2ag.prompt import PromptDoc, prompt_pieces, tokenize_prompt  # noqa: E402

DOCS = [PromptDoc("Warsaw", "Marie Curie was born in Warsaw."), PromptDoc("Paris", "The Curies worked in Paris.")]


@pytest.fixture(scope="module")
def chat(tiny_llama):
    return hf._load(HfModelConfig(str(tiny_llama), quantization="none", device="cpu", dtype="fp32"))  # exact sums


@pytest.fixture(scope="module")
def prompt(chat):
    return tokenize_prompt(chat.tokenizer, prompt_pieces("Where was Curie born?", DOCS, slots=True), 4096)


def test_injection_changes_the_logits_versus_no_injection(chat, prompt):
    torch.manual_seed(0)
    vectors = torch.randn(2, 64)
    with torch.no_grad():
        plain = chat.model_obj(inputs_embeds=prompt_embeddings(chat.model_obj, prompt, None)).logits[0, -1]
        injected = chat.model_obj(inputs_embeds=prompt_embeddings(chat.model_obj, prompt, vectors)).logits[0, -1]
    assert not torch.allclose(plain, injected, atol=1e-4)


def test_only_the_slot_rows_are_replaced_and_gradients_reach_the_vectors(chat, prompt):
    vectors = torch.randn(2, 64, requires_grad=True)
    embeds = prompt_embeddings(chat.model_obj, prompt, vectors)
    plain = prompt_embeddings(chat.model_obj, prompt, None)
    slots = list(prompt.slots)
    assert torch.equal(embeds[0, slots], vectors.detach())
    others = [i for i in range(len(prompt.ids)) if i not in slots]
    assert torch.equal(embeds[0, others], plain[0, others])
    chat.model_obj(inputs_embeds=embeds).logits[0, -1].sum().backward()
    assert vectors.grad is not None and vectors.grad.abs().sum() > 0


def test_greedy_decoding_keeps_last_prompt_token_and_per_token_attention(chat, prompt):
    embeds = prompt_embeddings(chat.model_obj, prompt, torch.randn(2, 64))
    out = greedy_decode(chat.model_obj, chat.tokenizer, embeds, max_new_tokens=4, capture=True)
    n = len(prompt.ids)
    assert out.prompt_last.shape == (2, 4, n) and out.per_token.shape == (len(out.tokens), 2, 4, n)
    assert out.prompt_last.sum(-1) == pytest.approx(1.0, abs=1e-4)  # the last prompt token sees only the prompt
    assert (out.per_token[0].sum(-1) < 1 - 1e-6).all()  # a generated token also looks at itself
    quiet = greedy_decode(chat.model_obj, chat.tokenizer, embeds, max_new_tokens=4, capture=False)
    assert quiet.prompt_last is None and quiet.tokens == out.tokens
