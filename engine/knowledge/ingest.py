"""Turn files (text, Markdown, HTML, PDF, document JSONL, TSV/CSV triples) into an in-memory Pack."""

from __future__ import annotations

import codecs
import csv
import io
import json
import logging
import os
import re
import stat
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

from bs4.dammit import UnicodeDammit

from engine.codec import SURROGATE
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
from engine.knowledge.records import Document, Pack, PackInfo, Page, Triple, pack_name_problem
from engine.knowledge.splitters import Split, SplitterConfig, make_split

log = logging.getLogger(__name__)

MAX_WORDS_PER_DOCUMENT = 250
# A document must fit one line of documents.jsonl (the loader's MAX_LINE_CHARS bytes) even when every
# character is escaped; a 6 MB line without spaces once made one document and an unloadable pack.
MAX_PART_CHARS = 100_000
MAX_TITLE_CHARS = 300
MAX_FILE_BYTES = 50_000_000
MAX_TOTAL_BYTES = 500_000_000
# A parsed page takes up to ~150 times its size in memory (bs4 makes an object per tag) and ~5 s per MB
# of dense markup: 10 MB bounds one page to about 1.5 GB and a minute, far beyond real articles.
MAX_HTML_BYTES = 10_000_000
# `(.*)` takes the rest of the line; the closing `#`s are stripped in Python, since a lazy group before
# `\s*#*\s*$` backtracks quadratically on a long run of spaces or '#' (issue 15).
_HEADING = re.compile(r" {0,3}(#{1,6})\s+(.*)")
_FENCE = re.compile(r"^ {0,3}(```|~~~)")
_TABLE_RULE = re.compile(r"^\|(?: *:?-{3,}:? *\|)+$")
_TRIPLE_HEADER = (["head", "relation", "tail"], ["head", "relation", "tail", "time"])
_SPACE = re.compile(r"\s+")


@dataclass(frozen=True)
class IngestOptions:
    """How files become documents beyond their suffix: a LangChain splitter instead of our paragraphs, .csv
    rows as documents (CSVLoader's columns) instead of triples, .json items picked by a path."""

    splitter: SplitterConfig | None = None
    csv_columns: tuple[str, ...] = ()  # content columns; empty: a .csv holds triples
    csv_metadata: tuple[str, ...] = ()
    json_path: str = ""  # e.g. ".items[].body"; empty: .json files are refused


DEFAULT_OPTIONS = IngestOptions()  # our readers and paragraphs, as before issue 25

@dataclass(frozen=True)
class Source:
    """One file handed to a reader: where it is, how to name it in messages, its bytes, and how to split it."""

    path: Path
    label: str
    data: bytes
    options: IngestOptions = DEFAULT_OPTIONS
    split: Split | None = None  # the options' splitter, built once per ingest; None: our paragraphs

    def parts(self, title: str, text: str) -> tuple[Part, ...]:
        """`text` cut into titled parts; a title is a label, so an unclosed <title> or huge heading is cut."""
        if len(title) > MAX_TITLE_CHARS:
            title = title[:MAX_TITLE_CHARS - 1].rstrip() + "…"
        if self.split is None:
            return tuple(Part(title=t, text=body) for t, body in split_text(title, text))
        name = self.options.splitter.name if self.options.splitter else ""
        # A splitter's piece may exceed what one documents.jsonl line holds (a word of 200,000 characters).
        return tuple(Part(title=t, text=body[at:at + MAX_PART_CHARS], splitter=name)
                     for t, body in self.split(title, text) for at in range(0, len(body), MAX_PART_CHARS))


@dataclass(frozen=True)
class Part:
    """A document before it has an id; `id` is set only when the file chose it (.jsonl)."""

    title: str
    text: str
    id: str = ""
    url: str = ""
    entities: tuple[str, ...] = ()
    splitter: str = ""


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


def ingest_paths(paths: Sequence[Path], name: str, max_bytes: int = MAX_FILE_BYTES,
                 max_total_bytes: int = MAX_TOTAL_BYTES, options: IngestOptions = DEFAULT_OPTIONS,
                 glob: str = "") -> Pack:
    """Read files and folders (recursively, sorted) into a Pack; raise IngestError with every problem.

    Only regular files are read, never through a link found inside a folder, each at most
    `max_bytes` and all together at most `max_total_bytes` (issue 15). `glob` (e.g. "*.md") keeps only
    the files of a folder whose path below it matches.
    """
    files, problems = _expand(paths, glob)
    total = sum(file.size for file in files)
    if total > max_total_bytes:
        problems.append(f"{len(files)} files hold {total:,} bytes, over the total limit of {max_total_bytes:,} "
                        "bytes; ingest fewer files at a time or raise the limit")
        files = []
    split = make_split(options.splitter) if options.splitter is not None else None
    results = [(file.label, _read(file, max_bytes, options, split)) for file in files]
    return build_pack(name, results, f"{len(files)} file(s)", problems)


def build_pack(name: str, results: list[tuple[str, FileResult]], origin: str, problems: list[str]) -> Pack:
    """What each source (a file, a loader's `source`) contributed, as a Pack with stable, distinct ids;
    IngestError with `problems` and every source's own."""
    name_problem = pack_name_problem(name) if name.strip() else \
        "pack name is empty; give the pack a name such as 'my-notes'"
    problems = [*([name_problem] if name_problem else []), *problems,
                *(p for _, result in results for p in result.problems)]
    documents, pages, id_problems = _assign_ids(results)
    problems.extend(id_problems)
    if not documents and not problems:
        shown = ", ".join(label for label, _ in results) or "nothing"
        problems.append(f"no documents found in {shown}; a pack needs at least one document "
                        f"(allowed: {', '.join(sorted(READERS))}; .tsv/.csv give triples only)")
    if problems:
        raise IngestError(problems)
    log.info("ingested %s into %d document(s) for pack %r", origin, len(documents), name)
    return Pack(
        info=PackInfo(name=name, title=name, description=f"Ingested from {origin}."),
        documents=tuple(documents),
        triples=tuple(t for _, r in results for t in r.triples),
        pages=tuple(pages),
    )


# --- files ------------------------------------------------------------------------------------

@dataclass(frozen=True)
class _File:
    """A regular file to read: its path as named, the path to open, and its size when listed."""

    path: Path  # gives the suffix, the fallback title and the name in messages
    target: Path
    size: int

    @property
    def label(self) -> str:
        return str(self.path)


def _expand(paths: Sequence[Path], glob: str = "") -> tuple[list[_File], list[str]]:
    """Regular files to read, and a problem for each given path that is missing or not a file or folder."""
    files: list[_File] = []
    problems: list[str] = []
    seen: set[Path] = set()
    if not paths:
        problems.append("no files given; pass files or folders to ingest")
    for given in map(Path, paths):
        try:
            info = given.stat()  # a link the user names is followed: they chose its target
        except FileNotFoundError:
            problems.append(f"{given}: no such file or folder")
            continue
        except OSError as exc:
            problems.append(f"{given}: cannot be read ({exc.strerror or exc})")
            continue
        if stat.S_ISDIR(info.st_mode):
            found = [f for f in _walk_folder(given) if not glob or _matches(f.path.relative_to(given), glob)]
            if not found and glob:
                problems.append(f"{given}: no file matches {glob!r}; check the pattern (e.g. '*.md' or 'notes/*.txt')")
        elif stat.S_ISREG(info.st_mode):
            found = [_File(given, given.resolve(), info.st_size)]
        else:
            problems.append(f"{given}: {_kind(info.st_mode)}, not a regular file; only regular files are read")
            continue
        for file in found:
            if file.target.resolve() not in seen:  # the same file named twice is read once
                seen.add(file.target.resolve())
                files.append(file)
    return files, problems


def _walk_folder(folder: Path) -> list[_File]:
    """The regular files under `folder`, sorted; links, pipes, devices and sockets are skipped with a warning.

    A link may lead outside the folder (a link to /etc/passwd once landed in a pack), a FIFO blocks
    its reader forever and /dev/zero never ends (issue 15); os.walk does not follow folder links.
    """
    root = folder.resolve()
    found: list[_File] = []

    def unreadable(exc: OSError) -> None:
        log.warning("%s: skipped, cannot be read (%s)", exc.filename, exc.strerror or exc)

    for dirpath, dirs, names in os.walk(folder, onerror=unreadable):
        here = Path(dirpath)
        # Hidden files and folders (.git, .DS_Store) are tool litter, not content.
        dirs[:] = sorted(d for d in dirs if not d.startswith(".") and _listed(here / d, root, stat.S_ISDIR))
        for name in sorted(n for n in names if not n.startswith(".")):
            info = _listed(here / name, root, stat.S_ISREG)
            if info is not None:
                found.append(_File(here / name, here / name, info.st_size))
    return found


def _matches(relative: Path, glob: str) -> bool:
    """A glob matched from the right of the path below the folder: '*.md' and '**/*.md' at any depth,
    'notes/*.md' in any folder named notes (one folder level per '*')."""
    return relative.match(glob.removeprefix("**/"))


def _listed(path: Path, root: Path, is_wanted: Callable[[int], bool]) -> os.stat_result | None:
    """`path`'s own status when it is a plain folder or file (as `is_wanted` says) inside `root`; else a
    warning naming it, and None."""
    try:
        info = path.lstat()
        inside = path.resolve().is_relative_to(root)
    except OSError as exc:
        log.warning("%s: skipped, cannot be read (%s)", path, exc.strerror or exc)
        return None
    if is_wanted(info.st_mode) and inside:
        return info
    why = _kind(info.st_mode) if not is_wanted(info.st_mode) else f"it resolves outside {root}"
    log.warning("%s: skipped, %s; only regular files inside the given folder are read", path, why)
    return None


def _kind(mode: int) -> str:
    kinds = ((stat.S_ISLNK, "a symbolic link"), (stat.S_ISFIFO, "a named pipe"), (stat.S_ISCHR, "a device"),
             (stat.S_ISBLK, "a device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISDIR, "a folder"))
    return next((name for test, name in kinds if test(mode)), "not a regular file")


def _read(file: _File, max_bytes: int, options: IngestOptions, split: Split | None) -> FileResult:
    read = _reader_for(file.path.suffix.lower(), options)
    if read is None:
        allowed = ", ".join(sorted({*READERS, ".json"}))
        return _fail(file.label, f"unsupported file type {file.path.suffix or '(no suffix)'!r}; allowed: {allowed}"
                     + (" (.json with a JSON path)" if file.path.suffix.lower() == ".json" else ""))
    data = _read_bytes(file, max_bytes)
    if isinstance(data, FileResult):
        return data
    return read(Source(path=file.path, label=file.label, data=data, options=options, split=split))


def _reader_for(suffix: str, options: IngestOptions) -> Reader | None:
    """Our reader for the suffix, or a LangChain-style one when the options ask for CSV documents or JSON items."""
    if (suffix == ".csv" and options.csv_columns) or (suffix == ".json" and options.json_path):
        from engine.knowledge import structured  # LangChain's loaders load only when asked for

        return structured.read_csv_documents if suffix == ".csv" else structured.read_json_items
    return READERS.get(suffix)


def _read_bytes(file: _File, max_bytes: int) -> bytes | FileResult:
    """At most `max_bytes` of a regular file, opened so that a link or pipe swapped in since it was
    listed is refused rather than followed or waited on."""
    over = f"over the limit of {max_bytes:,} bytes; split the file or raise the limit"
    if file.size > max_bytes:
        return _fail(file.label, f"{file.size:,} bytes is {over}")
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    try:
        with open(os.open(file.target, flags), "rb") as handle:
            mode = os.fstat(handle.fileno()).st_mode
            if not stat.S_ISREG(mode):
                return _fail(file.label, f"{_kind(mode)}, not a regular file; only regular files are read")
            data = handle.read(max_bytes + 1)  # a file that grew since it was listed stops here
    except OSError as exc:
        return _fail(file.label, f"cannot be read ({exc.strerror or exc})")
    return _fail(file.label, f"is {over} (it holds more than its listed size)") if len(data) > max_bytes else data


def _fail(label: str, message: str) -> FileResult:
    return FileResult(problems=(f"{label}: {message}",))


def _binary(source: Source) -> FileResult | None:
    """A failure when NUL bytes near the start say the file is not text (UTF-16, marked by a BOM, is text)."""
    if b"\x00" in source.data[:8192] and not source.data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return _fail(source.label, "looks like a binary file, not text; check the file and its suffix")
    return None


def _decode_text(source: Source) -> str | FileResult:
    """UTF-8 text (a BOM is fine), or a failure saying what the file really is."""
    binary = _binary(source)
    if binary is not None:
        return binary
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
    words = chars = 0
    for block in _blocks(text):
        size = len(block.split())
        # Start a new part at a heading once the current one is reasonably full, else when it overflows.
        at_heading = bool(_HEADING.match(block.split("\n", 1)[0])) and words >= max_words // 2
        if parts and parts[-1] and (words + size > max_words or chars + len(block) > MAX_PART_CHARS or at_heading):
            parts.append([])
            words = chars = 0
        if not parts:
            parts.append([])
        if size > max_words or len(block) > MAX_PART_CHARS:
            pieces = _split_block(block, max_words)
            parts[-1].append(pieces[0])
            parts.extend([piece] for piece in pieces[1:])
            words, chars = len(pieces[-1].split()), len(pieces[-1])
            continue
        parts[-1].append(block)
        words, chars = words + size, chars + len(block) + 2
    texts = ["\n\n".join(p) for p in parts if p]
    if len(texts) == 1:
        return [(title, texts[0])]
    return [(f"{title} (part {n})", t) for n, t in enumerate(texts, start=1)]


def _blocks(text: str) -> list[str]:
    """Paragraphs separated by blank lines or headings; a heading stays with what follows it."""
    blocks: list[str] = []
    current: list[str] = []
    has_body = False  # `current` holds more than headings and blank lines (kept as a flag: linear time)
    fenced = False
    for line in text.replace("\r\n", "\n").replace("\r", "\n").split("\n"):
        heading = not fenced and _HEADING.match(line)
        if _FENCE.match(line):
            fenced = not fenced
        if (not line.strip() or heading) and has_body:
            blocks.append("\n".join(current).strip())
            current, has_body = [], False
        if line.strip():
            current.append(line.rstrip())
            has_body = has_body or not _HEADING.match(current[-1])
        elif current and current[-1]:
            current.append("")  # keep the blank line between a heading and its paragraph
    if current:
        blocks.append("\n".join(current).strip())
    return blocks


def _split_block(block: str, max_words: int) -> list[str]:
    """An over-long block: by lines, then sentences, then words.

    A Markdown table repeats its header in every piece, but only while that at most doubles the
    block: a 4 MB wide table once repeated a 400-word header before every single word (issue 15).
    """
    lines = block.split("\n")
    for i in range(len(lines) - 1):
        if lines[i].startswith("|") and _TABLE_RULE.match(lines[i + 1]):
            header, rows = "\n".join(lines[: i + 2]), lines[i + 2:]
            budget = max_words - len(header.split())
            if budget >= max_words // 2 and len(header) <= MAX_PART_CHARS // 2:
                units = (u for line in rows for u in _units(line, budget))
                pieces = _pack(units, budget, MAX_PART_CHARS - len(header))
                if len(header) * len(pieces) <= len(block):
                    return [f"{header}\n{piece}" for piece in pieces]
            break
    return _pack((u for line in lines for u in _units(line, max_words)), max_words, MAX_PART_CHARS)


def _units(line: str, max_words: int) -> Iterator[str]:
    """`line` whole when it fits a part, else its sentences, else runs of words; text without spaces is cut."""
    if len(line) <= MAX_PART_CHARS and len(line.split()) <= max_words:
        yield line
        return
    for sentence in split_sentences(line):
        words = sentence.split()
        for start in range(0, len(words), max_words):
            run = " ".join(words[start:start + max_words])
            yield from (run[at:at + MAX_PART_CHARS] for at in range(0, len(run), MAX_PART_CHARS))


def _pack(units: Iterable[str], max_words: int, max_chars: int) -> list[str]:
    pieces: list[list[str]] = [[]]
    words = chars = 0
    for unit in units:
        size = len(unit.split())
        if pieces[-1] and (words + size > max_words or chars + len(unit) > max_chars):
            pieces.append([])
            words = chars = 0
        pieces[-1].append(unit)
        words, chars = words + size, chars + len(unit) + 1
    return ["\n".join(p) for p in pieces if p]


def _title_from_text(text: str, path: Path) -> str:
    """The first level-1 heading, else the first heading, else the file name without suffix."""
    headings = [(len(m.group(1)), _heading_text(m)) for m in map(_HEADING.match, text.splitlines()[:2000]) if m]
    headings = [(level, title) for level, title in headings if title]
    first = next((title for level, title in headings if level == 1), headings[0][1] if headings else "")
    return first or path.stem.replace("_", " ").strip() or path.name


def _heading_text(match: re.Match[str]) -> str:
    """A Markdown heading's text without its optional closing `#`s."""
    return match.group(2).rstrip().rstrip("#").rstrip()


# --- readers ----------------------------------------------------------------------------------

@reader(".txt", ".md", ".markdown")
def read_text(source: Source) -> FileResult:
    """Plain text or Markdown, kept literally (markup such as <script> is data; the UI escapes it)."""
    text = _decode_text(source)
    if isinstance(text, FileResult):
        return text
    if not text.strip():
        return _fail(source.label, "is empty; there is no text to ingest")
    return FileResult(parts=source.parts(_title_from_text(text, source.path), text))


@reader(".html", ".htm")
def read_html(source: Source) -> FileResult:
    """A web page: main text and tables as documents; the raw page is kept for the hybrid method."""
    if len(source.data) > MAX_HTML_BYTES:
        return _fail(source.label, f"{len(source.data):,} bytes is over the limit of {MAX_HTML_BYTES:,} bytes "
                                   "for a web page; save the article alone, or as text")
    binary = _binary(source)  # else an image named .html becomes a document of mojibake
    if binary is not None:
        return binary
    # UnicodeDammit honours a BOM or <meta charset> and guesses for pages saved in legacy encodings.
    html = UnicodeDammit(source.data, is_html=True).unicode_markup
    if html is None:
        return _fail(source.label, "cannot be decoded as text; save the page as UTF-8")
    content = html_to_content(html)
    if not content.text:
        return _fail(source.label, "has no readable text after removing scripts, menus and markup")
    title = content.title or source.path.stem.replace("_", " ")
    # A pages.jsonl line longer than the loader's limit would make the written pack unloadable.
    fits = len(json.dumps(html, ensure_ascii=False).encode()) < MAX_LINE_CHARS // 2
    page = Page(id="", url="", title=title, html=html) if fits else None
    return FileResult(parts=source.parts(title, content.text), page=page)


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
    # pypdf decodes ToUnicode maps with "surrogatepass": a broken map yields lone surrogates, which no
    # UTF-8 file can hold, so writing the pack would fail (issue 15); they become U+FFFD here.
    text = SURROGATE.sub("\ufffd", "\n\n".join(p.strip() for p in pages if p.strip()))
    if not text:
        return _fail(source.label, "has no extractable text (a scanned PDF?); run OCR on it first")
    title = SURROGATE.sub("\ufffd", meta_title) or source.path.stem.replace("_", " ")
    return FileResult(parts=source.parts(title, text))


@reader(".jsonl")
def read_jsonl(source: Source) -> FileResult:
    """Document records {"id","title","text"[,"url"][,"entities"]}, checked like documents.jsonl."""
    text = _decode_text(source)
    if isinstance(text, FileResult):
        return text
    problems = Problems()
    # "\n" only, as the pack loader reads lines: splitlines() also cuts at U+2028, valid inside JSON.
    fitting: list[tuple[int, str]] = []
    for lineno, line in enumerate(text.split("\n"), start=1):
        if len(line.encode()) > MAX_LINE_CHARS:  # the pack loader would refuse the line once written
            problems.add(f"{source.label}:{lineno}", f"line longer than {MAX_LINE_CHARS:,} bytes")
        else:
            fitting.append((lineno, line))
    records = parse_records(fitting, source.label, DOCUMENT_FIELDS, document_from_record, problems)
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
                                      entities=part.entities, splitter=part.splitter))
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
