"""A sentence-transformers model that is only a transformer, mean pooling and (optionally) L2 normalisation,
run without sentence-transformers, and for BERT (MiniLM, the default) without transformers either.

A fresh process's first question paid 4.8 s for importing sentence-transformers (its training stack: peft,
the trainer, model cards) and 2.5 s more for transformers' BERT module, against 1 s for torch; the demo
tour's first stop must show within 5 s of a fresh server's Start (issue 22). A BERT encoder is a few matrix
products over the checkpoint's own weights (safetensors) and the checkpoint's own tokenizer (tokenizers),
so it is computed here for that one architecture; any other plain mean-pooling model goes through
transformers' AutoModel, and every other module layout (a Dense layer, CLS pooling, lower-casing) keeps
sentence-transformers. Vectors are sentence-transformers' own to 1e-5 (tests/retrieval/test_mean_pooling.py).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

from engine.hf_imports import TRANSFORMERS_LOCK

_TRANSFORMER = "sentence_transformers.models.Transformer"
_POOLING = "sentence_transformers.models.Pooling"
_NORMALIZE = "sentence_transformers.models.Normalize"
_MEAN_ONLY = {"pooling_mode_mean_tokens": True, "pooling_mode_cls_token": False, "pooling_mode_max_tokens": False,
              "pooling_mode_mean_sqrt_len_tokens": False}


def _json(path: Path) -> Any:
    try:
        return json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None


def is_plain_mean_pooling(folder: Path) -> bool:
    """True for [Transformer at the root, Pooling (mean tokens only), Normalize?] with no lower-casing."""
    modules = _json(folder / "modules.json")
    if not isinstance(modules, list) or not modules or not all(isinstance(m, dict) for m in modules):
        return False
    kinds = [m.get("type") for m in modules]
    if kinds not in ([_TRANSFORMER, _POOLING], [_TRANSFORMER, _POOLING, _NORMALIZE]) or modules[0].get("path"):
        return False
    pooling = _json(folder / str(modules[1].get("path", "")) / "config.json")
    if not isinstance(pooling, dict) or any(pooling.get(k, False) != v for k, v in _MEAN_ONLY.items()):
        return False
    if any(v for k, v in pooling.items() if k.startswith("pooling_mode_") and k not in _MEAN_ONLY):
        return False  # a pooling mode this encoder does not know (weighted mean, last token, …)
    config = _json(folder / "sentence_bert_config.json") or {}
    return isinstance(config, dict) and not config.get("do_lower_case", False)


def _is_plain_bert(folder: Path) -> bool:
    config = _json(folder / "config.json") or {}
    return (config.get("model_type") == "bert" and config.get("hidden_act") == "gelu"
            and config.get("position_embedding_type", "absolute") == "absolute"
            and (folder / "tokenizer.json").is_file() and (folder / "model.safetensors").is_file())


class MeanPoolingEncoder:
    """The subset of SentenceTransformer that Embedder uses: encode and the embedding dimension."""

    def __init__(self, folder: Path, device: str):
        modules = _json(folder / "modules.json")
        config = _json(folder / "sentence_bert_config.json") or {}
        self.normalize = len(modules) == 3
        self.device = device
        self._transformer = _Bert(folder, device) if _is_plain_bert(folder) else _AutoModel(folder, device)
        self.max_length = int(config.get("max_seq_length") or self._transformer.max_length)

    def get_sentence_embedding_dimension(self) -> int:
        return self._transformer.hidden_size

    def encode(self, texts: list[str], batch_size: int = 64, **_: Any) -> np.ndarray:
        """(n, d) float32 in the order given; longest texts batched together, as sentence-transformers does."""
        import torch

        order = sorted(range(len(texts)), key=lambda i: -len(texts[i]))
        out = np.zeros((len(texts), self.get_sentence_embedding_dimension()), dtype=np.float32)
        with torch.inference_mode():
            for start in range(0, len(order), batch_size):
                picked = order[start:start + batch_size]
                hidden, mask = self._transformer([str(texts[i]).strip() for i in picked], self.max_length)
                mask = mask.unsqueeze(-1).to(hidden.dtype)
                vectors = (hidden * mask).sum(dim=1) / mask.sum(dim=1).clamp(min=1e-9)
                if self.normalize:
                    vectors = torch.nn.functional.normalize(vectors, p=2, dim=1)
                out[picked] = vectors.float().cpu().numpy()
        return out


class _AutoModel:
    """Any transformers encoder: (last hidden state, attention mask) for a batch of texts."""

    def __init__(self, folder: Path, device: str):
        with TRANSFORMERS_LOCK:
            from transformers import AutoModel, AutoTokenizer

            self.tokenizer = AutoTokenizer.from_pretrained(str(folder), local_files_only=True)
            self.model = AutoModel.from_pretrained(str(folder), local_files_only=True).to(device).eval()
        self.device = device
        self.hidden_size = int(self.model.config.hidden_size)
        self.max_length = int(self.tokenizer.model_max_length)

    def __call__(self, texts: list[str], max_length: int) -> tuple[Any, Any]:
        batch = self.tokenizer(texts, padding=True, truncation=True, max_length=max_length,
                               return_tensors="pt").to(self.device)
        return self.model(**batch).last_hidden_state, batch["attention_mask"]


class _Bert:
    """BERT's encoder (absolute positions, GELU) on the checkpoint's weights: (last hidden state, mask)."""

    def __init__(self, folder: Path, device: str):
        from safetensors.torch import load_file
        from tokenizers import Tokenizer

        config = _json(folder / "config.json")
        self.hidden_size = int(config["hidden_size"])
        self.heads = int(config["num_attention_heads"])
        self.layers = int(config["num_hidden_layers"])
        self.eps = float(config.get("layer_norm_eps", 1e-12))
        self.max_length = int(config.get("max_position_embeddings", 512))
        weights = load_file(str(folder / "model.safetensors"))
        self.w = {name.removeprefix("bert."): tensor.float().to(device) for name, tensor in weights.items()}
        self.device = device
        self.tokenizer = Tokenizer.from_file(str(folder / "tokenizer.json"))
        self.tokenizer.no_padding()
        self.tokenizer.no_truncation()
        self.pad_id = int(config.get("pad_token_id", 0))

    def __call__(self, texts: list[str], max_length: int) -> tuple[Any, Any]:
        import torch

        encoded = self.tokenizer.encode_batch(texts)
        width = min(max(len(e.ids) for e in encoded), max_length)
        ids = torch.full((len(texts), width), self.pad_id, dtype=torch.long)
        types = torch.zeros((len(texts), width), dtype=torch.long)
        mask = torch.zeros((len(texts), width), dtype=torch.long)
        for row, e in enumerate(encoded):
            kept = _truncated(e.ids, width)
            ids[row, :len(kept)] = torch.tensor(kept)
            types[row, :len(kept)] = torch.tensor(_truncated(e.type_ids, width))
            mask[row, :len(kept)] = 1
        ids, types, mask = ids.to(self.device), types.to(self.device), mask.to(self.device)
        return self._forward(ids, types, mask), mask

    def _forward(self, ids: Any, types: Any, mask: Any) -> Any:
        import torch
        from torch.nn import functional as F

        w, size = self.w, (self.hidden_size,)
        positions = torch.arange(ids.shape[1], device=ids.device)
        x = (w["embeddings.word_embeddings.weight"][ids] + w["embeddings.position_embeddings.weight"][positions]
             + w["embeddings.token_type_embeddings.weight"][types])
        x = F.layer_norm(x, size, w["embeddings.LayerNorm.weight"], w["embeddings.LayerNorm.bias"], self.eps)
        blocked = (1.0 - mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
        batch, length, head_size = ids.shape[0], ids.shape[1], self.hidden_size // self.heads
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def heads(name: str, x: Any = x, p: str = p) -> Any:  # this layer's input and weights, bound now
                projected = F.linear(x, w[f"{p}attention.self.{name}.weight"], w[f"{p}attention.self.{name}.bias"])
                return projected.view(batch, length, self.heads, head_size).transpose(1, 2)

            attended = F.scaled_dot_product_attention(heads("query"), heads("key"), heads("value"), attn_mask=blocked)
            attended = attended.transpose(1, 2).reshape(batch, length, self.hidden_size)
            x = F.layer_norm(F.linear(attended, w[f"{p}attention.output.dense.weight"],
                                      w[f"{p}attention.output.dense.bias"]) + x,
                             size, w[f"{p}attention.output.LayerNorm.weight"], w[f"{p}attention.output.LayerNorm.bias"],
                             self.eps)
            inner = F.gelu(F.linear(x, w[f"{p}intermediate.dense.weight"], w[f"{p}intermediate.dense.bias"]))
            x = F.layer_norm(F.linear(inner, w[f"{p}output.dense.weight"], w[f"{p}output.dense.bias"]) + x,
                             size, w[f"{p}output.LayerNorm.weight"], w[f"{p}output.LayerNorm.bias"], self.eps)
        return x


def _truncated(ids: list[int], width: int) -> list[int]:
    """A sequence cut to `width` tokens keeping its closing special token, as transformers' truncation does."""
    return list(ids) if len(ids) <= width else [*ids[:width - 1], ids[-1]]
