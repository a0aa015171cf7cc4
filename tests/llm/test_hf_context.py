"""The HF backend knows its context window and counts prompt tokens exactly, so call_model fits a long
evidence prompt into a tiny Llama with a 256-token window (and reads SmolLM2's 8192 when it is here)."""

from __future__ import annotations

import json
import shutil

import pytest

from engine.llm import hf
from engine.llm.chat import GenerationSettings, Message
from engine.llm.hf import HfModelConfig
from engine.tools.llm_call import call_model, locate_segments
from engine.trace import AttentionStep, LlmCallStep

pytest.importorskip("torch")
INSTRUCTIONS = "Answer the question from the documents. Reply with the answer only."
QUESTION = "Who discovered polonium?"
DOCS = [" ".join(f"Marie Curie was born in Warsaw in 1867 and studied topic {n}." for _ in range(4)) for n in range(6)]
SETTINGS = GenerationSettings(max_new_tokens=16)


@pytest.fixture(scope="module")
def small_window(tiny_llama, tmp_path_factory):
    """The tiny Llama with max_position_embeddings 256."""
    folder = tmp_path_factory.mktemp("tiny_llama_256")
    shutil.copytree(tiny_llama, folder, dirs_exist_ok=True)
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, "max_position_embeddings": 256}))
    return hf._load(HfModelConfig(str(folder), quantization="none", device="cpu", dtype="fp32"))


def long_prompt() -> tuple[str, tuple]:
    prompt = "\n".join([INSTRUCTIONS, *(f"[{n}] {d}" for n, d in enumerate(DOCS, 1)), f"Question: {QUESTION}"])
    pieces = [(f"doc {n}", "document", d) for n, d in enumerate(DOCS, 1)] + [("question", "question", QUESTION)]
    return prompt, locate_segments(prompt, pieces)


def test_the_window_comes_from_the_config_and_counting_matches_the_rendered_prompt(small_window):
    assert small_window.context_tokens == 256
    messages = (Message("system", "Be brief."), Message("user", long_prompt()[0]))
    assert small_window.count_tokens(messages) == small_window.render(messages).ids.shape[1]


def test_a_long_evidence_prompt_is_cut_to_fit_and_the_call_succeeds(small_window):
    prompt, segments = long_prompt()
    messages = (Message("user", prompt),)
    assert small_window.count_tokens(messages) + SETTINGS.max_new_tokens > 256  # the test needs a cut
    reply = call_model(small_window, messages, SETTINGS, role="reader", segments=segments)
    assert not reply.failed
    call = reply.steps[0]
    assert isinstance(call, LlmCallStep) and call.tokens_in + SETTINGS.max_new_tokens <= 256
    assert call.title.startswith("reader call — evidence cut to fit the model's 256-token context: ")
    assert "of 6 blocks shortened" in call.title and "tokens dropped" in call.title
    sent = call.prompt.removeprefix("[user]\n")
    assert sent.startswith(INSTRUCTIONS + "\n[1] Marie Curie") and sent.endswith(f"\nQuestion: {QUESTION}")
    attention = [s for s in reply.steps if isinstance(s, AttentionStep)]
    assert attention and attention[0].x_labels[-2:] == ("question", "other")
    assert all(seg.title.startswith("Marie Curie") for seg in attention[0].segments if seg.kind == "document")


def test_a_prompt_that_cannot_fit_fails_cleanly(small_window):
    reply = call_model(small_window, (Message("user", " ".join(DOCS * 3)),), SETTINGS, role="classifier")
    assert reply.failed and reply.steps[0].title == "classifier call not made"
    assert "does not fit the model's 256-token context" in reply.steps[1].message


def test_a_tokenizer_limit_below_the_config_wins_and_the_unset_sentinel_is_ignored():
    from types import SimpleNamespace as NS

    assert hf.context_window(NS(max_position_embeddings=4096), NS(model_max_length=2048)) == 2048
    assert hf.context_window(NS(max_position_embeddings=4096), NS(model_max_length=int(1e30))) == 4096
    assert hf.context_window(NS(n_positions=1024), NS()) == 1024
    assert hf.context_window(NS(), NS()) is None


@pytest.mark.llm
def test_smollm2_reads_its_8192_token_window(real_gguf):
    model = hf._load(HfModelConfig(str(real_gguf), quantization="none", device="cpu"))
    assert model.context_tokens == 8192
