"""Read a dataset file (a JSON list, or JSON lines) one question at a time, bounded against hostile input.

Full dev sets hold 7,000–12,000 questions; parsing them whole costs several times the file's size in
Python objects, so each question is decoded on its own (`engine.codec.loads_bounded`, issue 15) and
an importer that stops early (`--limit`) never decodes the rest.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from engine.codec import MAX_JSON_DEPTH, loads_bounded
from engine.errors import IngestError, PackError

# Strings are matched whole, so the brackets and commas left over are the structure (as in engine.codec).
_STRUCTURE = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"|[\[\]{},]')
_SPACE = re.compile(r"\s*")
_PEEK_BYTES = 1 << 16


@dataclass(frozen=True)
class Record:
    """One decoded question: its position among the questions and the line it starts on."""

    index: int
    line: int
    value: Any


def read_records(path: Path, *, json_lines: bool) -> Iterator[Record]:
    """The file's questions in order; a file with none, or not JSON, is an IngestError with its line.

    `json_lines` also accepts one JSON object per line (MuSiQue ships .jsonl); a file starting with
    `[` is read as a JSON list either way.
    """
    with _readable(path):
        if json_lines and _first_char(path) != "[":
            yield from _json_lines(path)
        else:
            yield from _json_list(path.read_text(encoding="utf-8-sig"), str(path))


@contextmanager
def _readable(path: Path) -> Iterator[None]:
    """File-system and decoding failures as one-line IngestErrors naming the file."""
    try:
        yield
    except FileNotFoundError:
        raise IngestError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise IngestError(f"{path}: is a folder; give the dataset's .json or .jsonl file") from None
    except UnicodeDecodeError as exc:
        raise IngestError(f"{path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
    except PackError as exc:  # loads_bounded's `file:line: problem`
        raise IngestError(exc.problems) from None
    except OSError as exc:
        raise IngestError(f"{path}: cannot be read ({exc.strerror or exc})") from None


def _first_char(path: Path) -> str:
    with path.open("rb") as handle:
        while chunk := handle.read(_PEEK_BYTES):
            text = chunk.lstrip(b"\xef\xbb\xbf \t\r\n")
            if text:
                return chr(text[0])
    return ""


def _json_lines(path: Path) -> Iterator[Record]:
    index = 0
    with path.open("rb") as handle:
        for line, raw in enumerate(handle, start=1):
            try:
                text = raw.decode("utf-8-sig" if line == 1 else "utf-8").rstrip("\r\n")  # errors stay on this line
            except UnicodeDecodeError as exc:
                raise IngestError(f"{path}:{line}: not UTF-8 text ({exc.reason} at byte {exc.start})") from None
            if text.strip():
                yield Record(index, line, loads_bounded(text, str(path), line))
                index += 1
    if not index:
        raise IngestError(f"{path}: no questions: expected one JSON object per line")


def _json_list(text: str, label: str) -> Iterator[Record]:
    """Split the top-level list at its commas and decode each item alone."""
    start = _SPACE.match(text).end()
    if not text.startswith("[", start):
        value = loads_bounded(text, label)  # raises for text that is not JSON at all
        raise IngestError(f"{label}: expected a JSON list of questions, got {type(value).__name__}")
    depth, index, item_start = 0, 0, start + 1
    line, counted = 1, 0  # the line at offset `counted`, advanced as items go by
    for match in _STRUCTURE.finditer(text, start):
        kind = text[match.start()]
        if kind == '"':
            continue
        if kind in "[{":
            depth += 1
            if depth > MAX_JSON_DEPTH:
                loads_bounded(text[: match.end()], label)  # raises the codec's own "nested deeper" error
            continue
        if kind in "]}":
            depth -= 1
            if depth:
                continue
        elif depth != 1:
            continue  # a comma inside an item
        item = text[item_start: match.start()]
        if kind == "," or index or item.strip():  # `[]` holds no item; `[1,]` an empty one (an error)
            line += text.count("\n", counted, item_start)
            counted = item_start
            value = loads_bounded(item, label, line)
            yield Record(index, line + item.count("\n", 0, len(item) - len(item.lstrip())), value)
            index += 1
        if kind == ",":
            item_start = match.end()
            continue
        extra = _SPACE.match(text, match.end()).end()
        if extra < len(text):
            line += text.count("\n", counted, extra)
            raise IngestError(f"{label}:{line}: not valid JSON (more data after the list's closing bracket)")
        if not index:
            raise IngestError(f"{label}: expected a JSON list of questions, got an empty list")
        return
    loads_bounded(text[item_start:], label, line + text.count("\n", counted, item_start))  # a cut-short item
    last = line + text.count("\n", counted, len(text.rstrip()))  # the last line with text on it
    raise IngestError(f"{label}:{last}: not valid JSON (the file ends before the list is closed; is it cut short?)")
