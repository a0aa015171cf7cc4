"""The R2-Former (spec §2.2-2.3): 3 features per document → 256-d states → QDM logit and LLM-width vectors.

Written out rather than built from `nn.TransformerEncoderLayer`: that layer asks attention for no
weights and may take a fused path in eval mode, and the k × k maps per head are what the UI shows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass

import torch
from torch import nn

from engine.errors import CheckpointError
from engine.methods.r2ag.features import FEATURE_ORDER


@dataclass(frozen=True)
class R2FormerConfig:
    """Defaults follow the paper (256 wide, 4 heads, dropout 0.1) and the code (1 post-LN layer, ReLU).

    [decide 1] The FFN width is PyTorch's default (2048) in the code, not a stated choice; with three
    input scalars per document 512 is ample and keeps a checkpoint near 1 MB in fp16.
    `hidden_size` is the LLM's embedding width; 0 means no projection (relevance-only training).
    """

    k: int = 10
    n_features: int = len(FEATURE_ORDER)
    d_model: int = 256
    n_heads: int = 4
    d_ff: int = 512
    n_layers: int = 1
    dropout: float = 0.1
    hidden_size: int = 0

    def to_dict(self) -> dict[str, int | float]:
        return asdict(self)


@dataclass(frozen=True)
class FormerOutput:
    hidden: torch.Tensor     # (B, k, d_model)
    logits: torch.Tensor     # (B, k) QDM relevance logits
    attention: torch.Tensor  # (B, layers, heads, k, k)


class EncoderLayer(nn.Module):
    """Post-LN self-attention + ReLU FFN (the PyTorch default layer), returning per-head weights."""

    def __init__(self, config: R2FormerConfig):
        super().__init__()
        self.attn = nn.MultiheadAttention(config.d_model, config.n_heads, dropout=config.dropout, batch_first=True)
        self.ff = nn.Sequential(nn.Linear(config.d_model, config.d_ff), nn.ReLU(), nn.Dropout(config.dropout),
                                nn.Linear(config.d_ff, config.d_model))
        self.norm1, self.norm2 = nn.LayerNorm(config.d_model), nn.LayerNorm(config.d_model)
        self.drop1, self.drop2 = nn.Dropout(config.dropout), nn.Dropout(config.dropout)

    def forward(self, x: torch.Tensor, pad: torch.Tensor | None) -> tuple[torch.Tensor, torch.Tensor]:
        # x (B, k, d); pad (B, k) True where a slot holds no document
        mixed, weights = self.attn(x, x, x, key_padding_mask=pad, need_weights=True, average_attn_weights=False)
        x = self.norm1(x + self.drop1(mixed))
        x = self.norm2(x + self.drop2(self.ff(x)))
        return x, weights  # weights (B, heads, k, k)


class R2Former(nn.Module):
    def __init__(self, config: R2FormerConfig):
        super().__init__()
        self.config = config
        self.inp = nn.Linear(config.n_features, config.d_model)
        self.positions = nn.Embedding(config.k, config.d_model)  # learned, indexed by rank (spec §2.2)
        self.layers = nn.ModuleList(EncoderLayer(config) for _ in range(config.n_layers))
        self.qdm = nn.Linear(config.d_model, 1)
        # trained by the LM loss only: the QDM head branches off before it (spec §2.3)
        self.proj = nn.Linear(config.d_model, config.hidden_size) if config.hidden_size else None

    def forward(self, features: torch.Tensor, pad: torch.Tensor | None = None) -> FormerOutput:
        # features (B, k, 3) → Z (B, k, d)
        k = features.shape[1]
        z = self.inp(features) + self.positions(torch.arange(k, device=features.device))
        maps = []
        for layer in self.layers:
            z, weights = layer(z, pad)
            maps.append(weights)
        logits = self.qdm(z).squeeze(-1)  # (B, k)
        return FormerOutput(hidden=z, logits=logits, attention=torch.stack(maps, dim=1))

    def project(self, hidden: torch.Tensor) -> torch.Tensor:
        """(B, k, d) → (B, k, LLM width): the vectors written into the placeholder slots."""
        if self.proj is None:
            raise CheckpointError("this R2-Former has no projection (it was trained for relevance only)")
        return self.proj(hidden)


def pad_batch(lists: list[torch.Tensor], k: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Lists of (n_i, 3) features, n_i ≤ k → (B, k, 3) zero-padded and the (B, k) padding mask.

    [decide 6] a short list is padded and masked rather than refused: a small pack may hold fewer
    than k chunks; padded slots get no placeholder in the prompt.
    """
    batch = torch.zeros(len(lists), k, lists[0].shape[-1] if lists else len(FEATURE_ORDER))
    pad = torch.ones(len(lists), k, dtype=torch.bool)
    for b, features in enumerate(lists):
        n = min(k, features.shape[0])
        batch[b, :n], pad[b, :n] = features[:n], False
    return batch, pad


@torch.no_grad()
def score(model: R2Former, features: torch.Tensor) -> FormerOutput:
    """Inference on one list (n, 3), n ≤ k: outputs trimmed back to the n real documents."""
    model.eval()
    batch, pad = pad_batch([features], model.config.k)
    out = model(batch, pad)
    n = features.shape[0]
    return FormerOutput(hidden=out.hidden[:, :n], logits=out.logits[:, :n], attention=out.attention[..., :n, :n])
