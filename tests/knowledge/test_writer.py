"""Writing a pack is atomic: it round-trips through the loader and never leaves a half-written folder."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from engine.errors import PackError
from engine.knowledge.loader import load_pack
from engine.knowledge.records import Document, Pack, PackInfo, Question
from engine.knowledge.writer import write_pack


def _same_content(a: Pack, b: Pack) -> None:
    assert a.info == b.info
    assert a.documents == b.documents
    assert a.triples == b.triples
    assert a.rules == b.rules
    assert a.questions == b.questions
    assert [q.extra for q in a.questions] == [q.extra for q in b.questions]
    assert a.pages == b.pages


def test_a_written_pack_loads_back_equal(make_pack, tmp_path):
    original = load_pack(make_pack())
    written = write_pack(original, tmp_path / "copy")
    _same_content(original, load_pack(written))


def test_an_in_memory_pack_with_unicode_and_markup_round_trips(tmp_path):
    pack = Pack(
        info=PackInfo(name="mem", title="Ünïcode", temporal=True),
        documents=(Document(id="d1", title="Ελληνικά", text="<script>x</script>\n\tline two"),),
        questions=(Question(id="q1", question="Was?", answers=("ja",), type="factoid",
                            supporting_docs=("d1",), query_time="2024-03-01",
                            extra={"level": "hard"}),),
    )
    _same_content(pack, load_pack(write_pack(pack, tmp_path / "mem")))


def test_writing_into_an_existing_non_empty_folder_raises_and_leaves_it_untouched(make_pack, tmp_path):
    target = tmp_path / "taken"
    target.mkdir()
    (target / "notes.txt").write_text("keep me", encoding="utf-8")
    with pytest.raises(PackError, match="already exists"):
        write_pack(load_pack(make_pack()), target)
    assert [p.name for p in target.iterdir()] == ["notes.txt"]
    assert (target / "notes.txt").read_text(encoding="utf-8") == "keep me"


def test_writing_into_an_existing_empty_folder_is_allowed(make_pack, tmp_path):
    target = tmp_path / "empty"
    target.mkdir()
    write_pack(load_pack(make_pack()), target)
    assert (target / "documents.jsonl").is_file()


def test_a_failure_during_writing_leaves_no_target_folder_and_no_temp_folder(make_pack, tmp_path):
    pack = load_pack(make_pack())
    # A set is not JSON-serialisable: the writer fails half way, after pack.json and documents.
    broken = replace(pack, questions=(replace(pack.questions[0], extra={"bad": {1, 2}}),))
    out = tmp_path / "out"
    out.mkdir()
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(TypeError):
        write_pack(broken, out / "new-pack")
    assert not (out / "new-pack").exists()
    assert sorted(p.name for p in out.iterdir()) == before


def test_the_written_folder_holds_only_the_files_the_pack_needs(tmp_path):
    pack = Pack(info=PackInfo(name="min"), documents=(Document(id="d", title="T", text="x"),))
    written = write_pack(pack, tmp_path / "min")
    assert sorted(p.name for p in Path(written).iterdir()) == ["documents.jsonl", "pack.json"]


def test_a_copied_pack_takes_its_new_name_and_leaves_temp_files_behind(make_pack, tmp_path):
    from engine.knowledge.writer import copy_pack_files

    source = make_pack()
    (source / ".rules.jsonl.0a1b.tmp").write_text("half a line", encoding="utf-8")
    copy = tmp_path / "copy"
    copy_pack_files(source, copy, "tiny-copy")
    assert sorted(p.name for p in copy.iterdir()) == sorted(p.name for p in source.iterdir() if p.name[0] != ".")
    copied, original = load_pack(copy), load_pack(source)
    assert copied.info == replace(original.info, name="tiny-copy")
    _same_content(replace(copied, info=original.info), original)
