"""The frozen LLM's side of joint training, prepared once: the cached head changes nothing but the cost.

On a tiny random Llama in fp32: the loss is the LLM's own answer loss, the cached shared head gives the
same losses, gradients and trained weights as running every whole sequence, and padding a batch does not
change what each list contributes."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from engine.methods.r2ag.injection import prompt_embeddings  # noqa: E402
from engine.methods.r2ag.lm_inputs import LmSource, batch_loss, prepare, sdpa_attention  # noqa: E402
from engine.methods.r2ag.prompt import PromptDoc, SlottedPrompt  # noqa: E402
from engine.methods.r2ag.training import TrainConfig, build_examples, train_joint  # noqa: E402


@pytest.fixture(scope="module")
def chat(tiny_llama):
    from engine.llm import hf

    return hf._load(hf.HfModelConfig(str(tiny_llama), quantization="none", device="cpu", dtype="fp32"))


@pytest.fixture(scope="module")
def lists(mini_workbench):
    examples = build_examples(mini_workbench.pack, mini_workbench.retrieval, TrainConfig())
    return [e for e in examples if e.answer][:4]


def sources(lists) -> list[LmSource]:
    return [LmSource(e.question, tuple(PromptDoc(h.title, h.text) for h in e.hits), e.answer) for e in lists]


def vectors_for(inputs, seed: int = 0) -> list:
    generator = torch.Generator().manual_seed(seed)
    return [torch.randn(len(x.slots), 64, generator=generator, requires_grad=True) for x in inputs.lists]


def test_the_shared_head_runs_once_holds_no_slot_and_the_rest_follows_it(chat, lists):
    cached = prepare(chat.model_obj, chat.tokenizer, sources(lists), 4096)
    whole = prepare(chat.model_obj, chat.tokenizer, sources(lists), 4096, share_prefix=False)
    head = cached.head
    assert head and cached.past.get_seq_length() == len(head) and whole.past is None and not whole.head
    for part, full in zip(cached.lists, whole.lists):
        assert head + part.ids == full.ids and min(full.slots) >= len(head)
        assert tuple(s + len(head) for s in part.slots) == full.slots
        assert full.answer_start == part.answer_start + len(head) < len(full.ids)


def test_the_loss_is_the_llms_own_loss_on_the_answer_tokens(chat, lists):
    llm = chat.model_obj
    whole = prepare(llm, chat.tokenizer, sources(lists), 4096, share_prefix=False)
    one = whole.lists[0]
    vectors = vectors_for(whole)[0]
    embeds = prompt_embeddings(llm, SlottedPrompt(ids=one.ids, slots=one.slots, segments=(), text=""), vectors)
    labels = torch.tensor([[-100] * one.answer_start + list(one.ids[one.answer_start:])])
    with torch.no_grad():
        expected = llm(inputs_embeds=embeds, labels=labels).loss
        assert batch_loss(llm, whole, [0], [vectors]) == pytest.approx(float(expected), abs=1e-5)


def test_the_cached_head_gives_the_same_loss_and_gradients_as_whole_sequences(chat, lists):
    llm = chat.model_obj
    cached = prepare(llm, chat.tokenizer, sources(lists), 4096)
    whole = prepare(llm, chat.tokenizer, sources(lists), 4096, share_prefix=False)
    grads = []
    for inputs in (cached, whole):
        vectors = vectors_for(inputs)
        loss = batch_loss(llm, inputs, [0, 1, 2], vectors[:3])
        loss.backward()
        grads.append((float(loss.detach()), [v.grad for v in vectors[:3]]))
    (loss_cached, grad_cached), (loss_whole, grad_whole) = grads
    assert loss_cached == pytest.approx(loss_whole, abs=1e-5)
    assert all(torch.allclose(a, b, atol=1e-5) for a, b in zip(grad_cached, grad_whole))
    assert cached.past.get_seq_length() == len(cached.head)  # each step worked on a copy of the head's cache


def test_padding_a_batch_keeps_each_lists_answer_tokens_weight(chat, lists):
    llm = chat.model_obj
    inputs = prepare(llm, chat.tokenizer, sources(lists), 4096)
    counts = [len(x.ids) - x.answer_start for x in inputs.lists]
    i, j = next((i, j) for i in range(len(counts)) for j in range(i + 1, len(counts)) if counts[i] != counts[j])
    assert len(inputs.lists[i].ids) != len(inputs.lists[j].ids)  # one of the two is padded
    vectors = vectors_for(inputs)
    with torch.no_grad():
        alone = [float(batch_loss(llm, inputs, [n], [vectors[n]])) for n in (i, j)]
        both = float(batch_loss(llm, inputs, [i, j], [vectors[i], vectors[j]]))
    weights = [counts[i], counts[j]]
    assert both == pytest.approx(sum(a * n for a, n in zip(alone, weights)) / sum(weights), abs=1e-5)


def test_two_training_steps_with_the_cache_equal_two_without(chat, lists):
    config = TrainConfig(lm_epochs=1, lm_batch_size=2, lm_max_steps=2)
    eager = chat.model_obj.config._attn_implementation
    losses: dict[bool, list[float]] = {True: [], False: []}
    trained = {shared: train_joint(lists, chat, config, share_prefix=shared,
                                   progress=lambda step, total, loss, shared=shared: losses[shared].append(loss))
               for shared in (True, False)}
    start = train_joint(lists, chat, TrainConfig(lm_max_steps=0)).state_dict()  # the same seed, no step
    cached, whole = trained[True].state_dict(), trained[False].state_dict()
    assert len(losses[True]) == 2 and losses[True] == pytest.approx(losses[False], abs=1e-5)
    # within half an Adam step (lr 2e-4): attention's key bias has a zero gradient up to rounding, and Adam
    # scales that rounding noise up to a step of its own
    assert all(torch.allclose(cached[name], whole[name], atol=config.lr / 2) for name in cached)
    assert not torch.allclose(cached["proj.weight"], start["proj.weight"])  # two steps did move the weights
    assert chat.model_obj.config._attn_implementation == eager  # the heatmaps' attention is back after training


def test_training_runs_on_fused_attention_and_restores_the_loaded_one(chat):
    llm = chat.model_obj
    before = llm.config._attn_implementation
    with sdpa_attention(llm):
        assert llm.config._attn_implementation == "sdpa"
    assert llm.config._attn_implementation == before


def test_training_prompts_are_cut_to_the_budget_but_keep_every_slot_and_some_text_of_each_document(chat, lists):
    from engine.methods.r2ag.lm_inputs import MIN_DOC_TOKENS, fitted
    from engine.methods.r2ag.prompt import prompt_pieces, tokenize_prompt

    pieces = prompt_pieces(lists[0].question, sources(lists)[0].docs, True)
    whole = tokenize_prompt(chat.tokenizer, pieces, 4096)
    template = len(whole.ids) - sum(s.end - s.start for s in whole.segments if s.kind == "document")
    roomy = fitted(chat.tokenizer, pieces, template + 40 * len(whole.slots))
    assert len(roomy.ids) <= template + 40 * len(whole.slots) and roomy.cut_tokens > 0
    tight = fitted(chat.tokenizer, pieces, template)  # the template alone fills the budget: it grows
    for prompt in (roomy, tight):
        assert len(prompt.slots) == len(whole.slots)
        assert all(s.end - s.start >= MIN_DOC_TOKENS for s in prompt.segments if s.kind == "document")
    prepared = prepare(chat.model_obj, chat.tokenizer, sources(lists)[:1], template)
    assert prepared.head + prepared.lists[0].ids[:prepared.lists[0].answer_start] == tight.ids
