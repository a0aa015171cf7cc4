"""GGUF files (what llama.cpp, Ollama and LM Studio keep on disk) as transformers models.

transformers reads a GGUF file by dequantizing every tensor, which takes ~20 s even for a 135M model
(config 4 s, tokenizer 3 s, weights 11 s, measured on 2 cores). The first load converts the file once
into an ordinary model folder under `Settings.model_cache`; later loads read that folder (under 1 s).
A converted folder is named after the file's name, size and modification time, so a changed file is
converted again; it is written to a temporary folder and renamed, so a full disk or a kill leaves no
half-written model behind.
"""

from __future__ import annotations

import hashlib
import shutil
import tempfile
from pathlib import Path
from typing import Any

from engine.errors import BackendError


def converted_folder(gguf: Path, dtype: str, cache: Path) -> Path:
    """Where the converted copy of `gguf` in `dtype` lives (it may not exist yet)."""
    stat = gguf.stat()
    key = hashlib.sha256(f"{gguf.resolve()}|{stat.st_size}|{stat.st_mtime_ns}|{dtype}".encode()).hexdigest()[:12]
    return cache / f"{gguf.stem}-{dtype}-{key}"


def convert_once(gguf: Path, dtype: str, cache: Path) -> Path:
    """The converted folder of `gguf`, made now if missing; BackendError when the file cannot be read."""
    target = converted_folder(gguf, dtype, cache)
    if (target / "config.json").is_file():
        return target
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    files = {"gguf_file": gguf.name, "local_files_only": True}
    try:
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), **files)
        model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), dtype=torch.bfloat16 if dtype == "bf16" else torch.float32, **files)
    except (OSError, ValueError, RuntimeError, KeyError, ImportError) as exc:
        raise BackendError(f"{gguf}: not a GGUF model transformers can read ({str(exc)[:300]})") from exc
    forget_gguf_quantizer(model)
    cache.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}-", dir=cache))
    try:
        model.save_pretrained(staging)
        tokenizer.save_pretrained(staging)
        staging.rename(target)
    except OSError as exc:
        raise BackendError(f"{gguf}: could not keep a converted copy in {cache} ({exc.strerror or exc}); "
                           "free some disk space or set RAGSCOPE_HOME elsewhere") from exc
    finally:
        shutil.rmtree(staging, ignore_errors=True)
    return target


def forget_gguf_quantizer(model: Any) -> None:
    """A model read from GGUF holds dequantized torch weights but keeps its GGUF quantizer, which makes
    `save_pretrained` refuse it; nothing of it is used after loading."""
    model.hf_quantizer = None
    model.is_quantized = False
    if hasattr(model.config, "quantization_config"):
        del model.config.quantization_config
