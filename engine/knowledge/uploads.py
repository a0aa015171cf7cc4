"""Build a pack from files uploaded in the browser: safe names, size limits, all-or-nothing writing.

Uploads are untrusted: a file name may carry a folder path (`../../x.md`), control characters or
a hidden-file dot, and a body may be any size. Names are sanitised or refused, files are written
only inside a fresh temp folder, and the pack is ingested and written atomically (DESIGN §5, §12):
on any problem nothing appears under the packs folder.
"""

from __future__ import annotations

import os
import re
import shutil
import tempfile
import unicodedata
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from engine.errors import IngestError, PackError
from engine.knowledge.ingest import DEFAULT_OPTIONS, READERS, IngestOptions, ingest_paths
from engine.knowledge.loader import load_pack
from engine.knowledge.records import pack_name_problem as _name_problem
from engine.knowledge.writer import write_pack

ALLOWED_SUFFIXES = (".txt", ".md", ".html", ".htm", ".pdf", ".jsonl", ".tsv", ".csv", ".json")
MAX_UPLOAD_MB = 25
MAX_UPLOAD_BYTES = MAX_UPLOAD_MB * 1_000_000
MAX_UPLOADS_BYTES = 8 * MAX_UPLOAD_BYTES  # all files of one pack together
# File systems limit a name to 255 bytes, not characters: 119 CJK characters are 357 bytes and
# crashed the upload (issue 15). The margin leaves room for the "-2" that keeps names distinct.
MAX_NAME_BYTES = 200
_UNSAFE_CHARS = re.compile(r"[^\w.\- ()]+")
Progress = Callable[[float, str], None]

# .json has no reader of its own: it is read only with a JSON path (IngestOptions.json_path).
assert set(ALLOWED_SUFFIXES) - {".json"} <= set(READERS), "every allowed upload type needs an ingest reader"


@dataclass(frozen=True)
class Upload:
    """One uploaded file as the browser sent it: its claimed name and its bytes."""

    name: str
    data: bytes


def pack_name_problem(name: str, existing: Iterable[str]) -> str:
    """Why `name` cannot name a new pack folder, or "" when it can."""
    if not name.strip():
        return "the pack name is empty; give one such as 'my-notes'"
    unsafe = _name_problem(name)  # the one rule for names that reach paths (engine.knowledge.records)
    if unsafe:
        return unsafe
    # Case-insensitive: 'Demo' beside 'demo' would be two packs a user cannot tell apart.
    taken = {e.casefold() for e in existing}
    if name.casefold() in taken:
        return f"a pack named {name!r} already exists; choose another name"
    return ""


def safe_file_name(name: str) -> str:
    """A plain file name for `name`; raises ValueError when the name tries to leave its folder."""
    if "\x00" in name or "/" in name or "\\" in name or name.strip() in ("", ".", ".."):
        raise ValueError(f"file name {name!r} contains a folder path or is empty; upload the file itself")
    cleaned = unicodedata.normalize("NFC", name)
    cleaned = "".join(c for c in cleaned if unicodedata.category(c)[0] != "C")  # control characters
    cleaned = _UNSAFE_CHARS.sub("_", cleaned).strip(" ")
    stem, dot, ext = cleaned.rpartition(".")
    stem, suffix = (stem, dot + ext) if dot else (ext, "")  # rpartition puts a dotless name in `ext`
    stem = stem.strip(" .") or "upload"  # a leading dot would hide the file from folder walks
    suffix = suffix.lower()
    room = MAX_NAME_BYTES - len(suffix.encode())
    if room < len("upload"):  # a "suffix" this long is part of the name, not a file type
        stem, suffix, room = stem + suffix, "", MAX_NAME_BYTES
    # Cut at a character boundary: a cut inside a multi-byte character is dropped whole.
    return stem.encode()[:room].decode(errors="ignore").rstrip(" .") + suffix


def upload_problem(upload: Upload, max_bytes: int = MAX_UPLOAD_BYTES) -> str:
    """Why one upload is refused before anything is written, or "" when it is acceptable."""
    try:
        name = safe_file_name(upload.name)
    except ValueError as exc:
        return str(exc)
    suffix = os.path.splitext(name)[1]
    if suffix not in ALLOWED_SUFFIXES:
        return (f"{upload.name}: unsupported file type {suffix or '(no suffix)'!r}; "
                f"allowed: {', '.join(ALLOWED_SUFFIXES)}")
    if len(upload.data) > max_bytes:
        return f"{upload.name}: {len(upload.data):,} bytes is over the limit of {max_bytes:,} bytes"
    if not upload.data:
        return f"{upload.name}: the file is empty"
    return ""


def save_uploads(uploads: Sequence[Upload], folder: Path, max_bytes: int = MAX_UPLOAD_BYTES,
                 max_total_bytes: int = MAX_UPLOADS_BYTES) -> list[Path]:
    """Write acceptable uploads into `folder` under safe, distinct names; IngestError lists every refusal."""
    problems = [p for p in (upload_problem(u, max_bytes) for u in uploads) if p]
    if not uploads:
        problems.append(f"no files uploaded; add at least one file ({', '.join(ALLOWED_SUFFIXES)})")
    total = sum(len(u.data) for u in uploads)
    if total > max_total_bytes:
        problems.append(f"{len(uploads)} files hold {total:,} bytes, over the limit of {max_total_bytes:,} "
                        "bytes for one pack; upload fewer files")
    if problems:
        raise IngestError(problems)
    root = folder.resolve()
    used: set[str] = set()
    paths = []
    for upload in uploads:
        path = root / _distinct(safe_file_name(upload.name), used)
        if path.parent != root:  # belt and braces: sanitising above already removed separators
            raise IngestError([f"{upload.name}: refused, it would be written outside the upload folder"])
        with path.open("xb") as handle:  # "x": never overwrite, even on a name collision we missed
            handle.write(upload.data)
        paths.append(path)
    return paths


def _distinct(name: str, used: set[str]) -> str:
    """`notes.md`, then `notes-2.md`: two uploads that sanitise alike must not overwrite each other."""
    stem, suffix = os.path.splitext(name)
    candidate, n = name, 2
    while candidate.casefold() in used:
        candidate, n = f"{stem}-{n}{suffix}", n + 1
    used.add(candidate.casefold())
    return candidate


def build_pack_from_uploads(uploads: Sequence[Upload], name: str, packs_dir: Path, existing: Iterable[str],
                            max_bytes: int = MAX_UPLOAD_BYTES, progress: Progress | None = None,
                            max_total_bytes: int = MAX_UPLOADS_BYTES,
                            options: IngestOptions = DEFAULT_OPTIONS) -> Path:
    """Check, save, ingest and write `uploads` as pack `name` under `packs_dir`; returns the new folder.

    Raises IngestError/PackError listing every problem; in that case nothing is left under `packs_dir`.
    """
    report = progress or (lambda fraction, message: None)
    problem = pack_name_problem(name, [*existing, *_folders(packs_dir)])
    if problem:
        raise IngestError([problem])
    report(0.1, f"Checking {len(uploads)} file(s)…")
    with tempfile.TemporaryDirectory(prefix="ragscope-upload-") as tmp:
        folder = Path(tmp)
        paths = save_uploads(uploads, folder, max_bytes, max_total_bytes)
        report(0.3, f"Reading {len(paths)} file(s)…")
        try:
            pack = ingest_paths(paths, name, max_bytes, max_total_bytes, options)
        except IngestError as exc:
            # Messages name the temp copy; the user knows the file by its own name.
            raise IngestError([p.replace(str(folder.resolve()) + os.sep, "") for p in exc.problems]) from None
    report(0.7, f"Writing {len(pack.documents)} document(s)…")
    target = write_pack(pack, packs_dir / name)
    report(0.9, "Checking the written pack…")
    try:
        load_pack(target)
    except PackError:
        shutil.rmtree(target, ignore_errors=True)  # a pack that does not load must not reach the sidebar
        raise
    report(1.0, "Done")
    return target


def _folders(packs_dir: Path) -> list[str]:
    return [p.name for p in packs_dir.iterdir()] if packs_dir.is_dir() else []
