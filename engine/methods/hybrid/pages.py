"""Web page processing (spec §2.1-2.2): HTML → main text chunks of 3 sentences and Markdown tables, ranked.

Decisions on the spec's §8 items that live here:
- 1: the cap is in characters (200, as [C]); a longer sentence is split into consecutive pieces, not cut,
  each ending at the last space before the cap ([C] cut inside words: 'Buzz Al' + 'drin', issue 27).
- 2: a question sentence absorbs the sentences after it up to the cap (at least one, cut to the cap);
  absorbed sentences are not kept again as units, so no text is duplicated.
- chunks are de-duplicated by text keeping their order ([C]'s set lost the order for no gain).
- 6: tables are ranked [decide]: MiniLM cosine of the question to the table's page name, caption, header
  and first rows; best first into the block until `max_table_chars`, the table that crosses the cap
  is cut there, the rest never reach the reasoner (shown as such).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from engine.cache import LruCache
from engine.knowledge.html import html_to_content
from engine.knowledge.records import Document, Page
from engine.retrieval.embedder import Embedder
from engine.retrieval.index import WRITE_BATCHES
from engine.retrieval.vector_store import VectorStore, text_key
from engine.text import split_sentences
from engine.tools.offline_reader.sentences import MAX_SENTENCE_CHARS

SENTENCE_CAP = 200
PER_CHUNK = 3
TABLE_PREVIEW_ROWS = 3
# spec §2.1.4 [P]: plain prefix matching, no word boundary ("Isabel…" counts), as the paper does
QUESTION_STARTS = ("who", "what", "when", "where", "why", "how", "is", "can", "does", "do", "did", "will",
                   "would", "could", "should", "are", "was", "were", "has", "have", "had", "which", "whom",
                   "whose")
_TABLE_LINE = re.compile(r"^\s*(?:\|.*\||Table: .*)\s*$")
_VECTOR_CACHE = 8192


@dataclass(frozen=True)
class Unit:
    """One sentence unit before grouping; `kind` names the rule that made it (spec §6 step 2)."""

    text: str
    kind: str  # sentence | split_piece | question+cont


@dataclass(frozen=True)
class PageChunk:
    id: str
    source: str  # page or document id
    title: str
    text: str
    kind: str  # group3 | split_piece | question+cont (the most special rule among its units)
    origin: str  # page | document


@dataclass(frozen=True)
class PageTable:
    id: str
    source: str
    title: str
    markdown: str  # with the 'Page name:' prefix of spec §2.1.6
    header: tuple[str, ...]
    rows: tuple[tuple[str, ...], ...]

    @property
    def preview(self) -> str:
        rows = "; ".join(", ".join(r) for r in self.rows[:TABLE_PREVIEW_ROWS])
        return f"{self.title}. {' '.join(self.header)}. {rows}"

    def row_sentences(self) -> tuple[str, ...]:
        """Each row as 'header: value' pairs, so a sentence reader can use a table."""
        return tuple(f"{self.title} — " + "; ".join(f"{h}: {v}" for h, v in zip(self.header, row) if v) + "."
                     for row in self.rows)


@dataclass(frozen=True)
class RankedTable:
    table: PageTable
    score: float
    in_prompt: bool
    cut_at: int | None = None  # characters of the markdown kept when the cap cut this table


# ---- extraction ---------------------------------------------------------------------------------------


def is_question(sentence: str) -> bool:
    low = sentence.strip().lower()
    return low.endswith("?") or low.startswith(QUESTION_STARTS)


def sentence_units(text: str, cap: int = SENTENCE_CAP) -> list[Unit]:
    sentences = split_sentences(text, MAX_SENTENCE_CHARS)
    units: list[Unit] = []
    i = 0
    while i < len(sentences):
        sentence = sentences[i]
        if is_question(sentence) and i + 1 < len(sentences):
            # FAQ pages answer right after the question (spec §2.1.4): keep them together
            j, cont, used = i + 1, [], 0
            while j < len(sentences) and used + len(sentences[j]) <= cap:
                cont.append(sentences[j])
                used += len(sentences[j])
                j += 1
            if not cont:
                cont, j = [pieces(sentences[j], cap)[0]], j + 1
            units.append(Unit(" ".join([pieces(sentence, cap)[0], *cont]), "question+cont"))
            i = j
            continue
        if len(sentence) > cap:
            units += [Unit(piece, "split_piece") for piece in pieces(sentence, cap)]
        else:
            units.append(Unit(sentence, "sentence"))
        i += 1
    return units


def pieces(sentence: str, cap: int) -> list[str]:
    """Consecutive pieces of at most `cap` characters, each cut at the last space before the cap (inside a
    word only when a word is longer than the cap): a cut inside a name made the reader answer 'Buzz Al'."""
    found = []
    rest = sentence.strip()
    while len(rest) > cap:
        cut = rest.rfind(" ", 1, cap + 1)
        cut = cut if cut > 0 else cap
        found.append(rest[:cut].rstrip())
        rest = rest[cut:].lstrip()
    return [*found, rest] if rest else found


def group_units(source: str, title: str, units: Sequence[Unit], origin: str,
                per_chunk: int = PER_CHUNK) -> tuple[PageChunk, ...]:
    chunks = []
    for n in range(0, len(units), per_chunk):
        group = units[n:n + per_chunk]
        kinds = {u.kind for u in group}
        kind = next((k for k in ("question+cont", "split_piece") if k in kinds), "group3")
        chunks.append(PageChunk(f"{source}#c{n // per_chunk}", source, title, " ".join(u.text for u in group),
                                kind, origin))
    return tuple(chunks)


@dataclass(frozen=True)
class PageParts:
    chunks: tuple[PageChunk, ...]
    tables: tuple[PageTable, ...]


def page_parts(page: Page, cap: int = SENTENCE_CAP) -> PageParts:
    return _page_parts(page.id, page.title, page.html, cap)


@lru_cache(maxsize=256)
def _page_parts(page_id: str, title: str, html: str, cap: int) -> PageParts:
    """Cached per page content: the same pages come back for many questions."""
    content = html_to_content(html)
    name = title or content.title or page_id
    # html.py inlines each table's Markdown into the text; tables travel separately here (spec §2.1.6)
    text = "\n".join(line for line in content.text.splitlines() if not _TABLE_LINE.match(line))
    text = "\n".join(line for line in text.splitlines() if not line.startswith("#"))
    chunks = group_units(page_id, name, sentence_units(text, cap), "page")
    tables = tuple(
        PageTable(f"{page_id}#t{n}", page_id, name, f"Page name: {name}\n{t.markdown}", t.header, t.rows)
        for n, t in enumerate(content.tables) if t.rows and any(any(c.strip("-| ") for c in r) for r in t.rows)
    )
    return PageParts(chunks, tables)


def document_chunks(doc: Document, cap: int = SENTENCE_CAP) -> tuple[PageChunk, ...]:
    return group_units(doc.id, doc.title, sentence_units(doc.text, cap), "document")


def dedupe(chunks: Sequence[PageChunk]) -> list[PageChunk]:
    seen: set[str] = set()
    kept = []
    for chunk in chunks:
        key = " ".join(chunk.text.lower().split())
        if key not in seen:
            seen.add(key)
            kept.append(chunk)
    return kept


# ---- ranking ------------------------------------------------------------------------------------------


class TextVectors:
    """MiniLM vectors of chunk and table texts: an in-process LRU in front of a persistent store.

    Issue 16: pages recur across questions and processes, so a text is embedded once and kept by its
    content hash; a store that fails only costs encoding (`problem` says why).
    """

    def __init__(self, embedder: Embedder, store: VectorStore | None = None):
        self.embedder = embedder
        self.store = store
        self._memory: LruCache[str, np.ndarray] = LruCache(_VECTOR_CACHE)

    @property
    def problem(self) -> str:
        return self.store.problem if self.store else ""

    def encode(self, texts: Sequence[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, 1), dtype=np.float32)
        keys = [text_key(t) for t in texts]
        by_key = dict(zip(keys, texts))
        return np.stack(self._memory.get_many(keys, lambda missing: self._fetch(missing, by_key)))

    def _fetch(self, keys: list[str], texts: dict[str, str]) -> list[np.ndarray]:
        """Vectors not in memory: read from the store, else embedded and stored a few batches at a time."""
        found = self.store.read(keys) if self.store else {}
        todo = [k for k in keys if k not in found]
        size = self.embedder.batch_size * WRITE_BATCHES  # each batch stored as soon as it is embedded
        for start in range(0, len(todo), size):
            batch = todo[start:start + size]
            vectors = self.embedder.encode([texts[k] for k in batch])
            found.update(zip(batch, vectors))
            if self.store:
                self.store.write(batch, vectors)
        return [found[k] for k in keys]


def rank_chunks(question: str, chunks: Sequence[PageChunk], vectors: TextVectors,
                k: int) -> list[tuple[PageChunk, float]]:
    """Top-k chunks by cosine (spec §2.2: no reranker, no BM25); ties keep the page order."""
    if not chunks:
        return []
    query = vectors.embedder.encode_queries([question])[0]
    scores = vectors.encode([c.text for c in chunks]) @ query  # (n,)
    order = sorted(range(len(chunks)), key=lambda i: (-float(scores[i]), i))[:k]
    return [(chunks[i], round(float(scores[i]), 4)) for i in order]


def rank_tables(question: str, tables: Sequence[PageTable], vectors: TextVectors,
                max_chars: int) -> list[RankedTable]:
    if not tables:
        return []
    query = vectors.embedder.encode_queries([question])[0]
    scores = vectors.encode([t.preview for t in tables]) @ query
    order = sorted(range(len(tables)), key=lambda i: (-float(scores[i]), i))
    ranked, used = [], 0
    for i in order:
        table, score = tables[i], round(float(scores[i]), 4)
        left = max_chars - used
        if left <= 0:
            ranked.append(RankedTable(table, score, False))
            continue
        cut = left if len(table.markdown) > left else None
        ranked.append(RankedTable(table, score, True, cut))
        used += min(len(table.markdown), left)
    return ranked


def tables_block(ranked: Sequence[RankedTable]) -> str:
    """U3 of the reasoning prompt: '### Table i:' entries, cut where the cap cut them."""
    kept = [r for r in ranked if r.in_prompt]
    return "\n".join(f"### Table {n}:\n{r.table.markdown[:r.cut_at] if r.cut_at else r.table.markdown}"
                     for n, r in enumerate(kept, start=1))
