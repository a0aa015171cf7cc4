"""call_model fits a prompt and its reply into the model's context window: evidence is cut (longest
first, at word boundaries, segments moved with it), instructions and the question never; a prompt that
cannot fit is a failed call, not a crash."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from engine.llm.chat import GenerationSettings, Message, PromptSegment
from engine.tools.llm_call import call_model, fit_context, locate_segments
from engine.trace import ErrorStep, LlmCallStep
from fake_chat import AttentiveChat, ScriptedChat

INSTRUCTIONS = "Answer the question from the documents only. Reply with a short answer."
QUESTION = "Where was Ada born?"
LONG = " ".join(f"long{i}" for i in range(80))
SHORT_1, SHORT_2 = "Ada was born in London.", "Paris is a city."
SETTINGS = GenerationSettings(max_new_tokens=10)


@dataclass
class SizedChat(AttentiveChat):
    """An attentive fake with a context window, counting one token per word of every message."""

    context_tokens: int | None = 60

    def count_tokens(self, messages: Sequence[Message]) -> int:
        return sum(len(m.content.split()) for m in messages)


def prompt_with(*docs: str, rule: str = "") -> tuple[str, tuple[PromptSegment, ...]]:
    lines = [INSTRUCTIONS, *(f"[{n}] {d}" for n, d in enumerate(docs, 1)), *([f"Rule: {rule}"] if rule else []),
             f"Question: {QUESTION}"]
    prompt = "\n".join(lines)
    pieces = [(f"doc {n}", "document", d) for n, d in enumerate(docs, 1)]
    pieces += [("rule", "rule", rule)] if rule else []
    return prompt, locate_segments(prompt, [*pieces, ("question", "question", QUESTION)])


def test_a_prompt_that_fits_is_sent_unchanged():
    prompt, segments = prompt_with(SHORT_1, SHORT_2)
    chat = SizedChat(lambda _p: "London")
    reply = call_model(chat, (Message("user", prompt),), SETTINGS, role="reader", segments=segments)
    assert chat.sent == [prompt] and chat.segments == [segments]
    assert reply.steps[0].title == "reader call"


def test_long_evidence_is_cut_to_fit_with_instructions_question_and_short_blocks_intact():
    prompt, segments = prompt_with(SHORT_1, LONG, SHORT_2)
    chat = SizedChat(lambda _p: "London")
    reply = call_model(chat, (Message("user", prompt),), SETTINGS, role="reader", segments=segments)
    assert not reply.failed and reply.text == "London"
    sent = chat.sent[0]
    assert len(sent.split()) + SETTINGS.max_new_tokens <= 60
    assert len(sent.split()) + SETTINGS.max_new_tokens >= 58  # cut no more than needed
    assert sent.startswith(INSTRUCTIONS + "\n") and sent.endswith(f"Question: {QUESTION}")
    assert SHORT_1 in sent and SHORT_2 in sent
    spans = {s.label: sent[s.start:s.end] for s in chat.segments[0]}
    assert spans["doc 1"] == SHORT_1 and spans["doc 3"] == SHORT_2 and spans["question"] == QUESTION
    assert spans["doc 2"].endswith(" …") and LONG.startswith(spans["doc 2"][:-2])
    call = reply.steps[0]
    assert isinstance(call, LlmCallStep) and call.prompt.endswith(sent)
    dropped = len(prompt.split()) - len(sent.split())
    assert call.title == ("reader call — evidence cut to fit the model's 60-token context: 1 of 3 blocks shortened, "
                          f"{dropped} tokens dropped")


def test_equally_long_blocks_are_cut_alike_and_each_keeps_its_start():
    docs = [" ".join(f"d{n}w{i}" for i in range(30)) for n in range(3)]
    prompt, segments = prompt_with(*docs)
    chat = SizedChat(lambda _p: "x")
    reply = call_model(chat, (Message("user", prompt),), SETTINGS, role="reader", segments=segments)
    spans = [chat.sent[0][s.start:s.end] for s in chat.segments[0][:3]]
    assert [s.split()[0] for s in spans] == ["d0w0", "d1w0", "d2w0"]
    assert max(len(s) for s in spans) - min(len(s) for s in spans) <= 6
    assert "3 of 3 blocks shortened" in reply.steps[0].title


def test_rules_and_other_kinds_are_never_cut():
    rule = " ".join(f"r{i}" for i in range(20))
    prompt, segments = prompt_with(LONG, rule=rule)
    chat = SizedChat(lambda _p: "x")
    call_model(chat, (Message("user", prompt),), SETTINGS, role="reader", segments=segments)
    assert f"Rule: {rule}\n" in chat.sent[0]
    assert [chat.sent[0][s.start:s.end] for s in chat.segments[0] if s.kind == "rule"] == [rule]


def test_the_system_message_is_never_cut():
    prompt, segments = prompt_with(SHORT_1, LONG)
    system = Message("system", "Be brief and exact.")
    chat = SizedChat(lambda _p: "x")
    fit = fit_context(chat, (system, Message("user", prompt)), SETTINGS, segments)
    assert fit.messages[0] == system and chat.count_tokens(fit.messages) + 10 <= 60 and fit.note


def test_a_prompt_without_evidence_that_cannot_fit_is_a_failed_call_the_run_survives():
    chat = SizedChat(lambda _p: "never", context_tokens=20)
    reply = call_model(chat, (Message("user", LONG),), SETTINGS, role="classifier")
    assert reply.failed and reply.text == "" and chat.sent == []
    call, error = reply.steps
    assert isinstance(call, LlmCallStep) and call.title == "classifier call not made" and call.tokens_in == 80
    assert isinstance(error, ErrorStep) and error.recoverable
    assert error.message == ("classifier model not called: the prompt does not fit the model's 20-token context: "
                             "80 prompt tokens + 10 to write, and it has no evidence to cut")


def test_a_prompt_too_long_even_with_all_evidence_cut_is_a_failed_call():
    prompt, segments = prompt_with(LONG)
    chat = SizedChat(lambda _p: "never", context_tokens=20)
    reply = call_model(chat, (Message("user", prompt),), SETTINGS, role="reader", segments=segments)
    assert reply.failed and chat.sent == []
    assert "with all evidence cut" in reply.steps[1].message


def test_a_backend_that_does_not_know_its_window_gets_the_prompt_unchanged():
    prompt, segments = prompt_with(LONG)
    chat = ScriptedChat(lambda _p: "x")
    reply = call_model(chat, (Message("user", prompt),), SETTINGS, role="reader", segments=segments)
    assert chat.sent == [prompt] and reply.steps[0].title == "reader call"
    unknown = SizedChat(lambda _p: "x", context_tokens=None)
    call_model(unknown, (Message("user", prompt),), SETTINGS, role="reader", segments=segments)
    assert unknown.sent == [prompt]


def test_blocks_are_cut_at_word_boundaries_and_unspaced_text_mid_run():
    from engine.tools.llm_call import _cut_words

    assert _cut_words("alpha beta gamma", 100) == "alpha beta gamma"
    assert _cut_words("alpha beta gamma", 13) == "alpha beta …"
    assert _cut_words("alpha beta gamma", 10) == "alpha beta …"
    assert _cut_words("alpha beta gamma", 3) == "…"
    assert _cut_words("華沙是波蘭的首都", 4) == "華沙是波 …"


def test_segments_keep_the_callers_order_which_the_attention_labels_follow():
    prompt, segments = prompt_with(SHORT_1, LONG)
    reordered = (segments[-1], *segments[:-1])  # the question first, as ToG-2's prompts list it
    chat = SizedChat(lambda _p: "x")
    call_model(chat, (Message("user", prompt),), SETTINGS, role="reasoning", segments=reordered)
    sent = chat.sent[0]
    assert [s.label for s in chat.segments[0]] == ["question", "doc 1", "doc 2"]
    assert [sent[s.start:s.end] for s in chat.segments[0][:2]] == [QUESTION, SHORT_1]
