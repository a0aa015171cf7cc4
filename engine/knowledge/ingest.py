"""Turn files (text, Markdown, HTML, PDF, document JSONL, TSV/CSV triples) into an in-memory Pack."""

from __future__ import annotations

import csv
import io
import logging
import os
import re
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bs4.dammit import UnicodeDammit

from engine.errors import IngestError
from engine.knowledge.chunking import split_sentences
from engine.knowledge.html import html_to_content
# The loader's record checks are reused so an uploaded documents.jsonl is judged exactly like a pack's.
from engine.knowledge.loader import (
    DOCUMENT_FIELDS,
    MAX_LINE_CHARS,
    Problems,
    document_from_record,
    parse_records,
)
from engine.knowledge.records import Document, Pack, PackInfo, Page, Triple

log = logging.getLogger(__name__)

MAX_WORDS_PER_DOCUMENT = 250
_HEADING = re.compile(r"^ {0,3}(#{1,6})\s+(.*?)\s*#*\s*$")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_TABLE_RULE = re.compile(r"^\|(?: *:?-{3,}:? *\|)+$")
_TRIPLE_HEADER = (["head", "relation", "tail"], ["head", "relation", "tail", "time"])
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class Source:
    """One file handed to a reader: where it is, how to name it in messages, and its bytes."""

    path: Path
    label: str
    data: bytes


@dataclass(frozen=True)
class Part:
    """A document before it has an id; `id` is set only when the file chose it (.jsonl)."""

    title: str
    text: str
    id: str = ""
    url: str = ""
    entities: tuple[str, ...] = ()


@dataclass(frozen=True)
class FileResult:
    """What one file contributed; `problems` non-empty means the file contributes nothing."""

    parts: tuple[Part, ...] = ()
    triples: tuple[Triple, ...] = ()
    page: Page | None = None  # raw HTML kept for the hybrid method (DESIGN §5, pages.jsonl)
    problems: tuple[str, ...] = ()


Reader = Callable[[Source], FileResult]
READERS: dict[str, Reader] = {}


def reader(*suffixes: str) -> Callable[[Reader], Reader]:
    """Register a reader for file suffixes (lower case, with the dot)."""
    def register(function: Reader) -> Reader:
        for suffix in suffixes:
            READERS[suffix] = function
        return function
    return register


def ingest_paths(paths: Sequence[Path], name: str, max_bytes: int = 50_000_000) -> Pack:
    """Read files and folders (recursively, sorted) into a Pack; raise IngestError with every problem."""
    files, problems = _expand(paths)
    if not name.strip():
        problems.insert(0, "pack name is empty; give the pack a name such as 'my-notes'")
    results = [_read(file, label, max_bytes) for file, label in files]
    problems.extend(p for result in results for p in result.problems)
    documents, pages, id_problems = _assign_ids([(label, r) for (_, label), r in zip(files, results)])
    problems.extend(id_problems)
    if not documents and not problems:
        shown = ", ".join(label for _, label in files) or "nothing"
        problems.append(f"no documents found in {shown}; a pack needs at least one document "
                        f"(allowed: {', '.join(sorted(READERS))}; .tsv/.csv give triples only)")
    if problems:
        raise IngestError(problems)
    log.info("ingested %d file(s) into %d document(s) for pack %r", len(files), len(documents), name)
    return Pack(
        info=PackInfo(name=name, title=name,
                      description=f"Ingested from {len(files)} file(s)."),
        documents=tuple(documents),
        triples=tuple(t for r in results for t in r.triples),
        pages=tuple(pages),
    )


# --- files ------------------------------------------------------------------------------------

def _expand(paths: Sequence[Path]) -> tuple[list[tuple[Path, str]], list[str]]:
    """Files to read, each with the label used in messages, and the paths that do not exist."""
    files: list[tuple[Path, str]] = []
    problems: list[str] = []
    seen: set[Path] = set()
    if not paths:
        problems.append("no files given; pass files or folders to ingest")
    for given in map(Path, paths):
        if not given.exists():
            problems.append(f"{given}: no such file or folder")
            continue
        found = _walk_folder(given) if given.is_dir() else [given]
        for file in found:
            if file.resolve() not in seen:  # the same file named twice is read once
                seen.add(file.resolve())
                files.append((file, str(file)))
    return files, problems


def _walk_folder(folder: Path) -> list[Path]:
    found: list[Path] = []
    # Hidden files and folders (.git, .DS_Store) are tool litter, not content.
    for root, dirs, names in os.walk(folder):
        dirs[:] = sorted(d for d in dirs if not d.startswith("."))
        found.extend(Path(root) / n for n in sorted(names) if not n.startswith("."))
    return found


def _read(file: Path, label: str, max_bytes: int) -> FileResult:
    read = READERS.get(file.suffix.lower())
    if read is None:
        allowed = ", ".join(sorted(READERS))
        return _fail(label, f"unsupported file type {file.suffix or '(no suffix)'!r}; allowed: {allowed}")
    try:
        size = file.stat().st_size
        if size > max_bytes:
            return _fail(label, f"{size:,} bytes is over the limit of {max_bytes:,} bytes; "
                                "split the file or raise the limit")
        data = file.read_bytes()
    except OSError as exc:
        return _fail(label, f"cannot be read ({exc.strerror or exc})")
    return read(Source(path=file, label=label, data=data))


def _fail(label: str, message: str) -> FileResult:
    return FileResult(problems=(f"{label}: {message}",))


def _decode_text(source: Source) -> str | FileResult:
    """UTF-8 text (a BOM is fine), or a failure saying what the file really is."""
    if b"\x00" in source.data[:8192]:
        return _fail(source.label, "looks like a binary file, not text; check the file and its suffix")
    try:
        return source.data.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        line = source.data[:exc.start].count(b"\n") + 1
        return _fail(f"{source.label}:{line}", f"not UTF-8 text ({exc.reason} at byte {exc.start}); "
                                               "save the file as UTF-8")


# --- splitting text into paragraph-ish documents ---------------------------------------------

def split_text(title: str, text: str, max_words: int = MAX_WORDS_PER_DOCUMENT) -> list[tuple[str, str]]:
    """Split at blank lines and headings into (title, text) parts of at most `max_words` words.

    One part keeps `title`; several are titled "Title (part n)".
    """
    parts: list[list[str]] = []
    words = 0
    for block in _blocks(text):
        size = len(block.split())
        # Start a new part at a heading once the current one is reasonably full, else when it overflows.
        at_heading = bool(_HEADING.match(block.split("\n", 1)[0])) and words >= max_words // 2
        if parts and parts[-1] and (words + size > max_words or at_heading):
            parts.append([])
            words = 0
        if not parts:
            parts.append([])
        if size > max_words:
            pieces = _split_block(block, max_words)
            parts[-1].append(pieces[0])
            parts.extend([piece] for piece in pieces[1:])
            words = len(pieces[-1].split())
            continue
        parts[-1].append(block)
        words += size
    texts = ["\n\n".join(p) for p in parts if p]
    if len(texts) == 1:
        return [(title, texts[0])]
    return [(f"{title} (part {n})", t) for n, t in enumerate(texts, start=1)]


def _blocks(text: str) -> list[str]:
    """Paragraphs separated by blank lines or headings; a heading stays with what follows it."""
    blocks: list[str] = []
    current: list[str] = []
    fenced = False
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        heading = not fenced and _HEADING.match(line)
        if _FENCE.match(line):
            fenced = not fenced
        if (not line.strip() or heading) and current and not _only_headings(current):
            blocks.append("\n".join(current).strip())
            current = []
        if line.strip():
            current.append(line.rstrip())
        elif current and current[-1]:
            current.append("")  # keep the blank line between a heading and its paragraph
    if current:
        blocks.append("\n".join(current).strip())
    return blocks


def _only_headings(lines: list[str]) -> bool:
    return all(_HEADING.match(line) or not line for line in lines)


def _split_block(block: str, max_words: int) -> list[str]:
    """An over-long block: by lines (a Markdown table repeats its header), then sentences, then words."""
    lines = block.split("\n")
    header: list[str] = []
    for i in range(len(lines) - 1):
        if lines[i].startswith("|") and _TABLE_RULE.match(lines[i + 1]):
            header, lines = lines[: i + 2], lines[i + 2:]
            break
    budget = max(1, max_words - len(" ".join(header).split()))
    units = [u for line in lines for u in _units(line, budget)]
    pieces = _pack(units, budget)
    return ["\n".join([*header, piece]) for piece in pieces] if header else pieces


def _units(line: str, max_words: int) -> Iterator[str]:
    if len(line.split()) <= max_words:
        yield line
        return
    for sentence in split_sentences(line):
        words = sentence.split()
        for start in range(0, len(words), max_words):
            yield " ".join(words[start:start + max_words])


def _pack(units: Iterable[str], max_words: int) -> list[str]:
    pieces: list[list[str]] = [[]]
    words = 0
    for unit in units:
        size = len(unit.split())
        if pieces[-1] and words + size > max_words:
            pieces.append([])
            words = 0
        pieces[-1].append(unit)
        words += size
    return ["\n".join(p) for p in pieces if p]


def _title_from_text(text: str, path: Path) -> str:
    """The first level-1 heading, else the first heading, else the file name without suffix."""
    headings = [m for m in map(_HEADING.match, text.splitlines()[:2000]) if m and m.group(2)]
    first = next((m for m in headings if len(m.group(1)) == 1), headings[0] if headings else None)
    return first.group(2).strip() if first else path.stem.replace("_", " ").strip() or path.name


def _parts(title: str, text: str) -> tuple[Part, ...]:
    return tuple(Part(title=t, text=body) for t, body in split_text(title, text))


# --- readers ----------------------------------------------------------------------------------

@reader(".txt", ".md", ".markdown")
def read_text(source: Source) -> FileResult:
    """Plain text or Markdown, kept literally (markup such as <script> is data; the UI escapes it)."""
    text = _decode_text(source)
    if isinstance(text, FileResult):
        return text
    if not text.strip():
        return _fail(source.label, "is empty; there is no text to ingest")
    return FileResult(parts=_parts(_title_from_text(text, source.path), text))


@reader(".html", ".htm")
def read_html(source: Source) -> FileResult:
    """A web page: main text and tables as documents; the raw page is kept for the hybrid method."""
    # UnicodeDammit honours a BOM or <meta charset> and guesses for pages saved in legacy encodings.
    html = UnicodeDammit(source.data, is_html=True).unicode_markup
    if html is None:
        return _fail(source.label, "cannot be decoded as text; save the page as UTF-8")
    content = html_to_content(html)
    if not content.text:
        return _fail(source.label, "has no readable text after removing scripts, menus and markup")
    title = content.title or source.path.stem.replace("_", " ")
    # A pages.jsonl line longer than the loader's limit would make the written pack unloadable.
    page = Page(id="", url="", title=title, html=html) if len(html) < MAX_LINE_CHARS // 2 else None
    return FileResult(parts=_parts(title, content.text), page=page)


@reader(".pdf")
def read_pdf(source: Source) -> FileResult:
    """A PDF's text layer, page by page; scanned (image-only) PDFs have none and are refused."""
    if b"%PDF-" not in source.data[:1024]:
        return _fail(source.label, "is not a PDF (no %PDF- header); check the file or its suffix")
    from pypdf import PdfReader  # pypdf is only needed when a PDF is ingested

    try:
        pdf = PdfReader(io.BytesIO(source.data))
        if pdf.is_encrypted and not pdf.decrypt(""):
            return _fail(source.label, "is encrypted with a password; save an unprotected copy")
        pages = [page.extract_text() or "" for page in pdf.pages]
        meta_title = str((pdf.metadata or {}).get("/Title") or "").strip()
    except Exception as exc:  # noqa: BLE001 — pypdf raises many exception types on damaged input
        return _fail(source.label, f"cannot be read as a PDF ({type(exc).__name__}: {exc}); "
                                   "the file may be damaged or encrypted")
    text = "\n\n".join(p.strip() for p in pages if p.strip())
    if not text:
        return _fail(source.label, "has no extractable text (a scanned PDF?); run OCR on it first")
    title = meta_title or source.path.stem.replace("_", " ")
    return FileResult(parts=_parts(title, text))


@reader(".jsonl")
def read_jsonl(source: Source) -> FileResult:
    """Document records {"id","title","text"[,"url"][,"entities"]}, checked like documents.jsonl."""
    text = _decode_text(source)
    if isinstance(text, FileResult):
        return text
    problems = Problems()
    records = parse_records(enumerate(text.splitlines(), start=1), source.label, DOCUMENT_FIELDS,
                            document_from_record, problems)
    parts = [Part(title=d.title, text=d.text, id=d.id, url=d.url, entities=d.entities) for _, d in records]
    if problems.items:
        return FileResult(problems=tuple(problems.items))
    if not parts:
        return _fail(source.label, 'has no records; expected one {"id","title","text"} object per line')
    return FileResult(parts=tuple(parts))


@reader(".tsv")
def read_tsv(source: Source) -> FileResult:
    """Triples, one per line: head⇥relation⇥tail[⇥time]; `#` starts a comment."""
    text = _decode_text(source)
    if isinstance(text, FileResult):
        return text
    rows = ((n, line.split("\t")) for n, line in enumerate(text.splitlines(), start=1))
    return _triples(source.label, rows)


@reader(".csv")
def read_csv(source: Source) -> FileResult:
    """Triples as CSV rows head,relation,tail[,time]; quoting follows the csv module."""
    text = _decode_text(source)
    if isinstance(text, FileResult):
        return text
    rows = csv.reader(io.StringIO(text, newline=""))
    try:
        numbered = [(rows.line_num, row) for row in rows]
    except csv.Error as exc:
        return _fail(f"{source.label}:{rows.line_num}", f"not valid CSV ({exc})")
    return _triples(source.label, numbered)


def _triples(label: str, rows: Iterable[tuple[int, list[str]]]) -> FileResult:
    """Shared by .tsv and .csv: skip blanks, comments and a `head,relation,tail` header row."""
    triples: list[Triple] = []
    problems: list[str] = []
    first = True
    for lineno, raw in rows:
        # Tabs or newlines inside a CSV field would break the pack's triples.tsv; spaces are safe.
        fields = [_SPACE.sub(" ", f).strip() for f in raw]
        if not any(fields) or fields[0].startswith("#"):
            continue
        if first and [f.lower() for f in fields] in _TRIPLE_HEADER:
            first = False
            continue
        first = False
        problem = _triple_problem(fields)
        if problem:
            problems.append(f"{label}:{lineno}: {problem}")
            continue
        triples.append(Triple(*fields))
    if problems:
        return FileResult(problems=tuple(problems))
    if not triples:
        return _fail(label, "has no triples; expected rows head, relation, tail[, time]")
    return FileResult(triples=tuple(triples))


def _triple_problem(fields: list[str]) -> str:
    if len(fields) not in (3, 4):
        return f"expected 3 or 4 fields (head, relation, tail[, time]), got {len(fields)}"
    if not all(fields[:3]):
        return "head, relation and tail must not be empty"
    return ""


# --- ids --------------------------------------------------------------------------------------

def _assign_ids(results: list[tuple[str, FileResult]]) -> tuple[list[Document], list[Page], list[str]]:
    """Give every part a stable id: its own (.jsonl) or `<file-name-slug>-<part n>`, made unique."""
    chosen: dict[str, str] = {}
    problems: list[str] = []
    for label, result in results:
        for part in (p for p in result.parts if p.id):
            if part.id in chosen:
                problems.append(f"{label}: duplicate document id {part.id!r} (also in {chosen[part.id]})")
            else:
                chosen[part.id] = label
    used = set(chosen)
    file_keys: set[str] = set()
    documents: list[Document] = []
    pages: list[Page] = []
    for label, result in results:
        key = _unique(_slug(Path(label).name), file_keys)
        for n, part in enumerate(result.parts, start=1):
            doc_id = part.id or _unique(f"{key}-{n}", used)
            documents.append(Document(id=doc_id, title=part.title, text=part.text, url=part.url,
                                      entities=part.entities))
        if result.page is not None:
            pages.append(replace(result.page, id=key))
    return documents, pages, problems


def _slug(name: str) -> str:
    return re.sub(r"[\W_]+", "-", name.lower()).strip("-") or "file"


def _unique(candidate: str, used: set[str]) -> str:
    unique, n = candidate, 2
    while unique in used:
        unique, n = f"{candidate}-{n}", n + 1
    used.add(unique)
    return unique
