"""A trained R2-Former on disk and what it was trained for: embedder, k, feature order, LLM, width.

A checkpoint is tied to (retriever encoder, k, LLM) (spec §6): a projection trained for one LLM
means nothing to another, and features from another encoder live on another scale. Loading checks
all of it and refuses a mismatch with a `CheckpointError` that says how to fix it.
"""

from __future__ import annotations

import hashlib
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from engine.cache import Registry
from engine.errors import CheckpointError
from engine.methods.r2ag.features import FEATURE_ORDER
from engine.settings import REPO_ROOT

if TYPE_CHECKING:
    from engine.methods.r2ag.former import R2Former

SHIPPED_FOLDER = REPO_ROOT / "assets" / "r2ag"  # checkpoints that ship, laid out as in Settings.r2ag
SHIPPED = SHIPPED_FOLDER / "demo-relevance.pt"
RELEVANCE = "relevance"  # file stem of a relevance-only checkpoint in the data folder


@dataclass(frozen=True)
class CheckpointMeta:
    embedder: str
    k: int
    config: dict[str, Any]
    feature_order: tuple[str, ...] = FEATURE_ORDER
    list_order: str = "retriever"  # "r" (the paper's sort) or "retriever" (the retriever's own rank)
    llm: str = ""          # "" = relevance-only: no projection, usable with any backend as a re-ranker
    hidden_size: int = 0
    objective: str = "qdm"  # qdm | qdm+lm
    pack: str = ""
    metrics: dict[str, float] = field(default_factory=dict)

    @property
    def injects(self) -> bool:
        return bool(self.llm) and self.hidden_size > 0

    def require(self, embedder: str, k: int | None = None, llm: str = "", hidden_size: int = 0) -> None:
        """Raise CheckpointError when this checkpoint cannot serve the given setup."""
        fix = "train one for this setup with `python -m engine train-r2ag --pack DIR" + \
              (" --backend hf --model PATH`" if llm else "`")
        if tuple(self.feature_order) != FEATURE_ORDER:
            raise CheckpointError(f"R2-Former checkpoint uses feature order {', '.join(self.feature_order)}; this "
                                  f"version computes {', '.join(FEATURE_ORDER)}; {fix}")
        if self.embedder != embedder:
            raise CheckpointError(f"R2-Former checkpoint was trained on features from embedder {self.embedder!r} "
                                  f"but retrieval uses {embedder!r}; {fix}")
        if k is not None and k != self.k:
            raise CheckpointError(f"R2-Former checkpoint was trained for k={self.k} documents but k={k} was asked; "
                                  f"use k={self.k} (or 0 for the checkpoint's own), or {fix} --k {k}")
        if self.llm and llm and (self.llm != llm or self.hidden_size != hidden_size):
            raise CheckpointError(f"R2-Former checkpoint projects into {self.llm!r} (width {self.hidden_size}) but "
                                  f"the loaded model is {llm!r} (width {hidden_size}); {fix}")


# a GGUF file's name ends with its quantization ("….Q4_1.gguf", "…-Q4_K_M.gguf", "….f16.gguf")
_QUANT_SUFFIX = re.compile(r"(?:\.gguf)$|[.-](?:I?Q\d\w*|[BbFf]16|[Ff]32)$")


def llm_identity(name: str, model_config: Any) -> str:
    """Model name plus a hash of the architecture. The name drops a GGUF file's quantization and
    extension: the same weights under another quantization (or as the original folder) match."""
    keys = ("model_type", "hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size")
    signature = "|".join(str(getattr(model_config, k, "")) for k in keys)
    stem = Path(name).name
    while (shorter := _QUANT_SUFFIX.sub("", stem)) != stem and shorter:
        stem = shorter
    return f"{stem}-{hashlib.sha256(signature.encode()).hexdigest()[:8]}"


def checkpoint_path(folder: Path, llm: str = "") -> Path:
    """Where `train-r2ag` writes in `folder` (Settings.r2ag, or the shipped SHIPPED_FOLDER): one relevance-only
    file, and one file per LLM."""
    stem = re.sub(r"[^A-Za-z0-9._-]+", "-", llm).strip("-") if llm else RELEVANCE
    return folder / f"{stem}.pt"


def save_checkpoint(path: Path, model: R2Former, meta: CheckpointMeta) -> Path:
    """Weights in fp16 (they load back as fp32): the shipped demo file stays near 1 MB."""
    import torch

    path.parent.mkdir(parents=True, exist_ok=True)
    state = {name: t.detach().to(torch.float16).cpu() for name, t in model.state_dict().items()}
    tmp = path.with_suffix(".tmp")
    try:
        torch.save({"meta": asdict(meta), "state": state}, tmp)
        tmp.replace(path)
    except BaseException:
        tmp.unlink(missing_ok=True)  # a failed save leaves neither a half file nor a stray .tmp
        raise
    return path


def read_meta(path: Path) -> CheckpointMeta:
    return _read(path)[0]


def load_checkpoint(path: Path) -> tuple[R2Former, CheckpointMeta]:
    """The model is built on the meta device and takes the file's tensors as they are: a recorded
    configuration that does not fit them (or asks for gigabytes) is refused, never allocated."""
    import torch

    from engine.methods.r2ag.former import R2Former, R2FormerConfig

    meta, state = _read(path)
    layers = len({name.split(".")[1] for name in state if name.startswith("layers.")})
    try:
        config = R2FormerConfig(**meta.config)
        if config.n_layers != layers:  # checked first: building a billion empty layers would take hours
            raise CheckpointError(f"{path}: records {config.n_layers!r} layers but holds weights for {layers}")
        with torch.device("meta"):
            model = R2Former(config)
        model.load_state_dict({name: t.float() for name, t in state.items()}, assign=True)
    except (TypeError, ValueError, RuntimeError, AssertionError) as exc:
        raise CheckpointError(f"{path}: weights do not fit the recorded configuration ({str(exc)[:200]})") from exc
    model.eval()
    return model, meta


def _read(path: Path) -> tuple[CheckpointMeta, dict[str, Any]]:
    import torch

    if not path.is_file():
        raise CheckpointError(f"no R2-Former checkpoint at {path}; train one with `python -m engine train-r2ag "
                              "--pack DIR`")
    try:
        blob = torch.load(path, map_location="cpu", weights_only=True)
        raw = dict(blob["meta"])
        meta = CheckpointMeta(**{**raw, "feature_order": tuple(raw.get("feature_order", ()))})
        state = dict(blob["state"])
        if not all(isinstance(t, torch.Tensor) for t in state.values()) or not isinstance(meta.config, dict):
            raise TypeError("its state or config has the wrong type")
    except Exception as exc:  # a truncated or foreign file fails in many ways
        reason = f"{type(exc).__name__}: {str(exc)[:200]}"
        raise CheckpointError(f"{path} is not an R2-Former checkpoint ({reason})") from exc
    return meta, state


def find_checkpoint(trained: Path, llm: str = "", explicit: str = "", shipped: Path = SHIPPED_FOLDER) -> Path:
    """The checkpoint a run uses: the one named, else this LLM's (trained in the data folder, else
    shipped with the project), else the relevance-only one (trained, else shipped)."""
    if explicit:
        return Path(explicit).expanduser()
    for folder in (trained, shipped) if llm else ():
        if checkpoint_path(folder, llm).is_file():
            return checkpoint_path(folder, llm)
    relevance = checkpoint_path(trained)
    return relevance if relevance.is_file() else SHIPPED


_LOADED: Registry[tuple[str, int], tuple[R2Former, CheckpointMeta]] = Registry()


def cached_checkpoint(path: Path) -> tuple[R2Former, CheckpointMeta]:
    """`load_checkpoint` once per file version per process (runs share the small model read-only)."""
    key = (str(path.resolve()), path.stat().st_mtime_ns if path.is_file() else 0)
    return _LOADED.get(key, lambda: load_checkpoint(path))
