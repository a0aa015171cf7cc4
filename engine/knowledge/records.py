"""The records of a knowledge pack (DESIGN §5) as frozen dataclasses."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path
from typing import Any

from engine.errors import PackError

QUESTION_TYPES = (
    "factoid",
    "multi_hop",
    "comparison",
    "set",
    "numeric",
    "rule",
    "false_premise",
)
INVALID_QUESTION = "invalid question"

# A pack's name becomes part of folder, file and index names (`finetuned/<name>-…`, `packs/<name>`,
# Chroma collections), so it may hold only characters that are plain in a path on every system.
PACK_NAME = re.compile(r"[A-Za-z0-9](?:[A-Za-z0-9_.-]{0,62}[A-Za-z0-9_-])?")
# Windows opens a device, not a file, for these names, whatever the extension.
RESERVED_NAMES = frozenset({"con", "prn", "aux", "nul",
                            *(f"{port}{n}" for port in ("com", "lpt") for n in range(1, 10))})


def pack_name_problem(name: str) -> str:
    """Why `name` cannot name a pack, or "" when it can: a hostile name must never reach a path (issue 15)."""
    shown = repr(name if len(name) <= 80 else name[:80] + "…")
    if not PACK_NAME.fullmatch(name) or ".." in name:
        return (f"pack name {shown} is not allowed; use 1–64 letters, digits, '-', '_' or '.', starting "
                "with a letter or digit, not ending with '.', without '..' (e.g. 'my-notes')")
    if name.split(".")[0].casefold() in RESERVED_NAMES:
        return f"pack name {shown} is a reserved device name on Windows; choose another (e.g. '{name}-pack')"
    return ""


@dataclass(frozen=True)
class PackInfo:
    """The pack's own description; a PackInfo with an unsafe name cannot exist, so paths built from it are safe."""

    name: str
    title: str = ""
    description: str = ""
    license: str = ""
    temporal: bool = False

    def __post_init__(self) -> None:
        problem = pack_name_problem(self.name)
        if problem:
            raise PackError([problem])


@dataclass(frozen=True)
class Document:
    id: str
    title: str
    text: str
    url: str = ""
    entities: tuple[str, ...] = ()
    # The text splitter that cut this document at ingest ("recursive", "sentence", "tokens"): its bounds
    # were chosen by the user, so retrieval keeps it as one chunk. Empty: our sentence windows chunk it.
    splitter: str = ""


@dataclass(frozen=True)
class Triple:
    head: str
    relation: str
    tail: str
    time: str = ""


@dataclass(frozen=True)
class Rule:
    """head(X, Y) ⇐ X –body[0]→ … –body[-1]→ Y; a body relation `~r` walks an r edge backwards."""

    id: str
    head: str
    body: tuple[str, ...]
    confidence: float
    support: int
    text: str = ""

    def describe(self) -> str:
        """A readable sentence for rule cards and for matching questions against rules."""
        if self.text:
            return self.text
        hops = " then ".join(_relation_words(r) for r in self.body)
        return f"{_relation_words(self.head)}(X, Y) holds when X {hops} Y"


def _relation_words(relation: str) -> str:
    backwards = relation.startswith("~")
    words = relation.lstrip("~").replace("_", " ")
    return f"is the target of {words}" if backwards else words


@dataclass(frozen=True)
class Question:
    id: str
    question: str
    answers: tuple[str, ...]
    type: str
    hops: int = 1
    supporting_docs: tuple[str, ...] = ()
    topic_entities: tuple[str, ...] = ()
    query_time: str = ""
    dynamism: str = ""
    extra: dict[str, Any] = field(default_factory=dict, compare=False)


@dataclass(frozen=True)
class Page:
    id: str
    url: str
    title: str
    html: str
    question_ids: tuple[str, ...] = ()


@dataclass(frozen=True, eq=False)
class Pack:
    """A loaded, validated pack. `path` is empty for packs built in memory (ingestion)."""

    info: PackInfo
    documents: tuple[Document, ...]
    triples: tuple[Triple, ...] = ()
    rules: tuple[Rule, ...] = ()
    questions: tuple[Question, ...] = ()
    pages: tuple[Page, ...] = ()
    path: Path | None = None

    @cached_property
    def documents_by_id(self) -> dict[str, Document]:
        return {d.id: d for d in self.documents}

    @cached_property
    def questions_by_id(self) -> dict[str, Question]:
        return {q.id: q for q in self.questions}

    @cached_property
    def fingerprint(self) -> str:
        """Content hash of the documents: what a text index depends on."""
        digest = hashlib.sha256()
        for doc in self.documents:
            for part in (doc.id, doc.title, doc.text):
                digest.update(part.encode("utf-8"))
                digest.update(b"\x1f")
        return digest.hexdigest()[:16]

    @property
    def relations(self) -> set[str]:
        return {t.relation for t in self.triples}
