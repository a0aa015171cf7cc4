"""RuleRAG-FT on the hf backend: the LoRA adapter from training.py is active for the rule reader only."""

from __future__ import annotations

import threading

import pytest

from engine.errors import BackendError
from engine.llm.chat import GenerationSettings, Message
from engine.methods.base import RunContext, get_method
from engine.methods.rulerag.method import RuleRagParams
from engine.tools.bundle import llm_bundle
from engine.trace import DecisionStep, ErrorStep, LlmCallStep
from paths import DEMO_PACK

pytest.importorskip("peft")

TELLER = "Of which country was Edward Teller a citizen by birth?"


@pytest.fixture(scope="module")
def adapter_dir(tiny_llama, tmp_path_factory, ragscope_home):
    from engine.methods.rulerag.training import main

    out = tmp_path_factory.mktemp("rulerag_lora") / "adapter"
    assert main(["--model", str(tiny_llama), "--pack", str(DEMO_PACK), "--out", str(out), "--steps", "1",
                 "--batch-size", "1", "--retriever", "bm25", "--device", "cpu", "--max-length", "256"]) == 0
    return out


@pytest.fixture(scope="module")
def hf_chat(tiny_llama):
    from engine.llm.hf import HfModelConfig, load_hf_model, unload_hf_model

    chat = load_hf_model(HfModelConfig(path=str(tiny_llama), device="cpu", dtype="fp32"))
    yield chat
    unload_hf_model()  # one model per process, and this one carries LoRA layers now


def _run(demo_pack, demo_workbench, chat, **params) -> list:
    ctx = RunContext(pack=demo_pack, retrieval=demo_workbench.retrieval, tools=llm_bundle(chat, demo_pack),
                     params=RuleRagParams(k=3, retriever="bm25", **params), cancel=threading.Event())
    return list(get_method("rulerag").run(TELLER, ctx))


def _lora_layers(chat) -> list:
    from peft.tuners.tuners_utils import BaseTunerLayer

    return [m for m in chat.model_obj.modules() if isinstance(m, BaseTunerLayer)]


def test_the_rule_reader_runs_with_the_adapter_and_the_base_model_comes_back(demo_pack, demo_workbench, hf_chat,
                                                                            adapter_dir):
    name = hf_chat.load_adapter(str(adapter_dir))
    assert hf_chat.load_adapter(str(adapter_dir)) == name  # loaded once per path
    layers = _lora_layers(hf_chat)
    assert layers and hf_chat.active_adapter() is None and all(m.disable_adapters for m in layers)
    seen: list[tuple[bool, tuple[str, ...]]] = []  # (LoRA on, active adapters) at each forward of a LoRA layer
    hooks = [m.register_forward_hook(lambda m, *_: seen.append((not m.disable_adapters, tuple(m.active_adapters))))
             for m in layers[:1]]
    try:
        steps = _run(demo_pack, demo_workbench, hf_chat, adapter=str(adapter_dir))
        during = list(seen)
        seen.clear()
        hf_chat.complete([Message("user", "hello")], GenerationSettings(max_new_tokens=2))
        after = list(seen)
    finally:
        for hook in hooks:
            hook.remove()
    note = next(s for s in steps if isinstance(s, DecisionStep) and s.action == "adapter")
    assert str(adapter_dir) in note.detail
    calls = [s for s in steps if isinstance(s, LlmCallStep)]
    assert [c.role for c in calls] == ["rule reader"] and not any(isinstance(s, ErrorStep) for s in steps)
    assert during and all(on and active == (name,) for on, active in during)  # every reader forward: LoRA on
    assert after and not any(on for on, _ in after)  # the base model for everyone afterwards
    assert hf_chat.active_adapter() is None and all(m.disable_adapters for m in layers)
    assert isinstance(steps[-1].refused, bool)


def test_the_adapter_is_on_only_for_the_thread_inside_the_block(hf_chat, adapter_dir):
    settings = GenerationSettings(max_new_tokens=2)
    hf_chat.load_adapter(str(adapter_dir))
    layer = _lora_layers(hf_chat)[0]
    seen: list[tuple[str, bool]] = []
    hook = layer.register_forward_hook(lambda m, *_: seen.append((threading.current_thread().name,
                                                                  not m.disable_adapters)))
    try:
        with hf_chat.adapter(str(adapter_dir)):
            other = threading.Thread(target=hf_chat.complete, args=([Message("user", "hi")], settings), name="other")
            other.start()
            other.join()
            hf_chat.complete([Message("user", "hi")], settings)
    finally:
        hook.remove()
    assert {on for name, on in seen if name == "other"} == {False}
    assert {on for name, on in seen if name != "other"} == {True}
    assert hf_chat.active_adapter() is None


def test_a_missing_adapter_folder_is_a_clear_error_and_the_reader_uses_the_base_model(demo_pack, demo_workbench,
                                                                                     hf_chat, tmp_path):
    with pytest.raises(BackendError, match="not found"):
        hf_chat.load_adapter(str(tmp_path / "nothing"))
    (tmp_path / "empty").mkdir()
    with pytest.raises(BackendError, match="adapter_config.json"):
        hf_chat.load_adapter(str(tmp_path / "empty"))
    steps = _run(demo_pack, demo_workbench, hf_chat, adapter=str(tmp_path / "nothing"))
    error = next(s for s in steps if isinstance(s, ErrorStep))
    assert error.recoverable and "could not be loaded" in error.message and "base model" in error.message
    assert [s.role for s in steps if isinstance(s, LlmCallStep)] == ["rule reader"]
    assert steps[-1].kind == "answer"


def test_the_loaded_lora_weights_are_the_trained_ones(hf_chat, adapter_dir):
    import torch
    from safetensors.torch import load_file

    name = hf_chat.load_adapter(str(adapter_dir))
    saved = {k: v for k, v in load_file(str(adapter_dir / "adapter_model.safetensors")).items() if "lora_B" in k}
    loaded = {k: v for k, v in hf_chat.model_obj.state_dict().items() if "lora_B" in k and name in k}
    assert saved and len(loaded) == len(saved)
    key = next(k for k in saved if "layers.0.self_attn.q_proj" in k)
    mine = next(v for k, v in loaded.items() if "layers.0.self_attn.q_proj" in k)
    assert torch.count_nonzero(saved[key]) > 0 and torch.allclose(mine.float(), saved[key].float())
