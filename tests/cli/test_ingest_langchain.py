"""`python -m engine ingest` with LangChain loaders, splitters, CSV columns and JSON paths: packs that load,
and exit 2 with a message for options that do not go together."""

from __future__ import annotations

import json

import pytest

from engine.cli import main
from engine.knowledge.loader import load_pack


def _ingest(capsys, *argv: str) -> tuple[int, str]:
    code = main(["ingest", *argv])
    out = capsys.readouterr()
    return code, out.out + out.err


def test_a_loader_with_arguments_and_a_splitter_writes_a_pack(tmp_path, capsys):
    notes = tmp_path / "notes.txt"
    notes.write_text("Ada Lovelace was born in London. " * 20, encoding="utf-8")
    out = tmp_path / "pack"
    code, text = _ingest(capsys, "--loader", "langchain_community.document_loaders:TextLoader",
                         "--loader-arg", f"file_path={notes}", "--splitter", "recursive", "--chunk-size", "100",
                         "--chunk-overlap", "0", "--out", str(out))
    pack = load_pack(out)
    assert code == 0 and f"wrote pack {out}: {len(pack.documents)} documents" in text
    assert len(pack.documents) > 3 and {d.splitter for d in pack.documents} == {"recursive"}


def test_csv_columns_and_a_json_path_read_documents(tmp_path, capsys):
    (tmp_path / "people.csv").write_text("title,body\nAda,Ada wrote a program.\n", encoding="utf-8")
    (tmp_path / "items.json").write_text(json.dumps({"items": [{"text": "Curie won prizes."}]}), encoding="utf-8")
    code, _ = _ingest(capsys, str(tmp_path / "people.csv"), str(tmp_path / "items.json"), "--csv-columns", "body",
                      "--csv-metadata", "title", "--json-path", ".items[]", "--out", str(tmp_path / "pack"))
    assert code == 0
    assert [d.title for d in load_pack(tmp_path / "pack").documents] == ["Ada", "items item 1"]


def test_a_folder_glob_from_the_command_line(tmp_path, capsys):
    (tmp_path / "notes").mkdir()
    (tmp_path / "notes" / "a.md").write_text("# A\n\nText a.", encoding="utf-8")
    (tmp_path / "notes" / "b.txt").write_text("Text b.", encoding="utf-8")
    code, _ = _ingest(capsys, str(tmp_path / "notes"), "--glob", "*.md", "--out", str(tmp_path / "pack"))
    assert code == 0 and [d.title for d in load_pack(tmp_path / "pack").documents] == ["A"]


@pytest.mark.parametrize(("argv", "message"), [
    (["--loader", "m:f", "x.txt"], "give files or folders to ingest, or --loader MODULE:FACTORY, not both"),
    ([], "give files or folders to ingest, or --loader MODULE:FACTORY, not both or neither"),
    (["x.txt", "--chunk-size", "50"], "--chunk-size and --chunk-overlap need --splitter"),
    (["x.txt", "--csv-metadata", "title"], "--csv-metadata needs --csv-columns"),
    (["--loader", "no_such_module_h6:Loader"], "cannot import 'no_such_module_h6'"),
    (["x.txt", "--splitter", "tokens", "--chunk-size", "9999"], "outside 1–256 word pieces"),
])
def test_options_that_do_not_fit_exit_2_with_a_message(tmp_path, capsys, argv, message):
    (tmp_path / "x.txt").write_text("Some text.", encoding="utf-8")
    argv = [str(tmp_path / a) if a == "x.txt" else a for a in argv]
    code, text = _ingest(capsys, *argv, "--out", str(tmp_path / "pack"))
    assert code == 2 and message in text and not (tmp_path / "pack").exists()


def test_an_unknown_splitter_is_refused_by_the_parser(tmp_path, capsys):
    with pytest.raises(SystemExit) as caught:
        main(["ingest", "x.txt", "--splitter", "words", "--out", str(tmp_path / "pack")])
    assert caught.value.code == 2 and "invalid choice: 'words'" in capsys.readouterr().err
