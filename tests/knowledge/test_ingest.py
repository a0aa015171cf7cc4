"""Ingestion turns text, Markdown, HTML, PDF, JSONL and triple files into a pack, or says what is wrong."""

from __future__ import annotations

import io
import json
import os
import socket
import threading
from pathlib import Path

import pytest
from pypdf import PdfReader, PdfWriter

from engine.errors import IngestError
from engine.knowledge import ingest
from engine.knowledge.ingest import READERS, ingest_paths, split_text
from engine.knowledge.loader import MAX_LINE_CHARS, load_pack
from engine.knowledge.records import Triple
from engine.knowledge.writer import write_pack
from pdf_file import pdf_bytes as _pdf_bytes


def _encrypted(pdf: bytes) -> bytes:
    writer = PdfWriter(clone_from=PdfReader(io.BytesIO(pdf)))
    writer.encrypt("secret", algorithm="RC4-128")  # RC4 needs no optional crypto package
    buffer = io.BytesIO()
    writer.write(buffer)
    return buffer.getvalue()


def _write(folder: Path, name: str, content: str | bytes) -> Path:
    path = folder / name
    path.parent.mkdir(parents=True, exist_ok=True)
    if isinstance(content, bytes):
        path.write_bytes(content)
    else:
        path.write_text(content, encoding="utf-8")
    return path


def _error(paths: list[Path], **kwargs) -> str:
    with pytest.raises(IngestError) as caught:
        ingest_paths(paths, "test", **kwargs)
    return str(caught.value)


def _paragraphs(count: int, words: int) -> str:
    return "\n\n".join(" ".join(f"w{p}x{i}" for i in range(words)) + "." for p in range(count))


# --- text and Markdown ------------------------------------------------------------------------

def test_a_markdown_file_takes_its_title_from_the_first_heading(tmp_path):
    path = _write(tmp_path, "curie.md", "Intro line.\n\n# Marie Curie\n\nShe was born in Warsaw.\n")
    pack = ingest_paths([path], "notes")
    assert [(d.id, d.title) for d in pack.documents] == [("curie-md-1", "Marie Curie")]
    assert pack.info.name == "notes"


def test_a_text_file_without_heading_is_titled_by_its_file_name(tmp_path):
    pack = ingest_paths([_write(tmp_path, "radium_notes.txt", "Radium glows.")], "notes")
    assert pack.documents[0].title == "radium notes"
    assert pack.documents[0].text == "Radium glows."


def test_script_in_a_text_file_is_kept_literally(tmp_path):
    text = "Before <script>alert(1)</script> after."
    pack = ingest_paths([_write(tmp_path, "x.md", text)], "notes")
    assert pack.documents[0].text == text


def test_a_long_file_is_split_at_blank_lines_into_numbered_parts(tmp_path):
    pack = ingest_paths([_write(tmp_path, "long.txt", _paragraphs(count=8, words=100))], "notes")
    assert [d.id for d in pack.documents] == ["long-txt-1", "long-txt-2", "long-txt-3", "long-txt-4"]
    assert [d.title for d in pack.documents][:2] == ["long (part 1)", "long (part 2)"]
    assert all(len(d.text.split()) <= 250 for d in pack.documents)
    assert all(d.text.count("\n\n") == 1 for d in pack.documents)  # whole paragraphs, two per part


def test_ids_are_stable_across_runs(tmp_path):
    path = _write(tmp_path, "long.txt", _paragraphs(count=8, words=100))
    assert ingest_paths([path], "a").documents == ingest_paths([path], "b").documents


def test_a_heading_starts_a_new_part_once_the_current_one_is_half_full():
    text = "# Title\n\n## One\n\n" + _paragraphs(1, 150) + "\n\n## Two\n\n" + _paragraphs(1, 60)
    parts = split_text("T", text)
    assert [p[1].splitlines()[0] for p in parts] == ["# Title", "## Two"]


def test_a_heading_is_never_left_alone_at_the_end_of_a_part():
    text = _paragraphs(1, 240) + "\n\n## Next\n\n" + _paragraphs(1, 40)
    parts = split_text("T", text)
    assert parts[1][1].startswith("## Next\n\n")


def test_one_huge_paragraph_is_split_by_sentences_within_the_budget():
    text = " ".join(f"Sentence {n} has five words." for n in range(200))
    parts = split_text("T", text)
    assert len(parts) == 4
    assert all(len(body.split()) <= 250 for _, body in parts)
    assert all(body.endswith("words.") for _, body in parts)


def test_a_text_file_that_is_not_utf8_is_refused_with_its_line(tmp_path):
    path = _write(tmp_path, "old.txt", "line one\ncaf\xe9\n".encode("latin-1"))
    assert f"{path}:2: not UTF-8 text" in _error([path])


def test_a_binary_file_with_a_text_suffix_is_refused(tmp_path):
    path = _write(tmp_path, "image.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00")
    assert "looks like a binary file" in _error([path])


# --- HTML -------------------------------------------------------------------------------------

PAGE = """<html><head><title>Curie facts</title><script>alert("x")</script></head><body>
<nav>Home | About</nav><main><h1>Marie Curie</h1><p>Physicist.</p>
<table><tr><th>Year</th><th>Prize</th></tr><tr><td>1903</td><td>Physics</td></tr></table></main>
</body></html>"""


def test_an_html_page_gives_its_main_text_with_tables_and_drops_script_and_nav(tmp_path):
    pack = ingest_paths([_write(tmp_path, "curie.html", PAGE)], "web")
    (doc,) = pack.documents
    assert (doc.id, doc.title) == ("curie-html-1", "Curie facts")
    assert "| Year | Prize |\n| --- | --- |\n| 1903 | Physics |" in doc.text
    assert "alert" not in doc.text and "Home" not in doc.text


def test_an_html_page_is_also_kept_raw_for_the_hybrid_method(tmp_path):
    pack = ingest_paths([_write(tmp_path, "curie.htm", PAGE)], "web")
    (page,) = pack.pages
    assert (page.id, page.title, page.html) == ("curie-htm", "Curie facts", PAGE)


def test_an_html_page_in_a_legacy_encoding_is_decoded_by_its_meta_charset(tmp_path):
    html = '<html><head><meta charset="windows-1252"></head><body><p>Caf\xe9 cr\xe8me</p></body></html>'
    pack = ingest_paths([_write(tmp_path, "old.html", html.encode("cp1252"))], "web")
    assert pack.documents[0].text == "Café crème"


def test_an_html_page_without_text_is_refused(tmp_path):
    path = _write(tmp_path, "empty.html", "<script>only()</script>")
    assert f"{path}: has no readable text" in _error([path])


# --- PDF --------------------------------------------------------------------------------------

def test_a_real_pdf_gives_its_text(tmp_path):
    path = _write(tmp_path, "paper.pdf", _pdf_bytes(["Polonium was discovered in 1898.", "By the Curies."]))
    (doc,) = ingest_paths([path], "pdfs").documents
    assert (doc.id, doc.title) == ("paper-pdf-1", "paper")
    assert doc.text.split() == "Polonium was discovered in 1898. By the Curies.".split()


def test_a_pdf_suffix_on_something_else_is_refused(tmp_path):
    path = _write(tmp_path, "fake.pdf", "<html>not a pdf</html>")
    assert f"{path}: is not a PDF (no %PDF- header)" in _error([path])


def test_an_encrypted_pdf_is_refused(tmp_path):
    path = _write(tmp_path, "locked.pdf", _encrypted(_pdf_bytes(["Secret."])))
    assert f"{path}: is encrypted with a password" in _error([path])


def test_a_corrupt_pdf_is_refused_with_the_file_named(tmp_path):
    path = _write(tmp_path, "broken.pdf", b"%PDF-1.4\n" + b"\x00garbage" * 50)
    message = _error([path])
    assert message.startswith(f"{path}: ")
    assert "cannot be read as a PDF" in message


def test_a_pdf_without_a_text_layer_is_refused(tmp_path):
    writer = PdfWriter()
    writer.add_blank_page(width=200, height=200)
    buffer = io.BytesIO()
    writer.write(buffer)
    path = _write(tmp_path, "scan.pdf", buffer.getvalue())
    assert "has no extractable text" in _error([path])


# --- JSONL ------------------------------------------------------------------------------------

def test_a_jsonl_file_keeps_its_own_ids_and_fields(tmp_path):
    records = [{"id": "a", "title": "A", "text": "alpha", "url": "https://x", "entities": ["E"], "x": 1},
               {"id": "b", "title": "B", "text": "beta"}]
    path = _write(tmp_path, "docs.jsonl", "\n".join(json.dumps(r) for r in records) + "\n\n")
    docs = ingest_paths([path], "j").documents
    assert [(d.id, d.url, d.entities) for d in docs] == [("a", "https://x", ("E",)), ("b", "", ())]


def test_bad_jsonl_records_are_reported_with_file_and_line(tmp_path):
    lines = ['{"id": "a", "title": "A", "text": "x"}', '{"id": "a", "title": "A", "text": "x"}',
             '{"id": "b", "title": "B"}', "{broken", '["not", "an", "object"]']
    path = _write(tmp_path, "docs.jsonl", "\n".join(lines))
    message = _error([path])
    assert f"{path}:2: duplicate id 'a' (first on line 1)" in message
    assert f"{path}:3: missing field 'text'" in message
    assert f"{path}:4: not valid JSON" in message
    assert f"{path}:5: expected a JSON object, got list" in message


def test_the_same_jsonl_id_in_two_files_is_reported(tmp_path):
    record = json.dumps({"id": "a", "title": "A", "text": "x"})
    first, second = _write(tmp_path, "one.jsonl", record), _write(tmp_path, "two.jsonl", record)
    assert f"{second}: duplicate document id 'a' (also in {first})" in _error([first, second])


# --- triples ----------------------------------------------------------------------------------

def test_csv_triples_skip_the_header_and_honour_quoting(tmp_path):
    csv_text = 'head,relation,tail\n"Curie, Marie",born_in,Warsaw\nWarsaw,capital_of,Poland,1596\n'
    pack = ingest_paths([_write(tmp_path, "kg.csv", csv_text), _write(tmp_path, "a.txt", "doc")], "kg")
    assert pack.triples == (Triple("Curie, Marie", "born_in", "Warsaw"),
                            Triple("Warsaw", "capital_of", "Poland", "1596"))


def test_tsv_triples_skip_comments_and_blank_lines(tmp_path):
    tsv = "# a comment\n\nA\tr\tB\nB\tr\tC\t2020\n"
    pack = ingest_paths([_write(tmp_path, "kg.tsv", tsv), _write(tmp_path, "a.txt", "doc")], "kg")
    assert pack.triples == (Triple("A", "r", "B"), Triple("B", "r", "C", "2020"))


@pytest.mark.parametrize("name,content", [("kg.csv", "head,relation,tail\nA,r,B\nA,r\n"),
                                          ("kg.tsv", "head\trelation\ttail\nA\tr\tB\nA\tr\n")])
def test_a_triple_row_with_two_fields_is_reported_with_file_and_line(tmp_path, name, content):
    path = _write(tmp_path, name, content)
    doc = _write(tmp_path, "a.txt", "doc")
    assert f"{path}:3: expected 3 or 4 fields (head, relation, tail[, time]), got 2" in _error([path, doc])


def test_tabs_inside_csv_fields_become_spaces_so_triples_tsv_stays_valid(tmp_path):
    path = _write(tmp_path, "kg.csv", '"A\tB",r,"C\nD"\n')
    pack = ingest_paths([path, _write(tmp_path, "a.txt", "doc")], "kg")
    assert pack.triples == (Triple("A B", "r", "C D"),)


def test_triples_alone_are_not_a_pack(tmp_path):
    path = _write(tmp_path, "kg.tsv", "A\tr\tB\n")
    assert "no documents found" in _error([path])


# --- files, folders and limits ----------------------------------------------------------------

def test_a_folder_is_read_recursively_in_sorted_order_skipping_hidden_files(tmp_path):
    _write(tmp_path, "docs/b.txt", "bee")
    _write(tmp_path, "docs/a.md", "ay")
    _write(tmp_path, "docs/sub/c.txt", "sea")
    _write(tmp_path, "docs/.DS_Store", b"\x00\x01")
    _write(tmp_path, "docs/.git/config", "[core]")
    pack = ingest_paths([tmp_path / "docs"], "dir")
    assert [d.text for d in pack.documents] == ["ay", "bee", "sea"]


def test_files_with_the_same_name_in_different_folders_get_unique_ids(tmp_path):
    one, two = _write(tmp_path, "x/notes.txt", "one"), _write(tmp_path, "y/notes.txt", "two")
    assert [d.id for d in ingest_paths([one, two], "dup").documents] == ["notes-txt-1", "notes-txt-2-1"]


def test_the_same_file_named_twice_is_read_once(tmp_path):
    path = _write(tmp_path, "a.txt", "once")
    assert len(ingest_paths([path, tmp_path / "." / "a.txt"], "dup").documents) == 1


def test_an_unknown_suffix_is_refused_with_the_allowed_ones(tmp_path):
    path = _write(tmp_path, "report.docx", b"PK\x03\x04")
    message = _error([path])
    assert f"{path}: unsupported file type '.docx'; allowed: " in message
    assert all(suffix in message for suffix in READERS)


def test_a_missing_file_is_refused(tmp_path):
    assert f"{tmp_path / 'ghost.txt'}: no such file or folder" in _error([tmp_path / "ghost.txt"])


def test_a_file_over_the_size_limit_is_refused_before_it_is_read(tmp_path):
    path = _write(tmp_path, "big.txt", "x" * 2_000)
    assert f"{path}: 2,000 bytes is over the limit of 1,000 bytes" in _error([path], max_bytes=1_000)


def test_an_empty_folder_gives_a_clear_error(tmp_path):
    (tmp_path / "empty").mkdir()
    assert "no documents found" in _error([tmp_path / "empty"])


def test_an_empty_pack_name_is_refused(tmp_path):
    with pytest.raises(IngestError, match="pack name is empty"):
        ingest_paths([_write(tmp_path, "a.txt", "x")], "  ")


def test_problems_in_several_files_are_reported_together_and_nothing_is_returned(tmp_path):
    good = _write(tmp_path, "good.txt", "fine")
    fake = _write(tmp_path, "fake.pdf", "nope")
    odd = _write(tmp_path, "odd.xyz", "?")
    message = _error([good, fake, tmp_path / "ghost.md", odd])
    assert len(message.splitlines()) == 3
    assert str(fake) in message and "ghost.md" in message and str(odd) in message


def test_an_ingested_pack_writes_and_loads_back(tmp_path):
    files = [_write(tmp_path, "in/long.md", "# Long\n\n" + _paragraphs(6, 100)),
             _write(tmp_path, "in/page.html", PAGE),
             _write(tmp_path, "in/paper.pdf", _pdf_bytes(["Radium glows."])),
             _write(tmp_path, "in/kg.tsv", "Radium\tdiscovered_by\tMarie Curie\n")]
    pack = ingest_paths([tmp_path / "in"], "mixed")
    loaded = load_pack(write_pack(pack, tmp_path / "out"))
    assert loaded.documents == pack.documents
    assert loaded.triples == pack.triples
    assert loaded.pages == pack.pages
    assert len({d.id for d in loaded.documents}) == len(files) - 1 + 2  # long.md has three parts


# --- hostile and careless input (issue 15) ----------------------------------------------------

def _quick(function, *args, seconds: float = 60.0, **kwargs):
    """Call `function` in a daemon thread: a hang (a FIFO, a quadratic loop) fails the test instead of blocking it.
    `seconds` only stops a hang; it is no budget (issue 24: a loaded machine must not fail the suite)."""
    outcome: dict[str, object] = {}

    def run() -> None:
        try:
            outcome["value"] = function(*args, **kwargs)
        except Exception as exc:  # noqa: BLE001 — handed back to the test below
            outcome["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(seconds)
    assert not thread.is_alive(), f"{function.__name__} still running after {seconds} s"
    if "error" in outcome:
        raise outcome["error"]  # type: ignore[misc]
    return outcome["value"]


def test_a_wide_markdown_table_repeats_its_header_only_while_that_is_cheap():
    # A 4 MB wide table once became > 6 GB: its 400-word header was repeated before every single word.
    header = "| " + " | ".join(f"h{i}" for i in range(200)) + " |"
    rule = "|" + "---|" * 200
    row = "| " + " | ".join("x" for _ in range(200)) + " |"
    table = "\n".join([header, rule, *[row] * 2_500])  # 1 MB
    parts = _quick(split_text, "T", table)
    assert sum(len(body) for _, body in parts) <= 2 * len(table)
    assert parts[0][1].startswith("| h0 | h1 |") and not parts[1][1].startswith("| h0 |")


def test_a_narrow_markdown_table_still_repeats_its_header_in_every_piece():
    table = "\n".join(["| k | v |", "|---|---|", *[f"| key{i} | value{i} |" for i in range(300)]])
    parts = split_text("T", table)
    assert len(parts) > 1 and all(body.startswith("| k | v |\n|---|---|\n") for _, body in parts)


def test_heading_only_markdown_is_split_in_linear_time():
    text = "\n".join(f"## heading {i}" for i in range(50_000))  # > 120 s before
    parts = _quick(split_text, "T", text)
    assert sum(len(body) for _, body in parts) <= len(text)


@pytest.mark.parametrize("line", ["# " + "#" * 50_000 + "x", "# a" + " " * 50_000 + "b", "#" + " #" * 50_000 + "x"])
def test_a_pathological_heading_line_is_read_in_linear_time(tmp_path, line):
    path = _write(tmp_path, "odd.md", line + "\n\nBody text.")
    (doc, *_) = _quick(ingest_paths, [path], "notes").documents
    assert len(doc.title.removesuffix(" (part 1)")) <= ingest.MAX_TITLE_CHARS


def test_a_line_without_spaces_becomes_parts_that_each_fit_a_line_of_the_written_pack(tmp_path):
    path = _write(tmp_path, "blob.txt", "\x01" * 1_200_000)  # escaped as \u0001: 7 MB of JSON in one document
    pack = _quick(ingest_paths, [path], "blob")
    assert all(len(d.text) <= ingest.MAX_PART_CHARS for d in pack.documents)
    assert load_pack(write_pack(pack, tmp_path / "out")).documents == pack.documents


def test_a_jsonl_line_longer_than_the_loader_reads_is_a_problem_with_file_and_line(tmp_path):
    record = json.dumps({"id": "big", "title": "Big", "text": "x" * MAX_LINE_CHARS})
    path = _write(tmp_path, "docs.jsonl", '{"id": "a", "title": "A", "text": "x"}\n' + record + "\n")
    assert f"{path}:2: line longer than {MAX_LINE_CHARS:,} bytes" in _error([path])


def test_closing_hashes_of_a_heading_are_not_part_of_the_title(tmp_path):
    path = _write(tmp_path, "t.md", "# Radium ##  \n\nGlows.")
    assert ingest_paths([path], "notes").documents[0].title == "Radium"


def test_hostile_html_is_ingested_in_linear_time(tmp_path):
    row = "<tr>" + '<td colspan="100" rowspan="100">abc</td>' * 20 + "</tr>"
    path = _write(tmp_path, "spans.html", "<table>" + row * 100 + "</table>" + "<!--" * 50_000)
    pack = _quick(ingest_paths, [path], "web")
    assert sum(len(d.text) for d in pack.documents) <= 5 * path.stat().st_size


@pytest.mark.parametrize(("line", "problem"), [
    ("[" * 100_000 + "]" * 100_000, "nested deeper than"),
    ('{"id": "a", "title": "A", "text": "x", "n": ' + "9" * 5_000 + "}", "integer with 5000 digits"),
    ('{"id": "a", "title": "A", "text": "\\ud800"}', "lone UTF-16 surrogate"),
])
def test_a_hostile_jsonl_record_is_a_problem_with_file_and_line(tmp_path, line, problem):
    path = _write(tmp_path, "docs.jsonl", '{"id": "ok", "title": "T", "text": "fine"}\n' + line + "\n")
    message = _quick(_error, [path])
    assert f"{path}:2: " in message and problem in message


def test_invalid_utf8_in_jsonl_is_a_problem_with_file_and_line(tmp_path):
    path = _write(tmp_path, "docs.jsonl", b'{"id": "a", "title": "A", "text": "x"}\n{"id": "b\xff"}\n')
    assert f"{path}:2: not UTF-8 text" in _error([path])


def test_a_jsonl_string_may_hold_a_unicode_line_separator(tmp_path):
    path = _write(tmp_path, "docs.jsonl", '{"id": "a", "title": "A", "text": "one\u2028two"}\n')
    assert ingest_paths([path], "j").documents[0].text == "one\u2028two"


def test_lone_surrogates_from_a_pdf_text_layer_become_replacement_characters(tmp_path):
    path = _write(tmp_path, "broken.pdf", _pdf_with_unicode_map(b"D800"))  # pypdf decodes with surrogatepass
    pack = ingest_paths([path], "pdfs")
    assert pack.documents[0].text == "\ufffdB"
    assert load_pack(write_pack(pack, tmp_path / "out")).documents == pack.documents


def _pdf_with_unicode_map(code: bytes) -> bytes:
    """A PDF showing "AB" whose ToUnicode map sends "A" to the UTF-16 code unit `code`."""
    return _pdf_bytes(["AB"], b"/CIDInit /ProcSet findresource begin 12 dict begin begincmap /CMapName /X def "
                              b"1 begincodespacerange <00> <FF> endcodespacerange 1 beginbfchar <41> <" + code +
                              b"> endbfchar endcmap CMapName currentdict /CMap defineresource pop end end")


# --- only regular files, only inside the folder, size-capped (issue 15) --------------------------

def test_links_pipes_and_devices_in_a_folder_are_skipped_with_a_warning(tmp_path, caplog):
    folder = tmp_path / "in"
    _write(folder, "real.txt", "Real notes.")
    secret = _write(tmp_path, "secret.txt", "outside the folder")
    (folder / "passwd.txt").symlink_to(secret)
    (folder / "inner.txt").symlink_to(folder / "real.txt")
    (folder / "zero.txt").symlink_to("/dev/null")
    (folder / "linked").symlink_to(tmp_path, target_is_directory=True)
    os.mkfifo(folder / "pipe.txt")  # reading it would block forever
    pack = _quick(ingest_paths, [folder], "safe")
    assert [d.text for d in pack.documents] == ["Real notes."]
    for name in ("passwd.txt", "inner.txt", "zero.txt", "linked"):
        assert f"{folder / name}: skipped, a symbolic link" in caplog.text
    assert f"{folder / 'pipe.txt'}: skipped, a named pipe" in caplog.text


def test_a_socket_in_a_folder_is_skipped(tmp_path, caplog):
    _write(tmp_path, "a.txt", "Text.")
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(tmp_path / "s.txt"))
        assert [d.text for d in _quick(ingest_paths, [tmp_path], "s").documents] == ["Text."]
    assert "s.txt: skipped, a socket" in caplog.text


@pytest.mark.parametrize("device", ["/dev/zero", "/dev/null"])
def test_a_device_named_directly_is_refused_not_read(device):
    assert f"{device}: a device, not a regular file" in _quick(_error, [Path(device)])


def test_a_pipe_named_directly_is_refused_not_waited_on(tmp_path):
    os.mkfifo(tmp_path / "pipe.txt")
    assert "pipe.txt: a named pipe, not a regular file" in _quick(_error, [tmp_path / "pipe.txt"])


def test_a_pipe_swapped_in_after_the_folder_was_listed_is_refused_not_waited_on(tmp_path, monkeypatch):
    os.mkfifo(tmp_path / "pipe.txt")
    regular = (tmp_path / "listed-as.txt")
    regular.write_text("x")
    monkeypatch.setattr(ingest, "_listed", lambda path, root, is_wanted: regular.stat())  # as if it was a file then
    assert "pipe.txt: a named pipe, not a regular file" in _quick(_error, [tmp_path])


def test_a_link_the_user_names_directly_is_followed(tmp_path):
    real = _write(tmp_path, "real.txt", "Named on purpose.")
    (tmp_path / "link.txt").symlink_to(real)
    assert ingest_paths([tmp_path / "link.txt"], "l").documents[0].text == "Named on purpose."


def test_files_together_over_the_total_limit_are_refused_before_any_is_read(tmp_path):
    paths = [_write(tmp_path, "a.txt", "x" * 600), _write(tmp_path, "b.txt", b"\xff" * 600)]  # b is not UTF-8
    message = _error(paths, max_total_bytes=1_000)
    assert message == "2 files hold 1,200 bytes, over the total limit of 1,000 bytes; ingest fewer files at a " \
                      "time or raise the limit"


@pytest.mark.skipif(not Path("/proc/self/status").is_file(), reason="needs Linux /proc")
def test_a_file_larger_than_its_listed_size_is_cut_at_the_limit(tmp_path):
    # /proc files list a size of 0 whatever they hold, as a file still being written may.
    (tmp_path / "status.txt").symlink_to("/proc/self/status")
    message = _error([tmp_path / "status.txt"], max_bytes=100)
    assert "status.txt: is over the limit of 100 bytes" in message and "more than its listed size" in message


def test_a_pack_name_that_cannot_name_a_folder_is_refused(tmp_path):
    with pytest.raises(IngestError, match="pack name '../x' is not allowed"):
        ingest_paths([_write(tmp_path, "a.txt", "x")], "../x")


def test_a_folder_swapped_for_a_link_during_the_walk_is_not_followed_outside(tmp_path, monkeypatch, caplog):
    outside = tmp_path / "outside"
    _write(outside, "secret.txt", "not yours")
    folder = tmp_path / "in"
    _write(folder, "a.txt", "Text.")
    (folder / "sub").symlink_to(outside, target_is_directory=True)
    walked = [(str(folder), [], ["a.txt"]), (str(folder / "sub"), [], ["secret.txt"])]  # as if "sub" was a folder
    monkeypatch.setattr(ingest.os, "walk", lambda top, onerror: iter(walked))
    assert [d.text for d in ingest_paths([folder], "w").documents] == ["Text."]
    assert f"{folder / 'sub' / 'secret.txt'}: skipped, it resolves outside {folder}" in caplog.text


@pytest.mark.parametrize("data", [b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", b"\x00" * 100, b"<p>a</p>\x00\x01\x02"])
def test_a_binary_file_named_html_is_refused(tmp_path, data):
    assert "looks like a binary file" in _error([_write(tmp_path, "image.html", data)])


def test_a_utf16_page_with_a_bom_is_still_read(tmp_path):
    path = _write(tmp_path, "wide.html", "<p>Caf\u00e9 in UTF-16.</p>".encode("utf-16"))
    assert ingest_paths([path], "web").documents[0].text == "Café in UTF-16."


def test_a_web_page_over_its_own_limit_is_refused_before_it_is_parsed(tmp_path, monkeypatch):
    monkeypatch.setattr(ingest, "MAX_HTML_BYTES", 1_000)
    path = _write(tmp_path, "big.html", "<p>x</p>" * 200)
    assert f"{path}: 1,600 bytes is over the limit of 1,000 bytes for a web page" in _error([path])
