"""The HF backend on CPU with a tiny random Llama: loading (fp32, NF4), generation, attention
capture, inputs_embeds, and clear errors."""

from __future__ import annotations

import numpy as np
import pytest

from engine.errors import BackendError
from engine.llm import hf
from engine.llm.chat import GenerationSettings, Message, PromptSegment
from engine.llm.hf import HfModelConfig, load_hf_model

torch = pytest.importorskip("torch")
SHORT = GenerationSettings(max_new_tokens=6)
USER = "Warsaw text here. Paris text there. Who?"
SEGMENTS = (PromptSegment("d1", "document", 0, 17), PromptSegment("d2", "document", 18, 35),
            PromptSegment("question", "question", 36, 40))
MESSAGES = (Message("system", "Answer briefly."), Message("user", USER))


@pytest.fixture(scope="module")
def fp32(tiny_llama):
    return hf._load(HfModelConfig(str(tiny_llama), quantization="none", device="cpu", dtype="fp32"))


def test_fp32_model_loads_with_eager_attention_and_generates(fp32):
    assert fp32.model_obj.config._attn_implementation == "eager"
    completion = fp32.complete(MESSAGES, SHORT)
    assert completion.backend == "hf" and completion.tokens_out == 6 and completion.tokens_in > 10
    assert "(fp32)" in completion.model and fp32.model_obj.dtype == torch.float32


@pytest.mark.parametrize("quantization", ["nf4", "int8"])
def test_quantization_on_the_cpu_is_refused_with_the_reason(tiny_llama, quantization):
    """bitsandbytes on the CPU loads 4x slower and needs more memory than fp32 (issue 23): CUDA only."""
    with pytest.raises(BackendError, match="CUDA only.*bf16"):
        hf._load(HfModelConfig(str(tiny_llama), quantization=quantization, device="cpu"))


def test_bf16_on_the_cpu_halves_the_weights_and_generates(tiny_llama, fp32):
    bf16 = hf._load(HfModelConfig(str(tiny_llama), quantization="none", device="cpu", dtype="bf16"))
    assert bf16.model_obj.dtype == torch.bfloat16 and "(bf16)" in bf16.model
    assert bf16.complete(MESSAGES, SHORT).tokens_out == 6
    size = lambda m: sum(p.numel() * p.element_size() for p in m.model_obj.parameters())  # noqa: E731
    assert size(bf16) * 2 == size(fp32)


def test_auto_dtype_is_bf16_only_where_the_cpu_has_bf16_instructions(monkeypatch):
    config = HfModelConfig("m")
    assert config.resolved_dtype("cpu", cpu_bf16=True) == "bf16"
    assert config.resolved_dtype("cpu", cpu_bf16=False) == "fp32"
    assert config.resolved_dtype("cuda", cpu_bf16=False) == "bf16"
    assert HfModelConfig("m", dtype="fp32").resolved_dtype("cuda", cpu_bf16=True) == "fp32"


def test_attention_capture_gives_layer_by_segment_rows_that_sum_to_one(fp32):
    completion, (by_layer, by_token) = fp32.complete_with_attention(MESSAGES, SEGMENTS, SHORT)
    matrix = np.array(by_layer.matrix)
    assert matrix.shape == (2, 4)  # 2 layers × (3 segments + other)
    assert np.allclose(matrix.sum(axis=1), 1.0, atol=1e-3)
    assert by_layer.x_labels == ("d1", "d2", "question", "other")
    assert np.array(by_token.matrix).shape == (completion.tokens_out, 4)
    assert [s.label for s in by_layer.segments] == ["d1", "d2", "question"]


def test_the_first_token_map_is_the_answers_first_generated_tokens_own_attention(fp32):
    from engine.llm.attention import first_answer_index

    completion, (by_layer, _) = fp32.complete_with_attention(MESSAGES, SEGMENTS, SHORT)
    prompt = fp32.render(MESSAGES)
    generated = hf.decode(fp32.model_obj, fp32.tokenizer, input_ids=prompt.ids, max_new_tokens=6).tokens
    at = first_answer_index(fp32.tokenizer.batch_decode([[t] for t in generated]))
    assert by_layer.token_id == generated[at] and by_layer.token == fp32.tokenizer.decode([generated[at]])
    # its row: the query at that generated token (not the template's last token) over the prompt
    n = prompt.ids.shape[1]
    with torch.no_grad():
        attentions = fp32.model_obj(torch.cat([prompt.ids, torch.tensor([list(generated[: at + 1])])], dim=1),
                                    output_attentions=True).attentions
    rows = np.stack([a[0, :, -1, :n].mean(dim=0).numpy() for a in attentions])  # (layers, n)
    owner = hf.token_segments(prompt.offsets, [hf._placed(s, prompt) for s in SEGMENTS])
    mass = np.stack([[row[owner == s].sum() for s in (0, 1, 2, -1)] for row in rows])
    assert np.allclose(by_layer.matrix, mass / mass.sum(axis=1, keepdims=True), atol=1e-4)


def test_segments_are_titled_by_their_text_when_the_caller_gave_no_title(fp32):
    titled = (PromptSegment("d1", "document", 0, 17, "Warsaw (city)"), *SEGMENTS[1:])
    _, (by_layer, _) = fp32.complete_with_attention(MESSAGES, titled, SHORT)
    assert [s.title for s in by_layer.segments] == ["Warsaw (city)", "Paris text there.", "Who?"]


def test_segment_token_ranges_cover_exactly_their_text(fp32):
    _, (by_layer, _) = fp32.complete_with_attention(MESSAGES, SEGMENTS, SHORT)
    prompt = fp32.render(MESSAGES)
    for seg, span in zip(SEGMENTS, by_layer.segments):
        start, end = prompt.offsets[span.start][0], prompt.offsets[span.end - 1][1]
        assert prompt.text[start:end].strip() == USER[seg.start:seg.end].strip()


def test_attention_path_generates_the_same_greedy_text_as_plain_generation(fp32):
    plain = fp32.complete(MESSAGES, SHORT)
    captured, _ = fp32.complete_with_attention(MESSAGES, SEGMENTS, SHORT)
    assert captured.text == plain.text


def test_a_single_head_can_be_shown_instead_of_the_mean(fp32):
    _, (by_layer, _) = fp32.complete_with_attention(MESSAGES, SEGMENTS, SHORT, head=1)
    assert "head 1" in by_layer.note and np.allclose(np.array(by_layer.matrix).sum(axis=1), 1.0, atol=1e-3)


def test_inputs_embeds_give_the_same_logits_as_input_ids(fp32):
    ids = fp32.render(MESSAGES).ids
    with torch.no_grad():
        from_ids = fp32.model_obj(input_ids=ids).logits
        from_embeds = fp32.model_obj(inputs_embeds=fp32.model_obj.get_input_embeddings()(ids)).logits
    assert torch.allclose(from_ids, from_embeds, atol=1e-5)


def test_one_model_per_process_is_reused_and_unloaded(tiny_llama):
    config = HfModelConfig(str(tiny_llama), quantization="none", device="cpu")
    first = load_hf_model(config)
    assert load_hf_model(config) is first
    hf.unload_hf_model()
    assert hf.loaded_hf_model() is None


def test_a_missing_folder_is_a_clear_error():
    with pytest.raises(BackendError, match="not found"):
        hf._load(HfModelConfig("/nonexistent/llama-3-8b"))


def test_a_model_that_is_not_a_causal_lm_is_refused(tmp_path):
    from tiny_model import build_tiny_bert

    with pytest.raises(BackendError, match="not a causal language model"):
        hf._load(HfModelConfig(str(build_tiny_bert(tmp_path / "bert")), device="cpu"))


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the message on a machine without CUDA")
def test_asking_for_cuda_without_a_gpu_is_a_clear_error(tiny_llama):
    with pytest.raises(BackendError, match="no usable CUDA GPU"):
        hf._load(HfModelConfig(str(tiny_llama), device="cuda"))


def test_unusable_bitsandbytes_is_a_clear_error(tiny_llama, monkeypatch):
    import builtins

    real_import = builtins.__import__

    def broken(name, *args, **kwargs):
        if name == "bitsandbytes":
            raise OSError("libbitsandbytes_cpu.so: cannot open shared object file")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", broken)
    with pytest.raises(BackendError, match="bitsandbytes is not usable"):
        hf._bnb_config("nf4")


def test_running_out_of_memory_while_generating_is_a_clear_error(fp32, monkeypatch):
    def oom(*args, **kwargs):
        raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 2.00 GiB")

    monkeypatch.setattr(fp32.model_obj, "forward", oom)
    with pytest.raises(BackendError, match="ran out of memory"):
        fp32.complete(MESSAGES, SHORT)
    with pytest.raises(BackendError, match="ran out of memory"):
        fp32.complete_with_attention(MESSAGES, SEGMENTS, SHORT)


def test_unknown_quantization_lists_the_allowed_ones(tiny_llama):
    with pytest.raises(BackendError, match="allowed: auto, nf4, int8, none"):
        hf._load(HfModelConfig(str(tiny_llama), quantization="fp3"))


# ---- the one decode loop -------------------------------------------------------------------------------


def test_plain_and_attention_paths_generate_the_same_tokens(fp32):
    plain = fp32.complete(MESSAGES, SHORT)
    captured, _ = fp32.complete_with_attention(MESSAGES, SEGMENTS, SHORT)
    assert (plain.text, plain.tokens_out) == (captured.text, captured.tokens_out)


def test_both_paths_stop_on_any_id_of_the_models_end_of_sequence_list(fp32, monkeypatch):
    first = hf.decode(fp32.model_obj, fp32.tokenizer, input_ids=fp32.render(MESSAGES).ids, max_new_tokens=6)
    second_token = first.tokens[1]
    assert second_token != fp32.tokenizer.eos_token_id
    # a chat model ends its turn with a token of the generation config's list (Llama-3: <|eot_id|>)
    monkeypatch.setattr(fp32.model_obj.generation_config, "eos_token_id",
                        [fp32.tokenizer.eos_token_id, second_token])
    plain = fp32.complete(MESSAGES, SHORT)
    captured, _ = fp32.complete_with_attention(MESSAGES, SEGMENTS, SHORT)
    assert plain.tokens_out == captured.tokens_out == 2


def test_end_of_sequence_ids_join_the_generation_config_and_the_tokenizer():
    from types import SimpleNamespace

    from engine.llm.decoding import end_of_sequence_ids

    model = SimpleNamespace(generation_config=SimpleNamespace(eos_token_id=[7, 9]))
    assert end_of_sequence_ids(model, SimpleNamespace(eos_token_id=2)) == {2, 7, 9}
    assert end_of_sequence_ids(SimpleNamespace(), SimpleNamespace(eos_token_id=None)) == frozenset()


@pytest.mark.parametrize(("tokens", "loops"), [
    ([5, 1, 2, 3] * 4, True),                  # a 3-token block (with what came before) 4 times: 12 tokens
    ([9] + [1, 2, 3, 4, 5, 6] * 4, True),
    ([7] * 12, True),                          # one token needs 12 repeats …
    ([7] * 11, False),                         # … 11 is no loop yet
    ([1, 2, 3] * 3 + [1, 2], False),           # three repeats and a piece
    (list(range(40)), False),
    ([1, 2, 3, 4] * 3 + [9], False),           # the loop was left
])
def test_a_block_repeated_at_the_end_is_a_loop(tokens, loops):
    from engine.llm.decoding import looping

    assert looping(tokens) is loops


def test_decoding_stops_once_a_greedy_model_loops(tiny_llama):
    """The random tiny Llama falls into a repeating block within its budget; the loop stops it early."""
    from engine.llm import hf
    from engine.llm.decoding import decode, looping

    chat = hf._load(hf.HfModelConfig(str(tiny_llama), quantization="none", device="cpu", dtype="fp32"))
    ids = chat.tokenizer("a a a a a a a a", return_tensors="pt").input_ids
    decoded = decode(chat.model_obj, chat.tokenizer, input_ids=ids, max_new_tokens=400)
    assert looping(decoded.tokens) and len(decoded.tokens) < 400
    assert not looping(decoded.tokens[:-1])  # stopped at the first token that closed the loop
