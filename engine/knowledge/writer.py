"""Write a pack folder atomically: a temp folder beside the target, then one rename."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from engine.disk import raising_disk_full
from engine.errors import PackError
from engine.files import pid_running
from engine.knowledge.records import Pack, Question, Rule


def write_pack(pack: Pack, out: str | Path) -> Path:
    """Write `pack` to `out`, which must not exist yet (nothing is overwritten or half-written)."""
    target = Path(out)
    with staged(target) as folder:
        _write_files(pack, folder)
    return target


# `.NAME.PID.XXXXXXXX` (mkdtemp's 8-character suffix); folders from before the PID was recorded lack it.
_STAGING = re.compile(r"\.(?P<name>.+?)\.(?:(?P<pid>\d+)\.)?[a-z0-9_]{8}")
LEGACY_STAGING_MAX_AGE_S = 3600  # no owner recorded: a write takes seconds, so an hour-old one was killed


@contextmanager
def staged(target: Path) -> Iterator[Path]:
    """A temp folder beside `target` that becomes `target` in one rename if the block succeeds.

    On any error the temp folder is removed, so a pack folder is either complete or absent; one
    left by a killed process is swept at the next write of the same target (issue 15). A full disk
    is DiskFull naming the folder (issue 26).
    """
    check_target(target)
    sweep_staging(target.parent, target.name)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        staging = Path(tempfile.mkdtemp(prefix=f".{target.name}.{os.getpid()}.", dir=target.parent))
    except OSError as exc:
        raise PackError([f"{target}: cannot be created ({exc.strerror or exc})"]) from None
    try:
        with raising_disk_full(target.parent):
            yield staging
            if target.exists():
                target.rmdir()
            os.replace(staging, target)
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise


def check_target(target: Path, *, folder: bool = True) -> None:
    """Fail before any work when `target` cannot be written, so no result is computed only to be lost.

    A folder target must be new or empty; a file target must be new or a regular file; either way the
    nearest existing parent must be a folder this process may write in (missing parents are created).
    """
    try:
        if folder and target.exists() and (not target.is_dir() or any(target.iterdir())):
            raise PackError([f"{target}: already exists; choose a new folder"])
        if not folder and target.is_dir():
            raise PackError([f"{target}: is a folder, not a file; name the file to write inside it"])
        if not folder and target.exists() and not target.is_file():  # the atomic rename would replace a device
            raise PackError([f"{target}: is not a regular file (a device, pipe or socket); name a file to write"])
        parent = next((p for p in (target.parent, *target.parent.parents) if p.exists()), None)
    except OSError as exc:
        raise PackError([f"{target}: cannot be checked ({exc.strerror or exc})"]) from None
    if parent is None or not parent.is_dir():
        raise PackError([f"{target}: cannot be created: {parent or target.parent} is not a folder"])
    if not os.access(parent, os.W_OK | os.X_OK):
        raise PackError([f"{target}: cannot be created: no permission to write in {parent}"])


def is_staging(path: Path) -> bool:
    """Whether `path` is the temp folder of a pack write (complete or not, it is never a pack to load)."""
    return _STAGING.fullmatch(Path(path).name) is not None


def sweep_staging(folder: Path, name: str = "") -> list[Path]:
    """Remove the staging folders in `folder` whose writer is gone; only those of target `name` if given.

    Naming a target keeps the sweep to what this writer could have left, since `folder` may be any
    user folder; the packs folder is swept whole. A folder whose owner still runs is kept.
    """
    removed = []
    try:
        entries = list(folder.iterdir()) if folder.is_dir() else []
    except OSError:
        return removed
    for entry in entries:
        match = _STAGING.fullmatch(entry.name)
        if match is None or (name and match["name"] != name) or entry.is_symlink() or not entry.is_dir():
            continue
        if _abandoned(entry, match["pid"]):
            shutil.rmtree(entry, ignore_errors=True)
            removed.append(entry)
    return removed


def _abandoned(staging: Path, pid: str | None) -> bool:
    if pid is not None:
        return not pid_running(int(pid))
    try:
        return time.time() - staging.stat().st_mtime > LEGACY_STAGING_MAX_AGE_S
    except OSError:
        return False


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
         **({"entities": list(d.entities)} if d.entities else {}),
         **({"splitter": d.splitter} if d.splitter else {})}
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
