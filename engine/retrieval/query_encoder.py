"""Dense retrieval with a fine-tuned query encoder over the unchanged index (RuleRAG-FT, spec §2 RGFT).

RGFT trains only the query side, with the document encoder frozen, so the Chroma index built by the
base embedder stays valid: documents keep their base vectors and only queries are encoded by the
fine-tuned copy. A trained encoder lives in `<home>/finetuned/<pack key>-<embedder id>/` with a
`manifest.json` written by `engine.methods.rulerag.training`.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from langchain_core.callbacks import CallbackManagerForRetrieverRun
from langchain_core.documents import Document as LcDocument

from engine.cache import Registry
from engine.codec import loads_bounded
from engine.errors import UnknownNameError
from engine.retrieval.embedder import Embedder
from engine.retrieval.retrievers import DenseRetriever, as_document
from engine.settings import Settings

FINETUNED_RETRIEVER = "dense-ft"
MANIFEST = "manifest.json"


@dataclass(frozen=True)
class QueryEncoderManifest:
    """What a trained query encoder was trained on and how well it did on held-out questions."""

    pack_name: str
    pack_key: str
    pack_fingerprint: str
    base_embedder: str
    pairs: int
    train_pairs: int
    heldout_pairs: int
    epochs: int
    steps: int
    seconds: float
    metrics: dict[str, float] = field(default_factory=dict)
    config: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(asdict(self), indent=2, sort_keys=True)

    @classmethod
    def from_json(cls, text: str, where: str = MANIFEST) -> QueryEncoderManifest:
        """`where` names the file in messages (`where:line: problem`)."""
        data = loads_bounded(text, where)
        known = {f for f in cls.__dataclass_fields__}
        return cls(**{k: v for k, v in data.items() if k in known})  # unknown keys are tolerated


def finetuned_dir(settings: Settings, pack_key: str, embedder_id: str) -> Path:
    return settings.finetuned / f"{pack_key}-{embedder_id}"


def read_manifest(folder: Path) -> QueryEncoderManifest | None:
    path = Path(folder) / MANIFEST
    return QueryEncoderManifest.from_json(path.read_text(encoding="utf-8"), str(path)) if path.is_file() else None


_ENCODERS: Registry[tuple[str, str], Embedder] = Registry()


def load_query_encoder(settings: Settings, pack_key: str, embedder_id: str, pack_path: str = "") -> Embedder:
    """The trained query encoder for this pack and base embedder; a clear error when there is none.

    Cached per folder and manifest content, so retraining in the same process is picked up.
    """
    folder = finetuned_dir(settings, pack_key, embedder_id)
    manifest = folder / MANIFEST
    if not manifest.is_file():
        pack_arg = pack_path or "PACK"
        raise UnknownNameError(
            f"retriever {FINETUNED_RETRIEVER!r} needs a fine-tuned query encoder for pack {pack_key!r} and "
            f"embedder {embedder_id!r}, and there is none in {folder}; "
            f"run `python -m engine train-retriever --pack {pack_arg}` first")
    key = (str(folder.resolve()), hashlib.sha256(manifest.read_bytes()).hexdigest())
    return _ENCODERS.get(key, lambda: Embedder(folder))


class FinetunedDenseRetriever(DenseRetriever):
    """`DenseRetriever` whose `embedder` is the fine-tuned query encoder; `index` embeds with the base."""

    def _get_relevant_documents(
        self, query: str, *, run_manager: CallbackManagerForRetrieverRun
    ) -> list[LcDocument]:
        vector = self.embedder.encode_queries([query])[0]
        return [as_document(self.chunks[cid], score, rank, FINETUNED_RETRIEVER)
                for rank, (cid, score) in enumerate(self.index.query(vector, self.k), start=1)
                if cid in self.chunks]
