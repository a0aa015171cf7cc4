"""Models: load and unload the process's local HF model, point at an OpenAI-compatible server or a LangChain chat
model, send a model a test prompt, check the GPU, and keep the backends a user set up across restarts.

The Models page imports model work only from here; torch is imported only when a model is loaded or the GPU
is checked (engine.llm.hf and engine.llm.gpu import it inside functions, DESIGN §11).
"""

from __future__ import annotations

import json
import logging
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from engine.codec import loads_bounded
from engine.errors import BackendError, RagscopeError
from engine.files import write_text_atomic
from engine.llm.chat import ChatModel, Completion, GenerationSettings, Message
from engine.llm.gpu import NO_GPU_HINT, GpuStatus, gib, gpu_status
from engine.llm.hf import (
    CPU_QUANTIZATION_REASON,
    DEVICES,
    DTYPES,
    QUANTIZATIONS,
    HfChatModel,
    HfModelConfig,
    load_hf_model,
    loaded_hf_model,
    unload_hf_model,
)
from engine.llm.langchain_chat import LOST as LANGCHAIN_LOST
from engine.llm.langchain_chat import LangChainChatModel, langchain_chat
from engine.llm.openai import OpenAIChatModel, check_connection, check_model

__all__ = [
    "CPU_QUANTIZATION_REASON", "DEVICES", "DTYPES", "LANGCHAIN_LOST", "NO_GPU_HINT", "OFFLINE", "QUANTIZATIONS",
    "BackendConfig", "ChatModel", "Completion", "GpuStatus", "HfChatModel", "HfModelConfig", "LangChainChatModel",
    "OpenAIChatModel", "gib", "gpu_status", "langchain_model", "load_local", "loaded_local", "local_backend",
    "options_tuple", "read_backends", "server_backend", "server_chat", "server_models", "train_r2ag_command",
    "try_prompt", "unload_local", "use_langchain", "use_server", "write_backends",
]

SECRET_OPTIONS = ("api_key",)  # never written to disk: after a restart a server that needs a key asks again
SAVED_BACKENDS = ("hf", "openai", "langchain")

log = logging.getLogger(__name__)


# ---- backends a user set up ------------------------------------------------------------------------------


@dataclass(frozen=True)
class BackendConfig:
    """A backend the user has set up on the Models page (offline needs none)."""

    name: str
    label: str
    options: tuple[tuple[str, str], ...] = field(default=())


OFFLINE = BackendConfig("offline", "offline (no language model)")


def options_tuple(options: Mapping[str, Any]) -> tuple[tuple[str, str], ...]:
    """Backend options as a sorted, hashable tuple of strings, empty ones left out (a cache key)."""
    return tuple(sorted((k, str(v)) for k, v in options.items() if v not in ("", None)))


def read_backends(path: Path) -> dict[str, BackendConfig]:
    """The hf/openai backends saved in `path`; none when it is missing, and a damaged file costs the list only."""
    try:
        raw = loads_bounded(path.read_text(encoding="utf-8"), str(path))
        return {name: BackendConfig(name, str(entry["label"]), tuple((str(k), str(v)) for k, v in entry["options"]))
                for name, entry in raw.items() if name in SAVED_BACKENDS}
    except FileNotFoundError:
        return {}
    except (OSError, RagscopeError, ValueError, KeyError, TypeError, AttributeError) as exc:
        log.warning("ignoring %s: %s", path, exc)
        return {}


def write_backends(path: Path, configs: Mapping[str, BackendConfig]) -> None:
    """Kept private (0600) and without secrets such as API keys."""
    kept = {name: {"label": c.label, "options": [[k, v] for k, v in c.options if k not in SECRET_OPTIONS]}
            for name, c in configs.items()}
    write_text_atomic(path, json.dumps(kept, ensure_ascii=False, indent=2), private=True)


# ---- the local model (hf) ---------------------------------------------------------------------------------


def loaded_local() -> HfChatModel | None:
    """The process's one HF model, shared by every session, or None."""
    return loaded_hf_model()


def load_local(config: HfModelConfig) -> HfChatModel:
    """Load `config` as the process's one HF model (the previous one is unloaded first). BackendError for a
    problem the loader understood; whatever transformers raises otherwise."""
    return load_hf_model(config)


def unload_local() -> None:
    """Free the local model's memory (every session loses it)."""
    unload_hf_model()


def local_backend(model: HfChatModel) -> BackendConfig:
    """The sidebar's entry for a loaded local model."""
    config = model.config
    options = {"model": config.path, "quantization": config.quantization, "device": config.device,
               "dtype": config.dtype, "attention": config.eager_attention}
    return BackendConfig("hf", f"hf: {model.model}", options_tuple(options))


def train_r2ag_command(pack_path: str, config: HfModelConfig) -> str:
    """The CLI line that trains R2AG's R2-Former and projection for this model on this pack."""
    parts = ["python", "-m", "engine", "train-r2ag", "--pack", pack_path, "--backend", "hf", "--model", config.path]
    if config.quantization != "auto":
        parts += ["--quantization", config.quantization]
    if config.device != "auto":
        parts += ["--device", config.device]
    if config.dtype != "auto":
        parts += ["--dtype", config.dtype]
    return shlex.join(parts)


# ---- a server (OpenAI-compatible) -------------------------------------------------------------------------


def server_models(base_url: str, api_key: str = "") -> list[str]:
    """The model ids the server offers (BackendError when it does not answer)."""
    return check_connection(base_url, api_key)


def use_server(base_url: str, model: str, api_key: str = "") -> BackendConfig:
    """The sidebar's entry for a server, accepted only once it answers and offers `model` (BackendError else)."""
    chat = OpenAIChatModel(base_url, model, api_key)  # validates the URL and settings, sends nothing
    check_model(chat.base_url, model, api_key)
    return server_backend(chat.base_url, model, api_key)


def server_backend(base_url: str, model: str, api_key: str = "") -> BackendConfig:
    options = {"base_url": base_url, "model": model, "api_key": api_key}
    return BackendConfig("openai", f"openai: {model}", options_tuple(options))


def server_chat(config: BackendConfig) -> OpenAIChatModel | None:
    """A chat model for a configured server; None if its saved settings no longer validate."""
    options = dict(config.options)
    try:
        return OpenAIChatModel(options["base_url"], options["model"], options.get("api_key", ""))
    except BackendError:
        return None  # it was validated when configured; a changed library would show up on the server form


# ---- a LangChain chat model ------------------------------------------------------------------------------


def use_langchain(model: str, base_url: str = "", api_key: str = "") -> BackendConfig:
    """The sidebar's entry for a LangChain chat model (`provider:name` or `module:factory`), accepted once it
    opens: the factory ran and returned a chat model, or init_chat_model took the settings (nothing is sent)."""
    options = {"model": model.strip(), "base_url": base_url.strip(), "api_key": api_key}
    langchain_chat(options)
    return BackendConfig("langchain", f"langchain: {options['model']}", options_tuple(options))


def langchain_model(config: BackendConfig) -> LangChainChatModel | None:
    """The chat model of a configured LangChain backend; None if it no longer opens (a factory since broken)."""
    try:
        return langchain_chat(dict(config.options))
    except BackendError:
        return None


# ---- trying a model -----------------------------------------------------------------------------------------


def try_prompt(model: ChatModel, prompt: str, max_new_tokens: int) -> Completion:
    """One user message, answered with at most `max_new_tokens` (BackendError when the model fails)."""
    return model.complete([Message("user", prompt)], GenerationSettings(max_new_tokens=max_new_tokens))
