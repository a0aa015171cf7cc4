"""Write a Pack to a folder atomically: a temp folder beside the target, then one rename."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from pathlib import Path

from engine.errors import PackError
from engine.knowledge.records import Pack, Question


def write_pack(pack: Pack, out: str | Path) -> Path:
    """Write `pack` to `out`, which must not exist yet (nothing is overwritten or half-written)."""
    target = Path(out)
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise PackError([f"{target}: already exists; choose a new folder for the pack"])
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        _write_files(pack, staging)
        if target.exists():
            target.rmdir()
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    return target


def _write_files(pack: Pack, folder: Path) -> None:
    info = pack.info
    (folder / "pack.json").write_text(json.dumps({
        "name": info.name, "title": info.title, "description": info.description,
        "license": info.license, "temporal": info.temporal,
    }, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")
    _jsonl(folder / "documents.jsonl", [
        {"id": d.id, "title": d.title, "text": d.text, **({"url": d.url} if d.url else {}),
         **({"entities": list(d.entities)} if d.entities else {})}
        for d in pack.documents
    ])
    if pack.triples:
        lines = ["\t".join([t.head, t.relation, t.tail] + ([t.time] if t.time else []))
                 for t in pack.triples]
        (folder / "triples.tsv").write_text("\n".join(lines) + "\n", encoding="utf-8")
    if pack.rules:
        _jsonl(folder / "rules.jsonl", [
            {"id": r.id, "head": r.head, "body": list(r.body), "confidence": r.confidence,
             "support": r.support, **({"text": r.text} if r.text else {})}
            for r in pack.rules
        ])
    if pack.questions:
        _jsonl(folder / "questions.jsonl", [_question_record(q) for q in pack.questions])
    if pack.pages:
        _jsonl(folder / "pages.jsonl", [
            {"id": p.id, "url": p.url, "title": p.title, "html": p.html,
             "question_ids": list(p.question_ids)}
            for p in pack.pages
        ])


def _question_record(q: Question) -> dict:
    record = {"id": q.id, "question": q.question, "answers": list(q.answers), "type": q.type,
              "hops": q.hops, "supporting_docs": list(q.supporting_docs),
              "topic_entities": list(q.topic_entities)}
    if q.query_time:
        record["query_time"] = q.query_time
    if q.dynamism:
        record["dynamism"] = q.dynamism
    return {**q.extra, **record}


def _jsonl(path: Path, records: list[dict]) -> None:
    with path.open("w", encoding="utf-8") as handle:
        for record in records:
            handle.write(json.dumps(record, ensure_ascii=False) + "\n")
