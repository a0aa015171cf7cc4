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


def _killed_write(target: Path) -> Path:
    """A real process killed inside `staged` (as a killed ingest or upload is): its staging folder stays."""
    import subprocess
    import sys

    from paths import ROOT

    code = ("import os, sys; from pathlib import Path; from engine.knowledge.writer import staged\n"
            "with staged(Path(sys.argv[1])) as folder:\n"
            "    (folder / 'pack.json').write_text('{\"name\": \"half\"}')\n"
            "    os.kill(os.getpid(), 9)\n")
    subprocess.run([sys.executable, "-c", code, str(target)], cwd=ROOT, check=False, timeout=60)
    (left,) = [p for p in target.parent.iterdir() if p.name.startswith(f".{target.name}.")]
    return left


def test_a_killed_write_leaves_a_staging_folder_that_the_next_write_of_that_target_sweeps(make_pack, tmp_path):
    from engine.knowledge.writer import is_staging

    target = tmp_path / "packs" / "kelvin"
    left = _killed_write(target)
    assert is_staging(left) and not target.exists()
    write_pack(load_pack(make_pack()), target)
    assert sorted(p.name for p in target.parent.iterdir()) == ["kelvin"]


def test_the_sweep_keeps_live_writers_fresh_legacy_folders_and_anything_not_staging(tmp_path):
    import os
    import time

    from engine.knowledge.writer import LEGACY_STAGING_MAX_AGE_S, sweep_staging

    names = {
        "dead": ".a.999999999.abcd1234",       # no such process
        "live": f".a.{os.getpid()}.abcd1234",  # this process: a write in progress in another session
        "old": ".a.k2j4h5g6",                  # written before the PID was recorded, hours ago
        "fresh": ".b.k2j4h5g6",                # the same, a minute ago: perhaps still being written
        "other": ".config",                    # a user's hidden folder, never touched
        "pack": "a",
    }
    for name in names.values():
        (tmp_path / name).mkdir()
    stale = time.time() - LEGACY_STAGING_MAX_AGE_S - 60
    os.utime(tmp_path / names["old"], (stale, stale))
    assert sweep_staging(tmp_path, "b") == []  # only the named target's folders when one is named
    removed = sweep_staging(tmp_path)
    assert sorted(p.name for p in removed) == sorted([names["dead"], names["old"]])
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted([names["live"], names["fresh"], ".config", "a"])


@pytest.mark.parametrize("name, staging", [
    (".mini.4242.abcd_123", True), (".my.pack.7.zzzzzzzz", True), (".mini.k2j4h5g6", True),
    ("mini", False), (".config", False), (".mini.abc", False), ("mini.4242.abcd1234", False),
])
def test_staging_folders_are_recognised_by_name(name, staging):
    from engine.knowledge.writer import is_staging

    assert is_staging(Path("/packs") / name) is staging


def test_a_target_that_cannot_be_written_fails_before_any_work(tmp_path):
    from engine.knowledge.writer import check_target

    (tmp_path / "file.txt").write_text("x", encoding="utf-8")
    (tmp_path / "folder").mkdir()
    with pytest.raises(PackError, match="file.txt is not a folder"):
        check_target(tmp_path / "file.txt" / "deeper" / "out")
    with pytest.raises(PackError, match="is a folder, not a file"):
        check_target(tmp_path / "folder", folder=False)
    with pytest.raises(PackError, match="already exists"):
        check_target(tmp_path / "file.txt")
    with pytest.raises(PackError, match="/dev/null: is not a regular file"):  # root would replace the device
        check_target(Path("/dev/null"), folder=False)
    check_target(tmp_path / "file.txt", folder=False)  # an existing file is replaced: fine
    check_target(tmp_path / "new" / "nested" / "out")  # missing parents are created later: fine
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.txt", "folder"]


def test_the_sidebar_never_lists_a_staging_folder_and_sweeps_the_abandoned_ones(tmp_path, monkeypatch):
    import os
    import shutil

    import ui_state
    from engine.settings import Settings
    from paths import MINI_PACK

    packs = tmp_path / "packs"
    for name in ("mini", ".mini.999999999.abcd1234", f".half.{os.getpid()}.abcd1234"):
        shutil.copytree(MINI_PACK, packs / name)  # each would load as a pack
    monkeypatch.setattr(ui_state, "PACK_ROOTS", ())
    monkeypatch.setattr(ui_state, "settings", lambda: Settings(home=tmp_path))
    assert list(ui_state.available_packs()) == ["mini"]
    assert not (packs / ".mini.999999999.abcd1234").exists() and len(list(packs.iterdir())) == 2
