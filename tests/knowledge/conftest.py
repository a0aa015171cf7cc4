"""Shared fixtures for knowledge tests: a tiny valid pack written file by file, so tests can break one file."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path

import pytest

TINY_PACK: dict[str, str] = {
    "pack.json": json.dumps({"name": "tiny", "title": "Tiny pack", "license": "CC0"}),
    "documents.jsonl": "\n".join(json.dumps(d) for d in [
        {"id": "curie", "title": "Marie Curie", "text": "Marie Curie was born in Warsaw.",
         "entities": ["Marie Curie", "Warsaw"]},
        {"id": "warsaw", "title": "Warsaw", "text": "Warsaw is the capital of Poland.",
         "url": "https://example.org/warsaw"},
    ]) + "\n",
    "triples.tsv": "# head\trelation\ttail\n"
                   "Marie Curie\tborn_in\tWarsaw\n"
                   "Warsaw\tcapital_of\tPoland\t1596\n"
                   "Marie Curie\tnationality\tPoland\n",
    "rules.jsonl": json.dumps({"id": "r1", "head": "nationality", "body": ["born_in", "capital_of"],
                               "confidence": 0.8, "support": 3}) + "\n",
    "questions.jsonl": json.dumps({"id": "q1", "question": "In which country was Marie Curie born?",
                                   "answers": ["Poland"], "type": "multi_hop", "hops": 2,
                                   "supporting_docs": ["curie", "warsaw"],
                                   "topic_entities": ["Marie Curie"], "source": "handmade"}) + "\n",
    "pages.jsonl": json.dumps({"id": "p1", "url": "https://example.org/curie", "title": "Curie",
                               "html": "<p>Marie Curie</p>", "question_ids": ["q1"]}) + "\n",
}

PackFactory = Callable[..., Path]


@pytest.fixture
def make_pack(tmp_path: Path) -> PackFactory:
    """Write the tiny pack into a new folder; keyword `files` replaces (str/bytes) or drops (None) files."""
    counter = iter(range(1_000))

    def make(files: dict[str, str | bytes | None] | None = None) -> Path:
        folder = tmp_path / f"pack{next(counter)}"
        folder.mkdir()
        for name, content in {**TINY_PACK, **(files or {})}.items():
            if isinstance(content, bytes):
                (folder / name).write_bytes(content)
            elif content is not None:
                (folder / name).write_text(content, encoding="utf-8")
        return folder

    return make
