"""Local causal LMs through transformers, 4-bit NF4 / 8-bit with bitsandbytes, with attention capture.

torch and transformers are imported inside functions only: the app and the offline backend
never pay for them. One model per process (`load_hf_model`), shared by every session, with a
lock around generation because a model's forward pass is not re-entrant.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from engine.errors import BackendError
from engine.knowledge.records import Pack
from engine.llm.base import llm_bundle, register_backend, required_option
from engine.llm.attention import attention_steps, token_segments
from engine.llm.chat import Completion, GenerationSettings, Message, PromptSegment, cut_at_stop
from engine.tools.bundle import ToolBundle

QUANTIZATIONS = ("auto", "nf4", "int8", "none")
DEVICES = ("auto", "cpu", "cuda")


@dataclass(frozen=True)
class HfModelConfig:
    """`quantization="auto"` is NF4 on CUDA and full precision on CPU (DESIGN §4)."""

    path: str
    quantization: str = "auto"
    device: str = "auto"
    eager_attention: bool = True  # sdpa returns no attentions (STACK); only capture needs eager

    def resolved(self, cuda: bool) -> tuple[str, str]:
        device = ("cuda" if cuda else "cpu") if self.device == "auto" else self.device
        quant = ("nf4" if device == "cuda" else "none") if self.quantization == "auto" else self.quantization
        return device, quant


@dataclass(frozen=True)
class Prompt:
    text: str
    ids: Any  # torch.LongTensor (1, tokens)
    offsets: tuple[tuple[int, int], ...]
    content_start: int  # where the last user message's content starts in `text`, -1 if not found


class HfChatModel:
    """A loaded model + tokenizer implementing ChatModel and AttentiveChatModel."""

    backend = "hf"

    def __init__(self, config: HfModelConfig, model: Any, tokenizer: Any, device: str, quantization: str):
        self.config = config
        self.model_obj = model
        self.tokenizer = tokenizer
        self.device = device
        self.quantization = quantization
        self.model = f"{Path(config.path).name} ({quantization})"
        self._lock = threading.Lock()

    # ---- prompts -------------------------------------------------------------------------------

    def render(self, messages: Sequence[Message]) -> Prompt:
        chat = [{"role": m.role, "content": m.content} for m in messages]
        if getattr(self.tokenizer, "chat_template", None):
            text = self.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True)
            special = False  # the template writes its own BOS
        else:
            text = "\n\n".join(f"{m.role}: {m.content}" for m in messages) + "\n\nassistant:"
            special = True
        enc = self.tokenizer(text, return_offsets_mapping=True, add_special_tokens=special, return_tensors="pt")
        users = [m.content for m in messages if m.role == "user"]
        start = text.rfind(users[-1]) if users and users[-1] else -1
        offsets = tuple((int(a), int(b)) for a, b in enc["offset_mapping"][0].tolist())
        return Prompt(text=text, ids=enc["input_ids"].to(self.model_obj.device), offsets=offsets, content_start=start)

    # ---- generation ----------------------------------------------------------------------------

    def complete(self, messages: Sequence[Message], settings: GenerationSettings = GenerationSettings()) -> Completion:
        prompt = self.render(messages)
        started = time.perf_counter()
        with self._lock, _model_errors():
            import torch

            with torch.no_grad():
                out = self.model_obj.generate(
                    input_ids=prompt.ids, attention_mask=torch.ones_like(prompt.ids),
                    **self._sampling(settings),
                )
        new = out[0, prompt.ids.shape[1]:]
        return self._completion(new.tolist(), prompt, settings, started)

    def complete_with_attention(
        self, messages: Sequence[Message], segments: Sequence[PromptSegment],
        settings: GenerationSettings = GenerationSettings(), head: int | None = None,
    ) -> tuple[Completion, tuple]:
        """Decode step by step keeping only the newest query's attentions (cheap path, no L² maps)."""
        prompt = self.render(messages)
        started = time.perf_counter()
        with self._lock, _model_errors():
            tokens, first, later = self._decode_with_attention(prompt, settings)
        completion = self._completion(tokens, prompt, settings, started)
        shifted = [PromptSegment(s.label, s.kind, s.start + prompt.content_start, s.end + prompt.content_start)
                   for s in segments] if prompt.content_start >= 0 else []
        owner = token_segments(prompt.offsets, shifted)
        pieces = [self.tokenizer.decode([t]) for t in tokens[: len(later)]]
        steps = attention_steps(first, later, pieces, owner, shifted, head=head)
        return completion, steps

    def _decode_with_attention(self, prompt: Prompt, settings: GenerationSettings):
        import torch

        n = prompt.ids.shape[1]
        generator = torch.Generator(device="cpu").manual_seed(0)
        with torch.no_grad():
            past = None
            if n > 1:  # prefill all but the last prompt token without attentions
                past = self.model_obj(input_ids=prompt.ids[:, :-1], use_cache=True).past_key_values
            step_ids = prompt.ids[:, -1:]
            tokens: list[int] = []
            rows: list[np.ndarray] = []
            for _ in range(max(1, settings.max_new_tokens)):
                out = self.model_obj(input_ids=step_ids, past_key_values=past, use_cache=True, output_attentions=True)
                past = out.past_key_values
                # per layer (1, heads, 1, kv) → (layers, heads, prompt tokens)
                rows.append(np.stack([a[0, :, -1, :n].float().cpu().numpy() for a in out.attentions]))
                token = _next_token(out.logits[0, -1], settings.temperature, generator)
                tokens.append(token)
                if token == self.tokenizer.eos_token_id or _hit_stop(self.tokenizer, tokens, settings.stop):
                    break
                step_ids = torch.tensor([[token]], device=prompt.ids.device)
        return tokens, rows[0], np.stack(rows)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the model for a custom forward pass (R2AG's injection): the generation lock, and model
        failures turned into BackendErrors as for `complete`."""
        with self._lock, _model_errors():
            yield

    def _sampling(self, settings: GenerationSettings) -> dict[str, Any]:
        kwargs: dict[str, Any] = {"max_new_tokens": settings.max_new_tokens,
                                  "pad_token_id": self.tokenizer.pad_token_id or self.tokenizer.eos_token_id}
        if settings.temperature > 0:
            kwargs.update(do_sample=True, temperature=settings.temperature)
        else:
            kwargs.update(do_sample=False, temperature=None, top_p=None, top_k=None)
        if settings.stop:
            kwargs.update(stop_strings=list(settings.stop), tokenizer=self.tokenizer)
        return kwargs

    def _completion(self, tokens: list[int], prompt: Prompt, settings: GenerationSettings, started: float,
                    tokens_in: int | None = None) -> Completion:
        text = cut_at_stop(self.tokenizer.decode(tokens, skip_special_tokens=True), settings.stop)
        return Completion(text=text.strip(), tokens_in=tokens_in or int(prompt.ids.shape[1]), tokens_out=len(tokens),
                          latency_ms=round((time.perf_counter() - started) * 1000, 2), backend=self.backend,
                          model=self.model)


def _next_token(logits: Any, temperature: float, generator: Any) -> int:
    import torch

    if temperature <= 0:
        return int(logits.argmax())
    probs = torch.softmax(logits.float().cpu() / temperature, dim=-1)
    return int(torch.multinomial(probs, 1, generator=generator))


def _hit_stop(tokenizer: Any, tokens: list[int], stop: Sequence[str]) -> bool:
    if not stop:
        return False
    tail = tokenizer.decode(tokens[-16:], skip_special_tokens=True)
    return any(s and s in tail for s in stop)


@contextmanager
def _model_errors() -> Iterator[None]:
    """Turn OOM and other model failures into BackendErrors the UI can show (the app stays up)."""
    try:
        yield
    except BackendError:
        raise
    except Exception as exc:  # torch raises many types; none may take the app down
        text = str(exc)
        if "out of memory" in text.lower() or type(exc).__name__ == "OutOfMemoryError":
            raise BackendError("the GPU ran out of memory while generating; use 4-bit (nf4) quantization, a "
                               "smaller model, or fewer/shorter chunks") from exc
        raise BackendError(f"the model failed while generating: {type(exc).__name__}: {text[:300]}") from exc


# ---- loading -------------------------------------------------------------------------------------

_LOADED: dict[str, HfChatModel] = {}
_LOAD_LOCK = threading.Lock()


def load_hf_model(config: HfModelConfig) -> HfChatModel:
    """The process's one HF model; asking for another config unloads the previous one first."""
    with _LOAD_LOCK:
        current = _LOADED.get("model")
        if current is not None and current.config == config:
            return current
        _unload_locked()
        _LOADED["model"] = _load(config)
        return _LOADED["model"]


def loaded_hf_model() -> HfChatModel | None:
    return _LOADED.get("model")


def unload_hf_model() -> None:
    with _LOAD_LOCK:
        _unload_locked()


def _unload_locked() -> None:
    model = _LOADED.pop("model", None)
    if model is None:
        return
    del model
    gc.collect()
    import torch

    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _load(config: HfModelConfig) -> HfChatModel:
    if config.quantization not in QUANTIZATIONS:
        raise BackendError(f"unknown quantization {config.quantization!r}; allowed: {', '.join(QUANTIZATIONS)}")
    if config.device not in DEVICES:
        raise BackendError(f"unknown device {config.device!r}; allowed: {', '.join(DEVICES)}")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    device, quant = config.resolved(torch.cuda.is_available())
    if device == "cuda" and not torch.cuda.is_available():
        raise BackendError("CUDA was requested but this machine has no usable CUDA GPU; choose device 'cpu' "
                           "(slow for large models) or run on a GPU machine")
    source = _resolve_source(config.path)
    try:
        model_config = AutoConfig.from_pretrained(source, local_files_only=True)
    except (OSError, ValueError) as exc:
        raise BackendError(f"{config.path}: cannot read a model config ({str(exc)[:200]})") from exc
    _require_causal_lm(model_config, config.path)
    kwargs: dict[str, Any] = {"local_files_only": True,
                              "dtype": torch.bfloat16 if device == "cuda" else torch.float32}
    if config.eager_attention:
        kwargs["attn_implementation"] = "eager"
    if quant != "none":
        kwargs["quantization_config"] = _bnb_config(quant)
        kwargs["device_map"] = "auto" if device == "cuda" else "cpu"
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except torch.cuda.OutOfMemoryError as exc:
        raise BackendError(f"{config.path}: the GPU ran out of memory while loading; try nf4") from exc
    except (OSError, ValueError, RuntimeError, ImportError) as exc:
        raise BackendError(f"{config.path}: the model could not be loaded: {str(exc)[:300]}") from exc
    if quant == "none" and device == "cuda":
        model = model.to("cuda")
    model.eval()
    return HfChatModel(config, model, tokenizer, device, quant)


def _resolve_source(path: str) -> str:
    """A local folder, or a hub id that is already in the local cache (never downloaded)."""
    folder = Path(path).expanduser()
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            raise BackendError(f"{folder}: no config.json; point to the folder that holds the model files")
        return str(folder)
    if folder.exists() or path.startswith((".", "/", "~")) or path.count("/") != 1:
        raise BackendError(f"model folder {path} not found; give a local folder with config.json, or a hub id "
                           "(org/name) that is already in the local Hugging Face cache")
    from huggingface_hub import snapshot_download
    from huggingface_hub.errors import LocalEntryNotFoundError

    try:
        return snapshot_download(path, local_files_only=True)
    except (LocalEntryNotFoundError, OSError, ValueError) as exc:
        raise BackendError(f"{path} is not in the local Hugging Face cache and downloads are off; download it "
                           "once elsewhere and give its folder") from exc


def _require_causal_lm(model_config: Any, path: str) -> None:
    from transformers.models.auto.modeling_auto import MODEL_FOR_CAUSAL_LM_MAPPING_NAMES

    architectures = getattr(model_config, "architectures", None) or []
    if model_config.model_type in MODEL_FOR_CAUSAL_LM_MAPPING_NAMES and (
            not architectures or any(a.endswith(("ForCausalLM", "LMHeadModel", "ForConditionalGeneration"))
                                     for a in architectures)):
        return
    raise BackendError(f"{path}: {model_config.model_type} ({', '.join(architectures) or 'no architecture'}) is "
                       "not a causal language model; ragscope needs a text-generation model such as Llama")


def _bnb_config(quant: str) -> Any:
    try:
        import bitsandbytes  # noqa: F401
        import torch
        from transformers import BitsAndBytesConfig
    except Exception as exc:  # a broken bitsandbytes install fails in many ways
        raise BackendError(f"bitsandbytes is not usable here ({str(exc)[:200]}); choose quantization 'none'") from exc
    if quant == "nf4":
        return BitsAndBytesConfig(load_in_4bit=True, bnb_4bit_quant_type="nf4", bnb_4bit_use_double_quant=True,
                                  bnb_4bit_compute_dtype=torch.bfloat16)
    return BitsAndBytesConfig(load_in_8bit=True)


@register_backend("hf")
def hf_tools(pack: Pack, retrieval: Any, options: dict[str, Any]) -> ToolBundle:
    """options: model (folder or cached hub id), quantization, device, attention (default on)."""
    attention = str(options.get("attention", "true")).lower() not in ("0", "false", "no", "off")
    config = HfModelConfig(path=required_option(options, "model", "hf", "--model ~/models/Llama-3-8B-Instruct"),
                           quantization=str(options.get("quantization", "auto")),
                           device=str(options.get("device", "auto")), eager_attention=attention)
    return llm_bundle(load_hf_model(config), pack, capture_attention=attention)
