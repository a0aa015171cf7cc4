"""Local causal LMs through transformers (a model folder, a cached hub id or one GGUF file), 4-bit NF4 /
8-bit with bitsandbytes on CUDA, bf16 or fp32 on the CPU, with attention capture, token streaming and
logprobs.

torch and transformers are imported inside functions only: the app and the offline backend
never pay for them. One model per process (`load_hf_model`), shared by every session, with a
lock around generation because a model's forward pass is not re-entrant.
"""

from __future__ import annotations

import gc
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import BackendError
from engine.hf_imports import TRANSFORMERS_LOCK
from engine.llm.attention import attention_steps, text_title, token_segments
from engine.llm.base import register_backend, required_option
from engine.llm.chat import (
    Completion,
    GenerationSettings,
    Message,
    PromptSegment,
    StreamCut,
    TokenSink,
    cut_at_stop,
    logprobs_within,
)
from engine.llm.decoding import Decoded, decode
from engine.trace import TokenLogprob

QUANTIZATIONS = ("auto", "nf4", "int8", "none")
DEVICES = ("auto", "cpu", "cuda")
DTYPES = ("auto", "bf16", "fp32")
# bitsandbytes on the CPU measured here: 4x slower to load and more memory than fp32 (issue 23)
CPU_QUANTIZATION_REASON = ("4-bit / 8-bit quantization runs on CUDA only: on the CPU bitsandbytes loads about 4x "
                           "slower and needs more memory than full precision; use dtype bf16 (about half the "
                           "memory of fp32) or a GGUF file")


@dataclass(frozen=True)
class HfModelConfig:
    """`quantization="auto"` is NF4 on CUDA and full precision on CPU (DESIGN §4)."""

    path: str  # a model folder, a cached hub id, or a .gguf file (llama.cpp / Ollama / LM Studio)
    quantization: str = "auto"
    device: str = "auto"
    eager_attention: bool = True  # sdpa returns no attentions (STACK); only capture needs eager
    dtype: str = "auto"  # of unquantized weights: bf16 on CUDA and on CPUs with bf16 instructions, else fp32

    def resolved(self, cuda: bool) -> tuple[str, str]:
        device = ("cuda" if cuda else "cpu") if self.device == "auto" else self.device
        quant = ("nf4" if device == "cuda" else "none") if self.quantization == "auto" else self.quantization
        return device, quant

    def resolved_dtype(self, device: str, cpu_bf16: bool) -> str:
        if self.dtype != "auto":
            return self.dtype
        return "bf16" if device == "cuda" or cpu_bf16 else "fp32"

    @property
    def gguf(self) -> bool:
        return self.path.lower().endswith(".gguf")


@dataclass(frozen=True)
class Prompt:
    text: str
    ids: Any  # torch.LongTensor (1, tokens)
    offsets: tuple[tuple[int, int], ...]
    content_start: int  # where the last user message's content starts in `text`, -1 if not found


class HfChatModel:
    """A loaded model + tokenizer implementing ChatModel and AttentiveChatModel."""

    backend = "hf"

    def __init__(self, config: HfModelConfig, model: Any, tokenizer: Any, device: str, precision: str):
        self.config = config
        self.model_obj = model
        self.tokenizer = tokenizer
        self.device = device
        self.precision = precision  # nf4 | int8 | bf16 | fp32: how the weights are held
        self.model = f"{Path(config.path).name} ({precision})"
        self.captures_attention = config.eager_attention  # sdpa returns no attentions (STACK)
        self.context_tokens = context_window(getattr(model, "config", None), tokenizer)
        self._lock = threading.Lock()

    # ---- prompts -------------------------------------------------------------------------------

    def render(self, messages: Sequence[Message]) -> Prompt:
        text, special = self._chat_text(messages)
        enc = self.tokenizer(text, return_offsets_mapping=True, add_special_tokens=special, return_tensors="pt")
        users = [m.content for m in messages if m.role == "user"]
        start = text.rfind(users[-1]) if users and users[-1] else -1
        offsets = tuple((int(a), int(b)) for a, b in enc["offset_mapping"][0].tolist())
        return Prompt(text=text, ids=enc["input_ids"].to(self.model_obj.device), offsets=offsets, content_start=start)

    def count_tokens(self, messages: Sequence[Message]) -> int:
        """The length of `render(messages).ids`, without building tensors or offsets."""
        text, special = self._chat_text(messages)
        return len(self.tokenizer(text, add_special_tokens=special)["input_ids"])

    def _chat_text(self, messages: Sequence[Message]) -> tuple[str, bool]:
        """The prompt text, and whether the tokenizer must add its special tokens (no template wrote them)."""
        if getattr(self.tokenizer, "chat_template", None):
            chat = [{"role": m.role, "content": m.content} for m in messages]
            return self.tokenizer.apply_chat_template(chat, tokenize=False, add_generation_prompt=True), False
        return "\n\n".join(f"{m.role}: {m.content}" for m in messages) + "\n\nassistant:", True

    # ---- generation ----------------------------------------------------------------------------

    def complete(self, messages: Sequence[Message], settings: GenerationSettings = GenerationSettings()) -> Completion:
        prompt = self.render(messages)
        started = time.perf_counter()
        with self._lock, _model_errors():
            decoded = self._decode(prompt, settings, capture=False)
        return self._completion(decoded, prompt, settings, started)

    def complete_streaming(self, messages: Sequence[Message], settings: GenerationSettings,
                           on_text: TokenSink) -> Completion:
        """`complete`, handing `on_text` the reply as each token is decoded (stop strings held back as on
        the openai backend); the pieces join to the completion's text."""
        prompt = self.render(messages)
        started = time.perf_counter()
        stream = _TextStream(self.tokenizer, StreamCut(settings.stop), on_text)
        with self._lock, _model_errors():
            decoded = self._decode(prompt, settings, capture=False, on_token=stream.update)
        completion = self._completion(decoded, prompt, settings, started)
        stream.finish(completion.text)
        return completion

    def complete_with_attention(
        self, messages: Sequence[Message], segments: Sequence[PromptSegment],
        settings: GenerationSettings = GenerationSettings(), head: int | None = None,
        on_text: TokenSink | None = None,
    ) -> tuple[Completion, tuple]:
        """The same decode as `complete`, keeping only the newest query's attentions (no L² maps); with
        `on_text`, the reply streams to it as `complete_streaming` streams."""
        prompt = self.render(messages)
        started = time.perf_counter()
        stream = _TextStream(self.tokenizer, StreamCut(settings.stop), on_text) if on_text is not None else None
        with self._lock, _model_errors():
            decoded = self._decode(prompt, settings, capture=True, on_token=stream.update if stream else None)
        tokens = list(decoded.tokens)
        completion = self._completion(decoded, prompt, settings, started)
        if stream is not None:
            stream.finish(completion.text)
        if decoded.per_token is None:
            return completion, ()
        shifted = [_placed(s, prompt) for s in segments] if prompt.content_start >= 0 else []
        owner = token_segments(prompt.offsets, shifted)
        pieces = self.tokenizer.batch_decode([[t] for t in tokens[: len(decoded.per_token)]])
        steps = attention_steps(decoded.per_token, tokens, pieces, owner, shifted, head=head)
        return completion, steps

    def _decode(self, prompt: Prompt, settings: GenerationSettings, capture: bool,
                on_token: Callable[[list[int]], None] | None = None) -> Decoded:
        return decode(self.model_obj, self.tokenizer, input_ids=prompt.ids, max_new_tokens=settings.max_new_tokens,
                      temperature=settings.temperature, stop=settings.stop, capture=capture, on_token=on_token)

    @contextmanager
    def exclusive(self) -> Iterator[None]:
        """Hold the model for a custom forward pass (R2AG's injection): the generation lock, and model
        failures turned into BackendErrors as for `complete`."""
        with self._lock, _model_errors():
            yield

    # ---- LoRA adapters (RuleRAG-FT's generator) -------------------------------------------------

    def load_adapter(self, path: str) -> str:
        """Load a peft LoRA adapter folder once per path (disabled until `adapter(path)`); its name.

        Raises BackendError for a missing folder, a folder without adapter_config.json, or an adapter
        that does not fit this model (a partly loaded one is removed again).
        """
        folder = Path(path).expanduser()
        key = str(folder.resolve()) if folder.exists() else str(folder)
        with self._lock:
            names: dict[str, str] = self.__dict__.setdefault("_adapter_names", {})
            if key in names:
                return names[key]
            if not folder.is_dir():
                raise BackendError(f"LoRA adapter folder {path} not found; give the --out folder of "
                                   "scripts/finetune_generator_lora.py")
            if not (folder / "adapter_config.json").is_file():
                raise BackendError(f"{path}: no adapter_config.json; this is not a peft LoRA adapter folder "
                                   "(scripts/finetune_generator_lora.py writes one)")
            try:
                import peft  # noqa: F401
            except ImportError as exc:
                raise BackendError("loading a LoRA adapter needs the peft package (pip install peft)") from exc
            name = f"adapter_{len(names) + 1}"  # peft names are module keys: no dots, so not the path
            try:
                self.model_obj.load_adapter(str(folder), adapter_name=name)  # a local folder: nothing downloads
            except Exception as exc:  # shape mismatch, wrong base model, broken files: all one message
                try:
                    self.model_obj.delete_adapter(name)
                except Exception:  # noqa: BLE001 — nothing was injected
                    pass
                raise BackendError(f"{path}: the LoRA adapter does not fit {self.model}: "
                                   f"{type(exc).__name__}: {str(exc)[:300]}") from exc
            self.model_obj.eval()  # new LoRA dropout modules start in training mode
            self.model_obj.disable_adapters()
            self.__dict__["_adapter_on"] = None
            if "_adapter_hook" not in self.__dict__:
                self.__dict__["_adapter_hook"] = self.model_obj.register_forward_pre_hook(self._adapter_pre_forward)
            names[key] = name
            return name

    @contextmanager
    def adapter(self, path: str) -> Iterator[None]:
        """Calls made by this thread inside the block (complete, attention, custom forwards) run with the
        LoRA adapter at `path`; every other call, and every call after the block, runs the base model.

        The adapter is switched per forward pass by a pre-hook, under the generation lock that complete()
        holds, so concurrent sessions never see it; the block itself holds no lock (no deadlock).
        """
        name = self.load_adapter(path)
        local = self.__dict__.setdefault("_adapter_thread", threading.local())
        previous = getattr(local, "name", None)
        local.name = name
        try:
            yield
        finally:
            local.name = previous
            with self._lock:
                self._switch_adapter(None)

    def active_adapter(self) -> str | None:
        """The adapter the model's LoRA layers currently apply (None = the base model)."""
        return self.__dict__.get("_adapter_on")

    def _adapter_pre_forward(self, _module: Any, _args: Any) -> None:
        local = self.__dict__.get("_adapter_thread")
        self._switch_adapter(getattr(local, "name", None) if local is not None else None)

    def _switch_adapter(self, name: str | None) -> None:
        if self.__dict__.get("_adapter_on") == name:
            return
        if name is None:
            self.model_obj.disable_adapters()
        else:
            self.model_obj.enable_adapters()
            self.model_obj.set_adapter(name)
        self.__dict__["_adapter_on"] = name

    def _completion(self, decoded: Decoded, prompt: Prompt, settings: GenerationSettings, started: float,
                    tokens_in: int | None = None) -> Completion:
        tokens = list(decoded.tokens)
        written = self.tokenizer.decode(tokens, skip_special_tokens=True)
        text = cut_at_stop(written, settings.stop).strip()
        return Completion(text=text, tokens_in=tokens_in or int(prompt.ids.shape[1]), tokens_out=len(tokens),
                          latency_ms=round((time.perf_counter() - started) * 1000, 2), backend=self.backend,
                          model=self.model, logprobs=self._logprobs(decoded, text, written))

    def _logprobs(self, decoded: Decoded, kept: str, written: str) -> tuple[TokenLogprob, ...]:
        """Each written token with its logprob, special tokens (the end of turn) left out, cut as the text was."""
        special = set(getattr(self.tokenizer, "all_special_ids", ()) or ())
        pieces = self.tokenizer.batch_decode([[t] for t in decoded.tokens])
        found = tuple(TokenLogprob(piece, round(lp, 6))
                      for t, piece, lp in zip(decoded.tokens, pieces, decoded.logprobs) if t not in special)
        return logprobs_within(found, kept, written.strip())


class _TextStream:
    """Turns the growing token list into text pieces: what the decoded text gained since the last token,
    held back while it ends in a partial UTF-8 character (byte-level tokens split them)."""

    def __init__(self, tokenizer: Any, cut: StreamCut, on_text: TokenSink):
        self.tokenizer, self.cut, self.on_text = tokenizer, cut, on_text
        self.sent = ""  # the text passed to `cut` so far

    def update(self, tokens: list[int]) -> None:
        text = self.tokenizer.decode(tokens, skip_special_tokens=True).lstrip()
        if text.endswith("\ufffd") or not text.startswith(self.sent):
            return  # a split character, or a re-tokenised prefix: wait for the next token
        self._send(text[len(self.sent):])

    def finish(self, text: str) -> None:
        """Send what the last tokens left, so the pieces join to the completion's text."""
        if text.startswith(self.sent):
            self._send(text[len(self.sent):])
        if rest := self.cut.flush():
            self.on_text(rest)

    def _send(self, piece: str) -> None:
        self.sent += piece
        if piece and (shown := self.cut.feed(piece)):
            self.on_text(shown)


def context_window(model_config: Any, tokenizer: Any) -> int | None:
    """Prompt + reply tokens the model takes: its config's position limit, or the tokenizer's
    `model_max_length` where that is lower (transformers' "unset" is a huge sentinel); None if neither says."""
    names = ("max_position_embeddings", "n_positions", "max_sequence_length", "seq_length")
    limits = [next((v for v in (getattr(model_config, n, None) for n in names) if isinstance(v, int) and v > 0), None),
              getattr(tokenizer, "model_max_length", None)]
    known = [int(v) for v in limits if isinstance(v, int) and 0 < v < 10**8]
    return min(known) if known else None


def _placed(segment: PromptSegment, prompt: Prompt) -> PromptSegment:
    """The segment in the rendered prompt's coordinates, titled by its own text when the caller gave no title."""
    start, end = segment.start + prompt.content_start, segment.end + prompt.content_start
    title = segment.title or text_title(prompt.text[start:end])
    return PromptSegment(segment.label, segment.kind, start, end, title)


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
    with TRANSFORMERS_LOCK:
        return _load_locked(config)


def _load_locked(config: HfModelConfig) -> HfChatModel:
    if config.quantization not in QUANTIZATIONS:
        raise BackendError(f"unknown quantization {config.quantization!r}; allowed: {', '.join(QUANTIZATIONS)}")
    if config.device not in DEVICES:
        raise BackendError(f"unknown device {config.device!r}; allowed: {', '.join(DEVICES)}")
    if config.dtype not in DTYPES:
        raise BackendError(f"unknown dtype {config.dtype!r}; allowed: {', '.join(DTYPES)}")
    import torch
    from transformers import AutoConfig, AutoModelForCausalLM, AutoTokenizer

    device, quant = config.resolved(torch.cuda.is_available())
    if device == "cuda" and not torch.cuda.is_available():
        raise BackendError("CUDA was requested but this machine has no usable CUDA GPU; choose device 'cpu' "
                           "(slow for large models) or run on a GPU machine")
    if device == "cpu" and quant != "none":
        raise BackendError(f"{quant}: {CPU_QUANTIZATION_REASON}")
    if config.gguf and quant != "none":
        raise BackendError(f"{config.path}: a GGUF file is already quantized; it is read into bf16 or fp32 "
                           "weights, so choose quantization 'none'")
    dtype = config.resolved_dtype(device, cpu_bf16_supported())
    source = _resolve_source(config.path, dtype)
    try:
        model_config = AutoConfig.from_pretrained(source, local_files_only=True)
    except (OSError, ValueError, KeyError, ImportError) as exc:
        raise BackendError(f"{config.path}: cannot read a model config ({str(exc)[:200]})") from exc
    _require_causal_lm(model_config, config.path)
    kwargs: dict[str, Any] = {"local_files_only": True, "dtype": torch.bfloat16 if dtype == "bf16" else torch.float32}
    if config.eager_attention:
        kwargs["attn_implementation"] = "eager"
    if quant != "none":
        kwargs["quantization_config"] = _bnb_config(quant)
        kwargs["device_map"] = "auto"
    try:
        tokenizer = AutoTokenizer.from_pretrained(source, local_files_only=True)
        model = AutoModelForCausalLM.from_pretrained(source, **kwargs)
    except torch.cuda.OutOfMemoryError as exc:
        raise BackendError(f"{config.path}: the GPU ran out of memory while loading; try nf4") from exc
    except (OSError, ValueError, RuntimeError, ImportError, KeyError) as exc:
        raise BackendError(f"{config.path}: the model could not be loaded: {str(exc)[:300]}") from exc
    if quant == "none" and device == "cuda":
        model = model.to("cuda")
    model.eval()
    return HfChatModel(config, model, tokenizer, device, quant if quant != "none" else dtype)


def cpu_bf16_supported() -> bool:
    """bf16 matmuls in hardware (AVX512-BF16 or AMX): there bf16 is faster than fp32 and half the memory;
    elsewhere torch emulates it, slower than fp32."""
    import torch

    try:
        return bool(torch.cpu._is_avx512_bf16_supported() or torch.cpu._is_amx_tile_supported())
    except AttributeError:  # a torch without these probes: play safe
        return False


def _resolve_source(path: str, dtype: str) -> str:
    """A local folder, a .gguf file (converted once, engine/llm/gguf.py), or a hub id already in the local
    cache (never downloaded)."""
    folder = Path(path).expanduser()
    if path.lower().endswith(".gguf"):
        if not folder.is_file():
            raise BackendError(f"GGUF file {path} not found; give the path of a .gguf file")
        from engine.llm.gguf import convert_once
        from engine.settings import Settings

        return str(convert_once(folder, dtype, Settings().model_cache))
    if folder.is_dir():
        if not (folder / "config.json").is_file():
            ggufs = sorted(p.name for p in folder.glob("*.gguf"))
            hint = f"; for a GGUF file give its path, e.g. {folder / ggufs[0]}" if ggufs else ""
            raise BackendError(f"{folder}: no config.json; point to the folder that holds the model files{hint}")
        return str(folder)
    if folder.exists() or path.startswith((".", "/", "~")) or path.count("/") != 1:
        raise BackendError(f"model folder {path} not found; give a local folder with config.json, a .gguf file, "
                           "or a hub id (org/name) that is already in the local Hugging Face cache")
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
def hf_chat(options: dict[str, Any]) -> HfChatModel:
    """options: model (folder, .gguf file or cached hub id), quantization, device, dtype, attention (default on)."""
    attention = str(options.get("attention", "true")).lower() not in ("0", "false", "no", "off")
    config = HfModelConfig(path=required_option(options, "model", "hf", "--model ~/models/Llama-3-8B-Instruct"),
                           quantization=str(options.get("quantization") or "auto"),
                           device=str(options.get("device") or "auto"), eager_attention=attention,
                           dtype=str(options.get("dtype") or "auto"))
    return load_hf_model(config)
