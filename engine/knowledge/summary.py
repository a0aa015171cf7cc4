"""What a pack holds, counted once: the Knowledge page's overview table reads these rows."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from engine.knowledge.chunking import ChunkingConfig, chunk_documents
from engine.knowledge.records import QUESTION_TYPES, Pack


@dataclass(frozen=True)
class PackSummary:
    """Counts of one pack; `question_types` lists (type, count) in the pack format's type order."""

    name: str
    title: str
    documents: int
    chunks: int
    triples: int
    rules: int
    questions: int
    question_types: tuple[tuple[str, int], ...]
    pages: int
    problem: str = ""  # set instead of counts when the pack does not load

    def row(self) -> dict[str, Any]:
        """One table row; a pack that did not load shows its problem instead of counts."""
        types = ", ".join(f"{t} {n}" for t, n in self.question_types)
        return {"pack": self.name, "title": self.title, "documents": self.documents, "chunks": self.chunks,
                "triples": self.triples, "rules": self.rules, "pages": self.pages, "questions": self.questions,
                "question types": types or ("—" if not self.problem else ""), "problem": self.problem}


def summarize_pack(pack: Pack, chunking: ChunkingConfig = ChunkingConfig()) -> PackSummary:
    """Count documents, chunks (as the index will cut them), triples, rules, questions by type, pages."""
    by_type = Counter(q.type for q in pack.questions)
    # Known types first in the format's order, then any others a dataset brought along.
    ordered = [t for t in QUESTION_TYPES if by_type[t]] + sorted(t for t in by_type if t not in QUESTION_TYPES)
    return PackSummary(
        name=pack.info.name, title=pack.info.title or pack.info.name,
        documents=len(pack.documents), chunks=len(chunk_documents(pack.documents, chunking)),
        triples=len(pack.triples), rules=len(pack.rules), questions=len(pack.questions),
        question_types=tuple((t, by_type[t]) for t in ordered), pages=len(pack.pages),
    )


def unloadable_pack(name: str, problem: str) -> PackSummary:
    """A row for a pack folder that does not load, so one bad pack does not hide the others."""
    first = problem.strip().splitlines()[0] if problem.strip() else "does not load"
    return PackSummary(name=name, title="", documents=0, chunks=0, triples=0, rules=0, questions=0,
                       question_types=(), pages=0, problem=first)
