"""Building a pack from browser uploads: safe names, limits, every problem listed, nothing half written."""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.errors import IngestError
from engine.knowledge.loader import load_pack
from engine.knowledge.uploads import (
    MAX_NAME_BYTES,
    Upload,
    build_pack_from_uploads,
    pack_name_problem,
    safe_file_name,
    save_uploads,
    upload_problem,
)

NOTE = Upload("notes.md", b"# Hedy Lamarr\n\nHedy Lamarr co-invented frequency hopping.\n")


@pytest.mark.parametrize("name", ["../../etc/passwd.md", "/abs/x.md", "..\\evil.txt", "a/b.md", "..", ".", "",
                                  "x\x00.md"])
def test_names_that_carry_a_folder_path_are_refused(name):
    with pytest.raises(ValueError, match="folder path"):
        safe_file_name(name)


@pytest.mark.parametrize(("given", "safe"), [
    ("notes.md", "notes.md"),
    ("My Notes (v2).MD", "My Notes (v2).md"),
    (".hidden.txt", "hidden.txt"),
    ("we$ird<>|name?.txt", "we_ird_name_.txt"),
    ("tab\there.md", "tabhere.md"),
    ("Zürich.txt", "Zürich.txt"),
    (".md", "upload.md"),
])
def test_file_names_are_sanitised_to_plain_names(given, safe):
    assert safe_file_name(given) == safe


def test_long_names_keep_their_suffix():
    name = safe_file_name("a" * 500 + ".pdf")
    assert len(name) == MAX_NAME_BYTES and name.endswith(".pdf")


@pytest.mark.parametrize("stem", ["報告書" * 40, "é" * 150, "𠮷" * 60, "a" + "𠮷" * 60])  # 𠮷: four bytes
def test_long_non_ascii_names_are_cut_by_bytes_at_a_character_boundary(tmp_path, stem):
    # 119 CJK characters are 357 bytes, over the 255-byte limit of a file name: the upload crashed.
    name = safe_file_name(stem + ".md")
    assert len(name.encode()) <= MAX_NAME_BYTES and name.endswith(".md") and stem.startswith(name[:-3])
    assert save_uploads([Upload(stem + ".md", b"# T\n\nText.")], tmp_path)[0].name == name


def test_a_very_long_suffix_is_cut_as_part_of_the_name():
    name = safe_file_name("notes." + "x" * 300)
    assert len(name.encode()) <= MAX_NAME_BYTES and name.startswith("notes.xxx")


def test_a_119_character_cjk_upload_builds_a_pack(tmp_path):
    upload = Upload("関数" * 59 + "表.md", "# 関数\n\n関数の説明。".encode())
    target = build_pack_from_uploads([upload], "cjk", tmp_path, [])
    assert load_pack(target).documents[0].title == "関数"


def test_uploads_together_over_the_total_limit_are_refused_and_nothing_is_written(tmp_path):
    uploads = [Upload("a.txt", b"x" * 600), Upload("b.txt", b"y" * 600)]
    with pytest.raises(IngestError, match="2 files hold 1,200 bytes, over the limit of 1,000 bytes"):
        save_uploads(uploads, tmp_path, max_total_bytes=1_000)
    assert list(tmp_path.iterdir()) == []


def test_uploads_are_checked_for_type_size_and_emptiness():
    assert upload_problem(NOTE) == ""
    assert "unsupported file type '.exe'" in upload_problem(Upload("run.exe", b"MZ"))
    assert "over the limit of 10 bytes" in upload_problem(Upload("big.txt", b"x" * 11), max_bytes=10)
    assert "empty" in upload_problem(Upload("blank.txt", b""))


def test_saving_writes_only_inside_the_folder_under_distinct_names(tmp_path):
    paths = save_uploads([NOTE, Upload("notes.md", b"other"), Upload("Notes.md", b"third")], tmp_path)
    assert [p.name for p in paths] == ["notes.md", "notes-2.md", "Notes-3.md"]
    assert all(p.parent == tmp_path.resolve() for p in paths)
    assert paths[1].read_bytes() == b"other"


def test_saving_lists_every_refusal_and_writes_nothing(tmp_path):
    with pytest.raises(IngestError) as caught:
        save_uploads([NOTE, Upload("../x.md", b"x"), Upload("a.exe", b"x")], tmp_path)
    assert len(caught.value.problems) == 2
    assert list(tmp_path.iterdir()) == []


def test_nothing_uploaded_is_a_problem(tmp_path):
    with pytest.raises(IngestError, match="no files uploaded"):
        save_uploads([], tmp_path)


@pytest.mark.parametrize(("name", "problem"), [
    ("", "empty"), ("../up", "not allowed"), ("with space", "not allowed"), ("-dash", "not allowed"),
    ("x" * 65, "not allowed"), ("Demo", "already exists"), ("con", "reserved device name"),
])
def test_pack_names_must_be_plain_and_new(name, problem):
    assert problem in pack_name_problem(name, ["demo"])


def test_a_plain_new_pack_name_is_fine():
    assert pack_name_problem("my-notes_2", ["demo"]) == ""


def test_building_writes_a_loadable_pack_and_reports_progress(tmp_path):
    seen: list[float] = []
    target = build_pack_from_uploads([NOTE, Upload("facts.tsv", b"Hedy Lamarr\tborn_in\tVienna\n")], "hedy",
                                     tmp_path, ["demo"], progress=lambda f, _: seen.append(f))
    assert target == tmp_path / "hedy"
    pack = load_pack(target)
    assert [d.title for d in pack.documents] == ["Hedy Lamarr"] and len(pack.triples) == 1
    assert seen == sorted(seen) and seen[-1] == 1.0


def test_bad_content_names_the_uploaded_file_not_the_temp_copy_and_writes_nothing(tmp_path):
    bad = Upload("records.jsonl", b'{"id": "a", "title": "A"}\nnot json\n')
    with pytest.raises(IngestError) as caught:
        build_pack_from_uploads([NOTE, bad], "broken", tmp_path, [])
    problems = caught.value.problems
    assert problems[0].startswith("records.jsonl:1:") and problems[1].startswith("records.jsonl:2:")
    assert list(tmp_path.iterdir()) == []


def test_an_existing_folder_or_pack_name_is_refused_before_anything_is_read(tmp_path):
    (tmp_path / "taken").mkdir()
    for name, existing in (("taken", []), ("demo", ["demo"])):
        with pytest.raises(IngestError, match="already exists"):
            build_pack_from_uploads([NOTE], name, tmp_path, existing)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["taken"]


def test_a_missing_packs_folder_is_created(tmp_path: Path):
    target = build_pack_from_uploads([NOTE], "fresh", tmp_path / "home" / "packs", [])
    assert (target / "documents.jsonl").is_file()
