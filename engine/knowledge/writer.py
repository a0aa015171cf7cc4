"""Write a pack folder atomically: a temp folder beside the target, then one rename."""

from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.errors import PackError
from engine.knowledge.records import Pack, Question, Rule


def write_pack(pack: Pack, out: str | Path) -> Path:
    """Write `pack` to `out`, which must not exist yet (nothing is overwritten or half-written)."""
    target = Path(out)
    with staged(target) as folder:
        _write_files(pack, folder)
    return target


@contextmanager
def staged(target: Path) -> Iterator[Path]:
    """A temp folder beside `target` that becomes `target` in one rename if the block succeeds.

    On any error the temp folder is removed, so a pack folder is either complete or absent.
    """
    if target.exists() and (not target.is_dir() or any(target.iterdir())):
        raise PackError([f"{target}: already exists; choose a new folder for the pack"])
    target.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.", dir=target.parent))
    try:
        yield staging
        if target.exists():
            target.rmdir()
        os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def copy_pack_files(source: Path, folder: Path, name: str) -> None:
    """Copy the pack at `source` into `folder`, renamed `name` in its pack.json (its other fields are kept).

    Hidden files are left behind: they are temp files of an interrupted write, not part of the pack.
    """
    shutil.copytree(source, folder, dirs_exist_ok=True, ignore=shutil.ignore_patterns(".*"))
    info_path = folder / "pack.json"
    info = json.loads(info_path.read_text(encoding="utf-8"))
    info_path.write_text(json.dumps({**info, "name": name}, ensure_ascii=False, indent=2) + "\n", encoding="utf-8")


def rule_record(rule: Rule) -> dict[str, Any]:
    """One rules.jsonl line's object (DESIGN §5)."""
    return {"id": rule.id, "head": rule.head, "body": list(rule.body), "confidence": rule.confidence,
            "support": rule.support, **({"text": rule.text} if rule.text else {})}


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
        _jsonl(folder / "rules.jsonl", [rule_record(r) for r in pack.rules])
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
