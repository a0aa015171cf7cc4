"""Streaming and token logprobs of the HF backend on a tiny random Llama: the streamed pieces join to the
completion's text and never show a stop string; one logprob per written token, the end-of-turn token
left out, cut where the text was cut."""

from __future__ import annotations

import pytest

from engine.llm import hf
from engine.llm.chat import GenerationSettings, Message, cut_at_stop
from engine.llm.decoding import Decoded
from engine.llm.hf import HfModelConfig

torch = pytest.importorskip("torch")
LONG = GenerationSettings(max_new_tokens=24)
QUESTIONS = ("Where was Marie Curie born?", "Who discovered polonium?", "hello")


@pytest.fixture(scope="module")
def fp32(tiny_llama):
    return hf._load(HfModelConfig(str(tiny_llama), quantization="none", device="cpu", dtype="fp32"))


def streamed(model, question: str, settings: GenerationSettings):
    pieces: list[str] = []
    completion = model.complete_streaming((Message("user", question),), settings, pieces.append)
    return completion, pieces


def split_stop(model, question: str) -> str:
    """A stop string the plain reply contains across a token boundary (so the stream must hold it back)."""
    pieces = [t.token for t in model.complete((Message("user", question),), LONG).logprobs]
    readable = lambda p: p.strip() and p.isprintable() and "\ufffd" not in p  # noqa: E731
    at = next(i for i in range(1, len(pieces) - 1) if readable(pieces[i]) and readable(pieces[i + 1]))
    return pieces[at][-1] + pieces[at + 1]


@pytest.mark.parametrize("question", QUESTIONS)
def test_streamed_pieces_join_to_the_completion_which_is_the_plain_one(fp32, question):
    completion, pieces = streamed(fp32, question, LONG)
    assert len(pieces) > 1 and "".join(pieces) == completion.text
    plain = fp32.complete((Message("user", question),), LONG)
    assert (completion.text, completion.tokens_out, completion.logprobs) == (plain.text, plain.tokens_out,
                                                                            plain.logprobs)


@pytest.mark.parametrize("question", QUESTIONS[1:])  # the first one's reply has no two readable tokens in a row
def test_a_stop_string_split_across_tokens_is_never_streamed(fp32, question):
    stop = split_stop(fp32, question)
    written = fp32.complete((Message("user", question),), LONG).text
    completion, pieces = streamed(fp32, question, GenerationSettings(max_new_tokens=24, stop=(stop,)))
    assert completion.text == cut_at_stop(written, (stop,)).strip()
    assert "".join(pieces) == completion.text and stop not in "".join(pieces)


def test_one_logprob_per_written_token_matching_the_models_own_distribution(fp32):
    messages = (Message("user", QUESTIONS[1]),)
    completion = fp32.complete(messages, LONG)
    # no end of turn was written (the random model stops on its budget or a loop)
    assert len(completion.logprobs) == completion.tokens_out and 0 < completion.tokens_out <= 24
    assert all(t.logprob <= 0 for t in completion.logprobs)
    with torch.no_grad():
        logits = fp32.model_obj(input_ids=fp32.render(messages).ids).logits[0, -1]
    first = int(logits.argmax())
    assert completion.logprobs[0].token == fp32.tokenizer.decode([first])
    assert completion.logprobs[0].logprob == pytest.approx(float(torch.log_softmax(logits, -1)[first]), abs=1e-4)


def test_special_tokens_such_as_the_end_of_turn_have_no_logprob(fp32):
    tokenizer = fp32.tokenizer
    words = tokenizer.encode(" Warsaw fox", add_special_tokens=False)
    tokens = (tokenizer.bos_token_id, *words, tokenizer.eos_token_id)
    decoded = Decoded(tokens, logprobs=tuple(-0.5 - i for i in range(len(tokens))))
    completion = fp32._completion(decoded, fp32.render((Message("user", "x"),)), LONG, started=0.0)
    assert completion.text == "Warsaw fox" and completion.tokens_out == len(tokens)
    assert [t.token for t in completion.logprobs] == tokenizer.batch_decode([[w] for w in words])
    assert [t.logprob for t in completion.logprobs] == [-1.5 - i for i in range(len(words))]


def test_logprobs_are_cut_with_the_stop_string(fp32):
    question = QUESTIONS[2]
    stop = split_stop(fp32, question)
    whole = fp32.complete((Message("user", question),), LONG).logprobs
    completion = fp32.complete((Message("user", question),), GenerationSettings(max_new_tokens=24, stop=(stop,)))
    cut = completion.logprobs
    assert 0 < len(cut) < len(whole) and cut == whole[: len(cut)]
    text = lambda tokens: "".join(t.token for t in tokens)  # noqa: E731 (this reply's tokens are whole characters)
    assert text(cut).startswith(completion.text) and len(text(cut[:-1])) < len(completion.text)  # none past the cut


def test_a_watched_call_with_attention_capture_streams_and_keeps_its_heatmaps(fp32):
    """On hf most calls capture attention; a page watching the run still sees the reply grow (issue 23)."""
    from engine.live import listening
    from engine.llm.chat import PromptSegment
    from engine.tools.llm_call import call_model
    from engine.trace import AttentionStep

    message = "Evidence: Marie Curie was born in Warsaw.\nQuestion: Where was Marie Curie born?"
    segments = (PromptSegment("[1]", "document", 10, 41),)
    heard = []
    with listening(heard.append):
        reply = call_model(fp32, (Message("user", message),), LONG, role="reader", segments=segments)
    assert len(heard) > 1 and all(p.role == "reader" for p in heard)
    assert heard[-1].text == reply.text and len(heard[0].text) < len(reply.text)
    assert any(isinstance(s, AttentionStep) for s in reply.steps)
    plain = call_model(fp32, (Message("user", message),), LONG, role="reader", segments=segments)
    assert plain.text == reply.text  # streaming changes nothing in what the call returns
