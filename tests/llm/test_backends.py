"""Every method runs to an answer on the language-model backends, whatever the model says."""

from __future__ import annotations

import pytest

from engine.cli import main
from engine.methods.base import method_ids
from engine.runner import Workbench
from engine.trace import AnswerStep, AttentionStep, ErrorStep, LlmCallStep
from fake_chat_server import Reply, closed_port, completion, serving
from paths import MINI_PACK

QUESTION = "When was Grace Hopper born?"


@pytest.fixture(scope="module")
def hf_workbench(mini_pack, settings, tiny_llama):
    options = {"model": str(tiny_llama), "quantization": "none", "device": "cpu"}
    return Workbench(mini_pack, settings, backend="hf", backend_options=options)


@pytest.mark.parametrize("method", method_ids())
def test_every_method_ends_with_an_answer_although_the_random_model_emits_garbage(hf_workbench, method):
    trace = hf_workbench.ask(QUESTION, method)
    assert isinstance(trace.steps[-1], AnswerStep)
    assert trace.answer.backend == "hf" and trace.totals.llm_calls >= 1
    assert any(isinstance(s, LlmCallStep) for s in trace.steps)


def test_reading_on_hf_shows_which_chunks_the_model_looked_at(hf_workbench):
    trace = hf_workbench.ask(QUESTION, "vanilla")
    heatmaps = [s for s in trace.steps if isinstance(s, AttentionStep)]
    assert heatmaps, "the answer step should come with attention over the evidence"
    retrieved = {h.doc_id for h in trace.steps[0].hits}
    assert retrieved <= set(heatmaps[0].x_labels)


def test_cli_ask_works_with_the_tiny_model(ragscope_home, tiny_llama, capsys):
    argv = ["ask", "--pack", str(MINI_PACK), "--backend", "hf", "--model", str(tiny_llama), "--device", "cpu",
            "--dtype", "bf16", QUESTION]
    assert main(argv) == 0
    assert "[1] answer" in capsys.readouterr().out
    assert main([*argv[:-1], "--quantization", "nf4", QUESTION]) == 2
    assert "CUDA only" in capsys.readouterr().err


@pytest.mark.parametrize("method", method_ids())
def test_cli_ask_on_hf_yields_attention_steps_for_every_method(ragscope_home, tiny_llama, capsys, method):
    """Every method's LLM calls capture attention on hf (segments = the documents / rules / triples)."""
    import json

    argv = ["ask", "--pack", str(MINI_PACK), "--backend", "hf", "--model", str(tiny_llama), "--device", "cpu",
            "--quantization", "none", "--method", method, "--json", QUESTION]
    assert main(argv) == 0
    steps = json.loads(capsys.readouterr().out)["steps"]
    attention = [s for s in steps if s["kind"] == "attention"]
    assert attention, f"{method} yielded no attention step"
    assert any(seg for s in attention for seg in s.get("segments", ())) or any(s["x_labels"] for s in attention)


def test_cli_hf_without_a_model_says_what_is_missing(ragscope_home, capsys):
    assert main(["ask", "--pack", str(MINI_PACK), "--backend", "hf", QUESTION]) == 2
    assert "needs 'model'" in capsys.readouterr().err


def test_openai_backend_answers_from_a_server_reply(mini_pack, settings):
    usage = {"prompt_tokens": 90, "completion_tokens": 6}
    with serving(Reply(body=completion("Answer: 1906\nEvidence: 1", usage))) as server:
        options = {"base_url": server.url, "model": "tiny-chat"}
        trace = Workbench(mini_pack, settings, backend="openai", backend_options=options).ask(QUESTION, "vanilla")
    assert trace.answer.text == "1906" and trace.answer.backend == "openai"
    assert trace.answer.citations == (trace.steps[0].hits[0].doc_id,)
    assert trace.totals.tokens_in == 90 and trace.totals.llm_calls == 1


def test_an_unreachable_server_gives_a_refusal_and_an_error_step_not_a_crash(mini_pack, settings):
    options = {"base_url": closed_port(), "model": "tiny-chat"}
    trace = Workbench(mini_pack, settings, backend="openai", backend_options=options).ask(QUESTION, "vanilla")
    assert trace.answer.refused
    assert any(isinstance(s, ErrorStep) and "cannot reach" in s.message for s in trace.steps)


def test_backends_never_import_the_tools():
    """engine/llm serves chat models; the tool bundle is built in engine/tools (no import cycle)."""
    import re

    from paths import ROOT

    offenders = [p.name for p in (ROOT / "engine" / "llm").glob("*.py")
                 if re.search(r"^\s*(from|import) engine\.(tools|methods)\b", p.read_text(), re.MULTILINE)]
    assert offenders == []
