"""A user's LangChain `BaseLoader` (`ingest --loader module:factory`) as pack documents, under our caps.

A loader is foreign code: it may yield a million documents, a gigabyte page or things that are not
Documents at all. Its output passes the same limits as our own readers (a document's size, the total
size, a document count) and the same splitting, and every problem is reported, not raised mid-way.
"""

from __future__ import annotations

import importlib
import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.errors import IngestError
from engine.knowledge.ingest import (
    DEFAULT_OPTIONS,
    MAX_FILE_BYTES,
    MAX_TOTAL_BYTES,
    FileResult,
    IngestOptions,
    Part,
    Source,
    build_pack,
)
from engine.knowledge.records import Pack
from engine.knowledge.splitters import make_split

MAX_LOADER_DOCUMENTS = 100_000  # far beyond a pack one machine explores; a runaway loader stops here


@dataclass(frozen=True)
class LoaderCaps:
    """How much a loader may hand over: documents, characters in one, characters in all."""

    documents: int = MAX_LOADER_DOCUMENTS
    chars: int = MAX_FILE_BYTES
    total_chars: int = MAX_TOTAL_BYTES


DEFAULT_CAPS = LoaderCaps()


def parse_loader_args(pairs: Iterable[str]) -> dict[str, Any]:
    """`k=v` pairs; a value that reads as JSON (a number, true, a list) is passed as that, else as text."""
    args: dict[str, Any] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip().isidentifier():
            raise IngestError([f"loader argument {pair!r} is not NAME=VALUE (e.g. file_path=notes.csv)"])
        try:
            args[key.strip()] = json.loads(value)
        except ValueError:
            args[key.strip()] = value
    return args


def make_loader(spec: str, args: Mapping[str, Any]) -> Any:
    """The BaseLoader that `module:factory` (a class or a function) builds from `args`."""
    from langchain_core.document_loaders import BaseLoader

    module_name, sep, attribute = spec.partition(":")
    if not sep or not module_name or not attribute:
        raise IngestError([f"loader {spec!r} is not module:factory (e.g. "
                           "langchain_community.document_loaders:CSVLoader or my_loaders:make)"])
    try:
        target: Any = importlib.import_module(module_name)
    except Exception as exc:  # noqa: BLE001 — any import failure of a user's module is theirs to fix
        raise IngestError([f"loader {spec!r}: cannot import {module_name!r} ({type(exc).__name__}: {exc}); "
                           "check the module name and that it is installed"]) from None
    for name in attribute.split("."):
        if not hasattr(target, name):
            raise IngestError([f"loader {spec!r}: {module_name!r} has no attribute {attribute!r}"])
        target = getattr(target, name)
    if not callable(target):
        raise IngestError([f"loader {spec!r}: {attribute!r} is a {type(target).__name__}, not a class or function"])
    try:
        loader = target(**args)
    except Exception as exc:  # noqa: BLE001 — a user's factory may raise anything; say which and why
        raise IngestError([f"loader {spec!r} failed with {', '.join(map(str, args)) or 'no arguments'}: "
                           f"{type(exc).__name__}: {exc}"]) from None
    if not isinstance(loader, BaseLoader):
        raise IngestError([f"loader {spec!r} returned a {type(loader).__name__}, not a LangChain BaseLoader"])
    return loader


def ingest_loader(spec: str, args: Mapping[str, Any], name: str, options: IngestOptions = DEFAULT_OPTIONS,
                  caps: LoaderCaps = DEFAULT_CAPS) -> Pack:
    """The pack of what `spec`'s loader yields; IngestError listing every problem."""
    loader = make_loader(spec, args)
    return build_pack(name, loader_results(loader, spec, options, caps), f"loader {spec}", [])


def loader_results(loader: Any, label: str, options: IngestOptions, caps: LoaderCaps) -> list[tuple[str, FileResult]]:
    """The loader's documents grouped by their `source` metadata (which names their ids), checked against `caps`."""
    split = make_split(options.splitter) if options.splitter is not None else None
    by_source: dict[str, list[Part]] = {}
    problems: list[str] = []
    total = 0
    try:
        for n, document in enumerate(loader.lazy_load(), start=1):
            if n > caps.documents:
                problems.append(f"{label}: yielded more than {caps.documents:,} documents; load a part at a time "
                                "(a narrower glob or query)")
                break
            text, problem = _checked_text(document, n, label, caps.chars)
            total += len(text)
            if total > caps.total_chars:
                problems.append(f"{label}: documents hold over {caps.total_chars:,} characters in all; "
                                "load a part at a time")
                break
            if problem or not text.strip():  # an empty page (a blank PDF page) is no document
                problems.extend([problem] if problem else [])
                continue
            source, title, url = _names(document.metadata, label, n)
            parts = Source(Path(source), source, b"", options, split).parts(title, text)
            by_source.setdefault(source, []).extend(Part(p.title, p.text, url=url, splitter=p.splitter) for p in parts)
    except Exception as exc:  # noqa: BLE001 — a loader failing mid-way is reported with what it had said so far
        problems.append(f"{label}: the loader failed: {type(exc).__name__}: {exc}")
    if problems:
        return [(label, FileResult(problems=tuple(problems)))]
    return [(source, FileResult(parts=tuple(parts))) for source, parts in by_source.items()]


def _checked_text(document: Any, n: int, label: str, max_chars: int) -> tuple[str, str]:
    """The document's text, or "" and why it is refused."""
    from langchain_core.documents import Document

    where = f"{label}: document {n}"
    if not isinstance(document, Document):
        return "", f"{where} is a {type(document).__name__}, not a LangChain Document"
    if not isinstance(document.page_content, str):
        return "", f"{where}: page_content is a {type(document.page_content).__name__}, not text"
    if len(document.page_content) > max_chars:
        return "", (f"{where} holds {len(document.page_content):,} characters, over the limit of {max_chars:,}; "
                    "split the source or load it in parts")
    return document.page_content, ""


def _names(metadata: Any, label: str, n: int) -> tuple[str, str, str]:
    """(source, title, url) from LangChain's usual metadata keys; a document without a source is the loader's."""
    metadata = metadata if isinstance(metadata, Mapping) else {}
    source = str(metadata.get("source") or label)
    url = source if source.startswith(("http://", "https://")) else ""
    title = str(metadata.get("title") or "").strip()
    if not title:
        stem = Path(source.rstrip("/")).stem if source != label else ""
        title = f"{stem} ({metadata['page'] + 1})" if stem and isinstance(metadata.get("page"), int) else stem
    return source, title or f"{label} document {n}", url
