"""Load a pack folder with full validation: every problem as `file:line: problem`, never half-loaded."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, TypeVar

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
)

R = TypeVar("R")
MAX_LINE_CHARS = 5_000_000  # one record; beyond this a file is not a pack file

# field -> (accepted python types, required)
_STR = (str,)
_LIST = (list,)
_NUM = (int, float)
DOCUMENT_FIELDS = {"id": (_STR, True), "title": (_STR, True), "text": (_STR, True),
                   "url": (_STR, False), "entities": (_LIST, False)}
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
        self.items.append(f"{where}: {message}")


def load_pack(path: str | Path) -> Pack:
    """Load and validate the pack at `path`; raise PackError listing every problem."""
    folder = Path(path)
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
    if problems.items:
        raise PackError(problems.items)
    return Pack(
        info=info or PackInfo(name=folder.name),
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
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        problems.add(f"{path.name}:{getattr(exc, 'lineno', 1)}", f"not valid JSON ({exc})")
        return None
    if not isinstance(data, dict) or not isinstance(data.get("name"), str) or not data["name"].strip():
        problems.add(f"{path.name}:1", "must be an object with a non-empty string 'name'")
        return None
    return PackInfo(
        name=data["name"],
        title=str(data.get("title", "")),
        description=str(data.get("description", "")),
        license=str(data.get("license", "")),
        temporal=bool(data.get("temporal", False)),
    )


def _lines(path: Path, problems: Problems) -> Iterator[tuple[int, str]]:
    """Decoded line by line so a bad byte is reported with its line number."""
    with path.open("rb") as handle:
        for lineno, raw in enumerate(handle, start=1):
            where = f"{path.name}:{lineno}"
            if len(raw) > MAX_LINE_CHARS:
                problems.add(where, f"line longer than {MAX_LINE_CHARS} characters")
                continue
            try:
                yield lineno, raw.decode("utf-8")
            except UnicodeDecodeError as exc:
                problems.add(where, f"not UTF-8 text ({exc.reason} at byte {exc.start} of the line)")


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
            data = json.loads(line)
        except json.JSONDecodeError as exc:
            problems.add(where, f"not valid JSON ({exc.msg} at column {exc.colno})")
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
        if isinstance(value, bool) or not isinstance(value, types_):
            wanted = " or ".join(t.__name__ for t in types_)
            problems.add(where, f"field {name!r} must be {wanted}, got {type(value).__name__}")
            ok = False
    if ok and "id" in fields and not str(data["id"]).strip():
        problems.add(where, "empty id")
        ok = False
    return ok


def _strings(values: list[Any]) -> tuple[str, ...]:
    return tuple(str(v) for v in values)


def document_from_record(data: dict[str, Any]) -> Document:
    return Document(id=data["id"], title=data["title"], text=data["text"], url=data.get("url", ""),
                    entities=_strings(data.get("entities", [])))


def _rule(data: dict[str, Any]) -> Rule:
    return Rule(id=data["id"], head=data["head"], body=_strings(data["body"]),
                confidence=float(data["confidence"]), support=data["support"],
                text=data.get("text", ""))


def _question(data: dict[str, Any]) -> Question:
    known = set(QUESTION_FIELDS)
    return Question(
        id=data["id"], question=data["question"], answers=_strings(data["answers"]),
        type=data["type"], hops=data.get("hops", 1),
        supporting_docs=_strings(data.get("supporting_docs", [])),
        topic_entities=_strings(data.get("topic_entities", [])),
        query_time=data.get("query_time", ""), dynamism=data.get("dynamism", ""),
        extra={k: v for k, v in data.items() if k not in known},
    )


def _page(data: dict[str, Any]) -> Page:
    return Page(id=data["id"], url=data["url"], title=data["title"], html=data["html"],
                question_ids=_strings(data.get("question_ids", [])))


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
        if not rule.body:
            problems.add(where, "empty body; a rule needs at least one body relation")
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
