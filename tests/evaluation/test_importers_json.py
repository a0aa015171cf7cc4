"""Dataset files are read one question at a time, with every hostile-input problem reported by line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.errors import IngestError
from engine.evaluation.importers_json import read_records

ITEMS = [{"id": "a", "n": [1, {"x": "[,]"}]}, {"id": "b", "text": "a \"quoted\" } and ] inside"}, {"id": "c"}]


def _file(tmp_path: Path, text: str | bytes, name: str = "data.json") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text, encoding="utf-8")
    return path


def _read(path: Path, json_lines: bool = False) -> list[tuple[int, int, object]]:
    return [(r.index, r.line, r.value) for r in read_records(path, json_lines=json_lines)]


def _error(path: Path, json_lines: bool = False) -> str:
    with pytest.raises(IngestError) as caught:
        _read(path, json_lines)
    return str(caught.value)


def test_a_json_list_yields_each_item_with_the_line_it_starts_on(tmp_path):
    text = "[\n" + ",\n\n".join(json.dumps(item) for item in ITEMS) + "\n]\n"
    assert _read(_file(tmp_path, text)) == [(0, 2, ITEMS[0]), (1, 4, ITEMS[1]), (2, 6, ITEMS[2])]


def test_a_one_line_list_and_a_pretty_printed_one_read_the_same(tmp_path):
    flat = [v for _, _, v in _read(_file(tmp_path, json.dumps(ITEMS), "flat.json"))]
    pretty = [v for _, _, v in _read(_file(tmp_path, json.dumps(ITEMS, indent=2), "pretty.json"))]
    assert flat == pretty == ITEMS


def test_json_lines_are_read_one_object_per_line_skipping_blank_lines(tmp_path):
    path = _file(tmp_path, "\ufeff" + json.dumps(ITEMS[0]) + "\n\n" + json.dumps(ITEMS[1]) + "\n", "d.jsonl")
    assert _read(path, json_lines=True) == [(0, 1, ITEMS[0]), (1, 3, ITEMS[1])]


def test_a_list_is_accepted_where_json_lines_are(tmp_path):
    assert [v for _, _, v in _read(_file(tmp_path, " \n" + json.dumps(ITEMS)), json_lines=True)] == ITEMS


def test_items_are_decoded_lazily_so_a_reader_that_stops_never_sees_later_damage(tmp_path):
    records = read_records(_file(tmp_path, '[{"id": "a"}, {"id": "b"}, {"id": oops}]'), json_lines=False)
    assert [next(records).value, next(records).value] == [{"id": "a"}, {"id": "b"}]
    with pytest.raises(IngestError, match=r":1: not valid JSON"):
        next(records)


@pytest.mark.parametrize("text, words", [
    ('[\n{"id": "a"},\n{"id": "b", "n": [1, 2', ":3: not valid JSON"),             # cut inside an item
    ('[\n{"id": "a"},\n{"id": "b"}\n', ":3: not valid JSON (the file ends before the list is closed"),
    ('[{"id": "a"},\n]', ":2: not valid JSON (Expecting value"),                 # trailing comma
    ('[{"id": "a"}]\n{"id": "b"}', ":2: not valid JSON (more data after the list's closing bracket)"),
    ('[{"id": "a"]}', ":1: not valid JSON"),                                      # brackets crossed
    ("[" * 100_000 + "]" * 100_000, ":1: nested deeper than 64 levels"),
    ('[{"id": 1},\n{"n": -' + "9" * 5000 + "}]", ":2: integer with 5000 digits"),
    ('[{"id": "\\udfff"}]', ":1: a string contains a lone UTF-16 surrogate"),
])
def test_hostile_or_broken_lists_are_refused_with_their_line(tmp_path, text, words):
    path = _file(tmp_path, text)
    assert _error(path).startswith(f"{path}{words}")


@pytest.mark.parametrize("text, words", [
    ('{"id": "a"}\n{"id": "b", "n": [1,', ":2: not valid JSON"),                  # last line cut short
    ('{"id": "a"}\n\n' + "[" * 70 + "]" * 70, ":3: nested deeper than 64 levels"),
    ('{"id": "a"}\n{"n": ' + "1" * 19 + "}", ":2: integer with 19 digits"),
])
def test_hostile_or_broken_json_lines_are_refused_with_their_line(tmp_path, text, words):
    path = _file(tmp_path, text, "d.jsonl")
    assert _error(path, json_lines=True).startswith(f"{path}{words}")


@pytest.mark.parametrize("text, json_lines, message", [
    ("[]", False, "expected a JSON list of questions, got an empty list"),
    ('{"data": []}', False, "expected a JSON list of questions, got dict"),
    ("\n\n", True, "no questions: expected one JSON object per line"),
])
def test_a_file_without_questions_is_refused(tmp_path, text, json_lines, message):
    path = _file(tmp_path, text)
    assert _error(path, json_lines) == f"{path}: {message}"


def test_bytes_that_are_not_utf8_are_refused_with_their_line_in_json_lines(tmp_path):
    path = _file(tmp_path, b'{"id": "a"}\n{"id": "\xff"}\n', "d.jsonl")
    assert _error(path, json_lines=True) == f"{path}:2: not UTF-8 text (invalid start byte at byte 8)"
