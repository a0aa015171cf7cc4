"""Load a pack folder with full validation: every problem as `file:line: problem`, never half-loaded."""

from __future__ import annotations

import stat
from collections.abc import Callable, Iterable, Iterator
from itertools import count
from pathlib import Path
from typing import Any, TypeVar

from engine.codec import loads_bounded
from engine.errors import PackError
from engine.knowledge.records import (
    QUESTION_TYPES,
    Document,
    Pack,
    PackInfo,
    Page,
    Question,
    Rule,
    Triple,
    pack_name_problem,
)
from engine.knowledge.writer import is_staging
from engine.rules.walk import body_problem

R = TypeVar("R")
MAX_LINE_CHARS = 5_000_000  # bytes in one record (or in pack.json); beyond this a file is not a pack file
MAX_PROBLEMS = 1_000  # a file of garbage yields a problem per line: keep memory bounded (issue 15)
PACK_FILES = ("pack.json", "documents.jsonl", "triples.tsv", "rules.jsonl", "questions.jsonl", "pages.jsonl")

# field -> (accepted python types, required); a list field is a list of strings
_STR = (str,)
_LIST = (list,)
_NUM = (int, float)
PACK_FIELDS = {"name": (_STR, True), "title": (_STR, False), "description": (_STR, False),
               "license": (_STR, False), "temporal": ((bool,), False)}
DOCUMENT_FIELDS = {"id": (_STR, True), "title": (_STR, True), "text": (_STR, True),
                   "url": (_STR, False), "entities": (_LIST, False),
                   "splitter": (_STR, False)}
RULE_FIELDS = {"id": (_STR, True), "head": (_STR, True), "body": (_LIST, True),
               "confidence": (_NUM, True), "support": ((int,), True), "text": (_STR, False)}
QUESTION_FIELDS = {"id": (_STR, True), "question": (_STR, True), "answers": (_LIST, True),
                   "type": (_STR, True), "hops": ((int,), False), "supporting_docs": (_LIST, False),
                   "topic_entities": (_LIST, False), "query_time": (_STR, False),
                   "dynamism": (_STR, False)}
PAGE_FIELDS = {"id": (_STR, True), "url": (_STR, True), "title": (_STR, True),
               "html": (_STR, True), "question_ids": (_LIST, False)}


class Problems:
    """Collects problems so a user sees all of them at once."""

    def __init__(self) -> None:
        self.items: list[str] = []

    def add(self, where: str, message: str) -> None:
        self.extend([f"{where}: {message}"])

    def extend(self, found: Iterable[str]) -> None:
        """Keep `file:line: problem` lines up to MAX_PROBLEMS, then one line saying there are more."""
        for item in found:
            if len(self.items) < MAX_PROBLEMS:
                self.items.append(item)
            elif len(self.items) == MAX_PROBLEMS:
                self.items.append(f"… more problems not listed; fix these {MAX_PROBLEMS:,} first")


def load_pack(path: str | Path) -> Pack:
    """Load and validate the pack at `path`; raise PackError listing every problem."""
    folder = Path(path)
    if is_staging(folder):  # complete or not, it is a write in progress or one a kill cut short
        raise PackError([f"{folder}: the temp folder of an unfinished pack write, not a pack; load the finished "
                         "folder (without the leading dot), or write the pack again"])
    linked_out = [problem for name in PACK_FILES if (problem := _linked_out(folder, name))]
    if linked_out:
        raise PackError(linked_out)
    return read_pack(folder)


def _linked_out(folder: Path, name: str) -> str:
    """Why pack file `name` is refused, or "": a link that leads out of the pack folder would have the app
    show, and "save as copy" copy, whatever file it points at (a link to /etc/passwd). Ingestion refuses
    such links too (issue 26); a link inside the folder, or a pack folder that is itself a link, is fine."""
    path = folder / name
    try:
        if not stat.S_ISLNK(path.lstat().st_mode):
            return ""
    except OSError:  # missing or unreadable: read_pack says which
        return ""
    try:
        target = path.resolve()
        inside = target.is_relative_to(folder.resolve())
    except (OSError, RuntimeError):  # a link loop: resolve() gives up
        return f"{name}: a symbolic link that cannot be followed; put the file itself in the pack folder"
    if inside:
        return ""
    return (f"{name}: a symbolic link to {target}, outside the pack folder; only files inside the pack folder are "
            "read: copy the file into the pack")


def read_pack(folder: Path) -> Pack:
    """`load_pack` without the staging check: for a writer validating its own staging folder."""
    problems = Problems()
    if not folder.is_dir():
        raise PackError([f"{folder}: not a folder; a pack is a folder with pack.json and documents.jsonl"])
    info = _load_info(folder / "pack.json", problems)
    documents = _load_jsonl(folder / "documents.jsonl", DOCUMENT_FIELDS, document_from_record, problems, required=True)
    triples = _load_triples(folder / "triples.tsv", problems)
    rules = _load_jsonl(folder / "rules.jsonl", RULE_FIELDS, _rule, problems)
    questions = _load_jsonl(folder / "questions.jsonl", QUESTION_FIELDS, _question, problems)
    pages = _load_jsonl(folder / "pages.jsonl", PAGE_FIELDS, _page, problems)
    _check_references(folder, documents, triples, rules, questions, pages, problems)
    if problems.items or info is None:  # no info always comes with a problem saying why
        raise PackError(problems.items)
    return Pack(
        info=info,
        documents=tuple(d for _, d in documents),
        triples=tuple(t for _, t in triples),
        rules=tuple(r for _, r in rules),
        questions=tuple(q for _, q in questions),
        pages=tuple(p for _, p in pages),
        path=folder.resolve(),
    )


def _load_info(path: Path, problems: Problems) -> PackInfo | None:
    if not path.is_file():
        problems.add(path.name, "missing; a pack needs pack.json with at least a name")
        return None
    text = _read_small_text(path, problems)
    if text is None:
        return None
    try:
        data = loads_bounded(text, path.name)
    except PackError as exc:
        problems.extend(exc.problems)
        return None
    where = f"{path.name}:1"
    if not check_fields(data, PACK_FIELDS, where, problems):
        return None
    problem = pack_name_problem(data["name"])
    if problem:  # the name reaches folder and index names: see pack_name_problem
        problems.add(where, f"{problem}; fix 'name' in pack.json")
        return None
    return PackInfo(**{k: v for k, v in data.items() if k in PACK_FIELDS})


def _read_small_text(path: Path, problems: Problems) -> str | None:
    """A whole small file as text, or None with a problem naming the line of a bad byte."""
    if path.stat().st_size > MAX_LINE_CHARS:
        problems.add(path.name, f"larger than {MAX_LINE_CHARS:,} bytes; it holds a few short fields")
        return None
    raw = path.read_bytes()
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        line_start = raw.rfind(b"\n", 0, exc.start) + 1
        lineno = raw.count(b"\n", 0, line_start) + 1
        problems.add(f"{path.name}:{lineno}", _not_utf8(exc.reason, exc.start - line_start))
        return None


def _not_utf8(reason: str, byte: int) -> str:
    return f"not UTF-8 text ({reason} at byte {byte} of the line); save the file as UTF-8"


def _lines(path: Path, problems: Problems) -> Iterator[tuple[int, str]]:
    """Decoded line by line so a bad byte is reported with its line number; memory stays bounded by
    MAX_LINE_CHARS even for a file with no newline at all."""
    with path.open("rb") as handle:
        for lineno in count(1):
            raw = handle.readline(MAX_LINE_CHARS + 1)
            if not raw:
                return
            where = f"{path.name}:{lineno}"
            if len(raw) > MAX_LINE_CHARS:
                problems.add(where, f"line longer than {MAX_LINE_CHARS:,} bytes")
                while raw and not raw.endswith(b"\n"):  # skip the rest of the line a chunk at a time
                    raw = handle.readline(1 << 20)
                continue
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.add(where, _not_utf8(exc.reason, exc.start))


def _load_jsonl(
    path: Path,
    fields: dict[str, tuple[tuple[type, ...], bool]],
    build: Callable[[dict[str, Any]], R],
    problems: Problems,
    required: bool = False,
) -> list[tuple[int, R]]:
    """Parse one record per non-blank line; unknown fields are kept by `build` or ignored."""
    if not path.is_file():
        if required:
            problems.add(path.name, "missing; every pack needs this file")
        return []
    records = parse_records(_lines(path, problems), path.name, fields, build, problems)
    if required and not records and path.is_file():
        problems.add(path.name, "has no records")
    return records


def parse_records(
    lines: Iterable[tuple[int, str]],
    label: str,
    fields: dict[str, tuple[tuple[type, ...], bool]],
    build: Callable[[dict[str, Any]], R],
    problems: Problems,
) -> list[tuple[int, R]]:
    """One JSON record per non-blank line, checked against `fields`, ids unique; shared with ingestion."""
    records: list[tuple[int, R]] = []
    seen: dict[str, int] = {}
    for lineno, line in lines:
        if not line.strip():
            continue
        where = f"{label}:{lineno}"
        try:
            data = loads_bounded(line.rstrip("\r\n"), label, lineno)  # an error at the end stays on this line
        except PackError as exc:
            problems.extend(exc.problems)
            continue
        if not check_fields(data, fields, where, problems):
            continue
        if data["id"] in seen:
            problems.add(where, f"duplicate id {data['id']!r} (first on line {seen[data['id']]})")
            continue
        seen[data["id"]] = lineno
        records.append((lineno, build(data)))
    return records


def check_fields(data: Any, fields: dict[str, tuple[tuple[type, ...], bool]], where: str,
                 problems: Problems) -> bool:
    """Types of the known fields, list items included: a wrong type here would crash a method later."""
    if not isinstance(data, dict):
        problems.add(where, f"expected a JSON object, got {type(data).__name__}")
        return False
    ok = True
    for name, (types_, required) in fields.items():
        if name not in data:
            if required:
                problems.add(where, f"missing field {name!r}")
                ok = False
            continue
        value = data[name]
        if isinstance(value, bool) != (bool in types_) or not isinstance(value, types_):
            wanted = " or ".join(t.__name__ for t in types_)
            problems.add(where, f"field {name!r} must be {wanted}, got {type(value).__name__}")
            ok = False
        elif types_ is _LIST and not all(isinstance(v, str) for v in value):
            bad = next(i for i, v in enumerate(value) if not isinstance(v, str))
            problems.add(where, f"field {name!r} must be a list of strings; item {bad} is "
                                f"{type(value[bad]).__name__}")
            ok = False
    if ok and "id" in fields and not str(data["id"]).strip():
        problems.add(where, "empty id")
        ok = False
    return ok


def document_from_record(data: dict[str, Any]) -> Document:
    return Document(id=data["id"], title=data["title"], text=data["text"], url=data.get("url", ""),
                    entities=tuple(data.get("entities", [])), splitter=data.get("splitter", ""))


def _rule(data: dict[str, Any]) -> Rule:
    return Rule(id=data["id"], head=data["head"], body=tuple(data["body"]),
                confidence=float(data["confidence"]), support=data["support"],
                text=data.get("text", ""))


def _question(data: dict[str, Any]) -> Question:
    known = set(QUESTION_FIELDS)
    return Question(
        id=data["id"], question=data["question"], answers=tuple(data["answers"]),
        type=data["type"], hops=data.get("hops", 1),
        supporting_docs=tuple(data.get("supporting_docs", [])),
        topic_entities=tuple(data.get("topic_entities", [])),
        query_time=data.get("query_time", ""), dynamism=data.get("dynamism", ""),
        extra={k: v for k, v in data.items() if k not in known},
    )


def _page(data: dict[str, Any]) -> Page:
    return Page(id=data["id"], url=data["url"], title=data["title"], html=data["html"],
                question_ids=tuple(data.get("question_ids", [])))


def _load_triples(path: Path, problems: Problems) -> list[tuple[int, Triple]]:
    if not path.is_file():
        return []
    triples: list[tuple[int, Triple]] = []
    for lineno, line in _lines(path, problems):
        stripped = line.rstrip("\r\n")
        if not stripped.strip() or stripped.lstrip().startswith("#"):
            continue
        parts = [p.strip() for p in stripped.split("\t")]
        where = f"{path.name}:{lineno}"
        if len(parts) not in (3, 4):
            problems.add(where, f"expected 3 or 4 tab-separated fields (head, relation, tail[, time]), "
                                f"got {len(parts)}")
            continue
        if not all(parts[:3]):
            problems.add(where, "head, relation and tail must not be empty")
            continue
        triples.append((lineno, Triple(*parts)))
    return triples


def _check_references(folder: Path, documents: list[tuple[int, Document]],
                      triples: list[tuple[int, Triple]], rules: list[tuple[int, Rule]],
                      questions: list[tuple[int, Question]], pages: list[tuple[int, Page]],
                      problems: Problems) -> None:
    """Cross-file checks: rule relations exist, question types and doc ids are known."""
    relations = {t.relation for _, t in triples}
    for lineno, rule in rules:
        where = f"rules.jsonl:{lineno}"
        problem = body_problem(rule.body)  # empty, or too long to follow in bounded time
        if problem:
            problems.add(where, problem)
        for relation in (rule.head, *rule.body):
            if relation.lstrip("~") not in relations:
                known = ", ".join(sorted(relations)[:12]) or "none (no triples.tsv)"
                problems.add(where, f"unknown relation {relation.lstrip('~')!r}; known: {known}")
        if not 0.0 <= rule.confidence <= 1.0:
            problems.add(where, f"confidence {rule.confidence} outside [0, 1]")
        if rule.support < 0:
            problems.add(where, f"support {rule.support} is negative")
    doc_ids = {d.id for _, d in documents}
    for lineno, question in questions:
        where = f"questions.jsonl:{lineno}"
        if question.type not in QUESTION_TYPES:
            problems.add(where, f"unknown type {question.type!r}; allowed: {', '.join(QUESTION_TYPES)}")
        if not question.question.strip():
            problems.add(where, "empty question text")
        if not question.answers:
            problems.add(where, "no gold answers")
        for doc_id in question.supporting_docs:
            if doc_id not in doc_ids:
                problems.add(where, f"supporting doc {doc_id!r} is not in documents.jsonl")
    question_ids = {q.id for _, q in questions}
    for lineno, page in pages:
        for qid in page.question_ids:
            if qid not in question_ids:
                problems.add(f"pages.jsonl:{lineno}", f"question id {qid!r} is not in questions.jsonl")
