"""One typed settings object read from RAGSCOPE_* environment variables (DESIGN §7)."""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
DEMO_PACK = REPO_ROOT / "assets" / "packs" / "demo"


def env_seconds(name: str) -> tuple[str, float | None]:
    """The variable's text and its value as a number of seconds, None when it is not a finite number above 0
    (each caller says what a bad one means where it reads it: a warning, or an error naming the variable)."""
    text = os.environ.get(name, "").strip()
    try:
        seconds = float(text)
    except ValueError:
        return text, None
    return text, seconds if 0 < seconds < float("inf") else None


def _default_home() -> Path:
    return Path(os.environ.get("RAGSCOPE_HOME", Path.home() / ".ragscope")).expanduser()


@dataclass(frozen=True)
class Settings:
    """Where data lives and which encoder indexes it; the UI edits a session copy."""

    home: Path = field(default_factory=_default_home)
    embedder: str = field(default_factory=lambda: os.environ.get("RAGSCOPE_EMBEDDER", ""))
    chroma_url: str = field(default_factory=lambda: os.environ.get("RAGSCOPE_CHROMA_URL", ""))
    max_question_chars: int = 2000

    @property
    def index_dir(self) -> Path:
        return self.home / "chroma"

    @property
    def packs(self) -> Path:
        """Packs built in the app (uploads, mined-rule copies) and by `ingest`, beside the bundled ones."""
        return self.home / "packs"

    @property
    def methods(self) -> Path:
        """The user's own methods, one file each (engine.methods.plugins)."""
        return self.home / "methods"

    @property
    def retrievers(self) -> Path:
        """The user's own LangChain retrievers, one factory file each (engine.retrieval.user)."""
        return self.home / "retrievers"

    @property
    def bm25(self) -> Path:
        """The BM25 indexes, beside the Chroma one (engine.retrieval.sparse)."""
        return self.home / "bm25"

    @property
    def finetuned(self) -> Path:
        """RuleRAG-FT's fine-tuned query encoders, one folder per pack and embedder (`train-retriever`)."""
        return self.home / "finetuned"

    @property
    def r2ag(self) -> Path:
        """Trained R2-Former checkpoints (`train-r2ag`), laid out as the shipped ones in assets/r2ag/."""
        return self.home / "r2ag"

    @property
    def runs_db(self) -> Path:
        return self.home / "runs.sqlite3"

    @property
    def evaluations(self) -> Path:
        """One folder per evaluation started in the app (engine.evaluation.journal)."""
        return self.home / "evaluations"

    @property
    def model_cache(self) -> Path:
        """GGUF files converted once into transformers' format (engine/llm/gguf.py): loads in a second after."""
        return Path(os.environ.get("RAGSCOPE_MODEL_CACHE") or self.home / "models").expanduser()

    @property
    def backends_file(self) -> Path:
        """The model servers and local models set up on the Models page, kept across reloads."""
        return self.home / "backends.json"


def offline_environment() -> None:
    """Make every library we use stay off the network unless the user points a backend at a server."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_TELEMETRY", "1")
    os.environ.setdefault("ANONYMIZED_TELEMETRY", "False")
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
