"""CSV rows as documents (CSVLoader columns), JSON items by a jq-like path, and a folder glob, read from
real files through ingest_paths; each error path says what to fix."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from engine.errors import IngestError, PackError
from engine.knowledge.ingest import IngestOptions, ingest_paths
from engine.knowledge.structured import select

PEOPLE = ("title,body,year\n"
          "Ada Lovelace,\"Ada Lovelace wrote the first program, in 1843.\",1843\n"
          "Charles Babbage,Charles Babbage designed the Analytical Engine.,1837\n")


def _write(folder: Path, name: str, text: str) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")
    return path


def _error(paths: list[Path], **options) -> str:
    with pytest.raises(IngestError) as caught:
        ingest_paths(paths, "p", options=IngestOptions(**options))
    return str(caught.value)


def test_csv_rows_become_documents_of_the_chosen_columns_titled_by_a_title_column(tmp_path):
    path = _write(tmp_path, "people.csv", PEOPLE)
    pack = ingest_paths([path], "p", options=IngestOptions(csv_columns=("body",), csv_metadata=("title",)))
    assert [(d.id, d.title, d.text) for d in pack.documents] == [
        ("people-csv-1", "Ada Lovelace", "body: Ada Lovelace wrote the first program, in 1843."),
        ("people-csv-2", "Charles Babbage", "body: Charles Babbage designed the Analytical Engine.")]
    assert not pack.triples


def test_csv_rows_without_a_title_column_are_titled_by_file_and_row(tmp_path):
    pack = ingest_paths([_write(tmp_path, "people.csv", PEOPLE)], "p",
                        options=IngestOptions(csv_columns=("body", "year")))
    assert [d.title for d in pack.documents] == ["people row 1", "people row 2"]
    assert pack.documents[1].text == "body: Charles Babbage designed the Analytical Engine.\nyear: 1837"


def test_without_csv_columns_a_csv_still_holds_triples(tmp_path):
    path = _write(tmp_path, "facts.csv", "head,relation,tail\nAda,born_in,London\n")
    text = _write(tmp_path, "ada.txt", "Ada was born in London.")
    assert [t.tail for t in ingest_paths([path, text], "p").triples] == ["London"]


def test_a_csv_column_that_is_not_in_the_header_is_named(tmp_path):
    path = _write(tmp_path, "people.csv", PEOPLE)
    assert "people.csv:1: no column 'text', 'author'; the header has 'title,body,year'" in _error(
        [path], csv_columns=("text",), csv_metadata=("author",))


def test_a_binary_csv_is_refused_before_csvloader_reads_it(tmp_path):
    path = tmp_path / "people.csv"
    path.write_bytes(b"title,body\x00\x01\x02")
    assert "looks like a binary file, not text" in _error([path], csv_columns=("body",))


def test_json_items_selected_by_a_path_give_text_and_titles(tmp_path):
    data = {"items": [{"title": "Curie", "text": "Marie Curie won two Nobel prizes."},
                      {"title": "Noether", "text": "Emmy Noether proved a theorem on symmetry."}]}
    path = _write(tmp_path, "items.json", json.dumps(data))
    pack = ingest_paths([path], "p", options=IngestOptions(json_path=".items[]"))
    assert [(d.id, d.title) for d in pack.documents] == [("items-json-1", "Curie"), ("items-json-2", "Noether")]
    strings = ingest_paths([path], "p", options=IngestOptions(json_path=".items[].text")).documents
    assert [d.title for d in strings] == ["items item 1", "items item 2"]


def test_a_json_file_without_a_path_is_refused_with_the_way_to_read_it(tmp_path):
    path = _write(tmp_path, "items.json", "[]")
    assert "unsupported file type '.json'" in _error([path]) and "(.json with a JSON path)" in _error([path])


@pytest.mark.parametrize(("content", "path", "message"), [
    ('{"items": [{"body": "x"}]}', ".items[]", "item 1 has no 'text' string (it has 'body'); point the path at"),
    ('{"items": []}', ".items[]", "the path '.items[]' selects no text"),
    ('{"items": [1, 2', ".items[]", "items.json:1:"),
    ('{"items": []}', "items", "JSON path 'items' must start with '.'"),
    ('{"items": []}', ".items[x]", "cannot read '[x]' at character 7"),
])
def test_each_json_problem_is_named(tmp_path, content, path, message):
    assert message in _error([_write(tmp_path, "items.json", content)], json_path=path)


def test_the_json_path_selector_walks_fields_lists_and_quoted_keys():
    data = {"a": [{"b": 1}, {"b": 2}, {"c": 3}], "x y": {"z": [4, 5]}}
    assert select(data, ".a[].b") == [1, 2]
    assert select(data, '."x y".z[1]') == [5]
    assert select(data, ".") == [data]
    assert select(data, ".a[5]") == [] and select(data, ".missing") == []


def test_a_path_selecting_too_many_items_is_refused():
    with pytest.raises(PackError, match=r"selects more than 10 items; narrow it"):
        select(list(range(11)), ".[]", limit=10)


def test_a_folder_glob_reads_only_matching_files_with_our_readers(tmp_path):
    folder = tmp_path / "notes"
    _write(folder, "a.txt", "Plain text about Ada.")
    _write(folder, "sub/b.md", "# Babbage\n\nMarkdown about Babbage.")
    _write(folder, "sub/c.html", "<html><head><title>Curie</title></head><body><p>Curie in Paris.</p></body></html>")
    _write(folder, "skip.tsv", "Ada\tborn_in\tLondon\n")
    titles = sorted(d.title for d in ingest_paths([folder], "p").documents)
    assert titles == ["Babbage", "Curie", "a"]
    assert [d.title for d in ingest_paths([folder], "p", glob="*.md").documents] == ["Babbage"]
    assert sorted(d.title for d in ingest_paths([folder], "p", glob="sub/*").documents) == ["Babbage", "Curie"]
    assert len(ingest_paths([folder], "p", glob="**/*.html").pages) == 1  # the hybrid method's raw page is kept


def test_a_glob_that_matches_nothing_is_refused_with_an_example(tmp_path):
    _write(tmp_path / "notes", "a.txt", "text")
    with pytest.raises(IngestError, match=r"no file matches '\*.pdf'; check the pattern"):
        ingest_paths([tmp_path / "notes"], "p", glob="*.pdf")
