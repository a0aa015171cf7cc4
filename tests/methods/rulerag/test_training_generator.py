"""RuleRAG-FT generator side (training.py, scripts/finetune_generator_lora.py): five-block rule prompts from the
pack, one training step on a tiny Llama."""

from __future__ import annotations

import importlib.util
import json
import math
import sys

import pytest

from engine.methods.rulerag.training import build_examples
from paths import DEMO_PACK, ROOT

pytest.importorskip("peft")


def _script():
    """The command-line script, loaded from its file as `python scripts/…` runs it."""
    script = ROOT / "scripts" / "finetune_generator_lora.py"
    spec = importlib.util.spec_from_file_location("finetune_generator_lora", script)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def test_examples_are_five_block_rule_prompts_with_the_gold_answer(demo_workbench):
    examples = build_examples(demo_workbench.pack, demo_workbench.retrieval, "bm25", 10)
    rule_questions = [q for q in demo_workbench.pack.questions if q.extra.get("rule_ids")]
    assert [e.question_id for e in examples] == [q.id for q in rule_questions]
    first = examples[0]
    blocks = [line.split(":")[0] for line in first.prompt.splitlines() if line.startswith("# ")]
    assert blocks == ["# Instruct", "# Retrieved documents", "# Rules", "# Query", "# Answer"]
    assert "Rule One: [X, born in, Z] and [Z, located in, Y] leads to [X, citizen of, Y]." in first.prompt
    assert first.answer == "Austria."


def test_one_step_on_a_tiny_llama_saves_an_adapter_with_a_finite_loss(tiny_llama, tmp_path, ragscope_home):
    out = tmp_path / "adapter"
    code = _script().main(["--model", str(tiny_llama), "--pack", str(DEMO_PACK), "--out", str(out), "--steps", "1",
                           "--batch-size", "2", "--retriever", "bm25", "--device", "cpu", "--max-length", "512"])
    assert code == 0
    assert (out / "adapter_config.json").is_file() and (out / "adapter_model.safetensors").is_file()
    report = json.loads((out / "training.json").read_text())
    assert len(report["losses"]) == 1 and math.isfinite(report["losses"][0]) and report["device"] == "cpu"
    assert set(json.loads((out / "adapter_config.json").read_text())["target_modules"]) == {
        "q_proj", "k_proj", "v_proj", "o_proj"}
