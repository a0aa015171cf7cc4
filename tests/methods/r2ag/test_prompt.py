"""The retrieval-aware prompt: one slot per document right before its text, kept under truncation."""

from __future__ import annotations

import pytest

from engine.errors import BackendError
from engine.methods.r2ag.prompt import SLOT_TEXT, PromptDoc, prompt_pieces, slot_token_id, tokenize_prompt

pytest.importorskip("transformers")
DOCS = [PromptDoc("Warsaw", "Marie Curie was born in Warsaw in 1867."),
        PromptDoc("Paris", "The Curies worked in Paris."),
        PromptDoc("", "Polonium was discovered in 1898.")]
QUESTION = "Where was Marie Curie born?"


@pytest.fixture(scope="module")
def tokenizer(tiny_llama):
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(str(tiny_llama), local_files_only=True)


def test_the_prompt_has_one_slot_per_document_directly_before_its_text(tokenizer):
    prompt = tokenize_prompt(tokenizer, prompt_pieces(QUESTION, DOCS, slots=True), max_tokens=4096)
    assert len(prompt.slots) == 3 and prompt.cut_tokens == 0
    assert all(prompt.ids[s] == slot_token_id(tokenizer) for s in prompt.slots)
    spans = {s.label: s for s in prompt.segments}
    for i, slot in enumerate(prompt.slots, start=1):
        assert spans[f"e_R {i}"].start == slot and spans[f"doc {i}"].start == slot + 1
    assert spans["question"].start > spans["doc 3"].end  # the real template puts the question last (§2.4)
    assert "[1]similarity: <R>(Title: Warsaw) Marie Curie" in prompt.text and prompt.text.count(SLOT_TEXT) == 3
    assert "similarity information is provided" in prompt.text


def test_the_plain_prompt_has_no_slots_and_no_similarity_sentence(tokenizer):
    prompt = tokenize_prompt(tokenizer, prompt_pieces(QUESTION, DOCS, slots=False), max_tokens=4096)
    assert prompt.slots == () and "similarity" not in prompt.text
    assert [s.label for s in prompt.segments] == ["doc 1", "doc 2", "doc 3", "question"]


def test_placeholder_positions_survive_long_contexts(tokenizer):
    long_docs = [PromptDoc(f"T{i}", "lorem ipsum dolor sit amet " * 300) for i in range(10)]
    pieces = prompt_pieces(QUESTION, long_docs, slots=True)
    full = tokenize_prompt(tokenizer, pieces, max_tokens=100_000)
    cut = tokenize_prompt(tokenizer, pieces, max_tokens=600)
    assert len(full.ids) > 5000 and len(cut.ids) <= 600 and cut.cut_tokens == len(full.ids) - len(cut.ids)
    assert len(cut.slots) == 10 and all(cut.ids[s] == slot_token_id(tokenizer) for s in cut.slots)
    spans = {s.label: s for s in cut.segments}
    assert all(spans[f"doc {i}"].end > spans[f"doc {i}"].start for i in range(1, 11))  # every doc keeps some text
    question = spans["question"]
    assert tokenizer.decode(list(cut.ids[question.start:question.end])) == QUESTION


def test_a_budget_smaller_than_the_frame_is_a_clear_error(tokenizer):
    with pytest.raises(BackendError, match="tokens without any document text"):
        tokenize_prompt(tokenizer, prompt_pieces(QUESTION, DOCS, slots=True), max_tokens=20)
