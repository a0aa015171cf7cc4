"""Split documents into sentence-aligned chunks with stable ids and content hashes."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass

from engine.knowledge.records import Document
from engine.text import split_sentences


@dataclass(frozen=True)
class ChunkingConfig:
    """Chunks hold whole sentences up to `max_words`; `overlap_sentences` repeat across chunks."""

    max_words: int = 120
    overlap_sentences: int = 1

    @property
    def key(self) -> str:
        return f"s{self.max_words}o{self.overlap_sentences}"


@dataclass(frozen=True)
class Chunk:
    id: str  # "<doc id>#<index>": stable while the document keeps its id
    doc_id: str
    title: str
    text: str
    index: int
    hash: str  # content hash: the index re-embeds a chunk only when this changes


def chunk_document(doc: Document, config: ChunkingConfig = ChunkingConfig()) -> list[Chunk]:
    if doc.splitter:  # cut at ingest by a splitter the user chose: its size is the chunk size
        return [_chunk(doc, 0, doc.text.strip() or doc.title)]
    sentences = split_sentences(doc.text) or [doc.text.strip() or doc.title]
    windows: list[list[str]] = []
    current: list[str] = []
    for sentence in sentences:
        words = sum(len(s.split()) for s in current) + len(sentence.split())
        if current and words > config.max_words:
            windows.append(current)
            current = current[-config.overlap_sentences:] if config.overlap_sentences else []
            if sum(len(s.split()) for s in current) + len(sentence.split()) > config.max_words:
                current = []
        current.append(sentence)
    windows.append(current)
    return [_chunk(doc, i, " ".join(w)) for i, w in enumerate(windows)]


def chunk_documents(docs: Iterable[Document], config: ChunkingConfig = ChunkingConfig()) -> list[Chunk]:
    return [chunk for doc in docs for chunk in chunk_document(doc, config)]


def _chunk(doc: Document, index: int, text: str) -> Chunk:
    digest = hashlib.sha256(f"{doc.title}\x1f{text}".encode()).hexdigest()[:16]
    return Chunk(id=f"{doc.id}#{index}", doc_id=doc.id, title=doc.title, text=text, index=index,
                 hash=digest)
