"""Readers for table and tree files as documents: CSV rows through langchain-community's CSVLoader (chosen
content and metadata columns), JSON items picked by a jq-like path.

The `jq` package that LangChain's JSONLoader needs is not installed (and compiles C), so JSON items are
picked by a small selector of our own: `.key`, `.key[]`, `[n]`, `."a key"` — no filters, no functions,
nothing that runs code, and a bounded number of results.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

from engine.errors import PackError
from engine.knowledge.ingest import FileResult, Part, Source, _decode_text, _fail
from engine.knowledge.langchain_loader import MAX_LOADER_DOCUMENTS

_STEP = re.compile(r'\.(?:([A-Za-z_][\w-]*)|"([^"\\]*)")?|\[(\d*)\]')


def read_csv_documents(source: Source) -> FileResult:
    """One document per row: the content columns as `column: value` lines, titled by a 'title' column if
    chosen as metadata, else "<file> row n"."""
    text = _decode_text(source)  # binary or non-UTF-8 files are refused as by our own readers
    if isinstance(text, FileResult):
        return text
    from langchain_community.document_loaders import CSVLoader

    options = source.options
    header = next(iter(text.splitlines()), "")
    missing = [c for c in (*options.csv_columns, *options.csv_metadata) if c not in _header_names(header)]
    if missing:
        return _fail(f"{source.label}:1", f"no column {', '.join(map(repr, missing))}; the header has "
                                          f"{header[:300]!r}")
    loader = CSVLoader(file_path=source.path, content_columns=options.csv_columns,
                       metadata_columns=options.csv_metadata, encoding="utf-8-sig")
    try:
        rows = list(loader.lazy_load())
    except Exception as exc:  # noqa: BLE001 — csv errors and ragged rows come as several types
        return _fail(source.label, f"cannot be read as CSV ({type(exc).__name__}: {exc})")
    stem = source.path.stem.replace("_", " ")
    parts = [part for n, row in enumerate(rows, start=1) if row.page_content.strip()
             for part in source.parts(str(row.metadata.get("title") or f"{stem} row {n}"), row.page_content)]
    if not parts:
        return _fail(source.label, f"has no text in the columns {', '.join(options.csv_columns)}")
    return FileResult(parts=tuple(parts))


def _header_names(header: str) -> list[str]:
    import csv

    return next(csv.reader([header]), [])


def read_json_items(source: Source) -> FileResult:
    """The items `json_path` selects: a string is a document's text, an object gives its text and title keys."""
    text = _decode_text(source)
    if isinstance(text, FileResult):
        return text
    from engine.codec import loads_bounded

    try:
        data = loads_bounded(text, source.label)
        items = select(data, source.options.json_path)
    except PackError as exc:
        return FileResult(problems=tuple(exc.problems))
    parts: list[Part] = []
    problems: list[str] = []
    for n, item in enumerate(items, start=1):
        body, title = _item_text(item)
        if body is None:
            keys = ", ".join(map(repr, list(item)[:12])) if isinstance(item, dict) else type(item).__name__
            problems.append(f"{source.label}: item {n} has no 'text' string (it has {keys}); point the path at "
                            "the text, e.g. '.items[].body'")
        elif body.strip():
            parts.extend(source.parts(title or f"{source.path.stem} item {n}", body))
    if problems:
        return FileResult(problems=tuple(problems[:20]))
    if not parts:
        return _fail(source.label, f"the path {source.options.json_path!r} selects no text")
    return FileResult(parts=tuple(parts))


def _item_text(item: Any) -> tuple[str | None, str]:
    """(text, title) of a selected item: a string or number, or an object's "text" and "title" strings."""
    if isinstance(item, str):
        return item, ""
    if isinstance(item, (int, float)) and not isinstance(item, bool):
        return str(item), ""
    if isinstance(item, dict) and isinstance(item.get("text"), str):
        title = item.get("title")
        return item["text"], title.strip() if isinstance(title, str) else ""
    return None, ""


def select(data: Any, path: str, limit: int = MAX_LOADER_DOCUMENTS) -> list[Any]:
    """The values `path` picks from `data`, jq-style: `.` is the whole, `.a.b` a field, `[]` every item of a
    list (or value of an object), `[2]` one item. PackError for a malformed path or more than `limit` values."""
    values = [data]
    for key, quoted, index in _steps(path):
        name = key or quoted
        if name is not None:
            values = [v[name] for v in values if isinstance(v, dict) and name in v]
        elif index == "":
            values = [item for v in values for item in _children(v)]
        elif index is not None:
            values = [v[int(index)] for v in values if isinstance(v, list) and int(index) < len(v)]
        if len(values) > limit:
            raise PackError([f"the path {path!r} selects more than {limit:,} items; narrow it"])
    return values


def _children(value: Any) -> list[Any]:
    return list(value) if isinstance(value, list) else list(value.values()) if isinstance(value, dict) else []


def _steps(path: str) -> Iterator[tuple[str | None, str | None, str | None]]:
    at = 0
    if not path.startswith((".", "[")):
        raise PackError([f"JSON path {path!r} must start with '.' (e.g. '.items[].body' or '.[]')"])
    while at < len(path):
        match = _STEP.match(path, at)
        if match is None or match.end() == at:
            raise PackError([f"JSON path {path!r}: cannot read {path[at:at + 20]!r} at character {at + 1}; "
                             "use .key, .\"a key\", [] or [n]"])
        yield match.groups()
        at = match.end()
