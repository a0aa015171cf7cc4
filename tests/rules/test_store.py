"""Saving rules into a pack: merged without duplicates, checked by the loader, replaced atomically."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import engine.files
from engine.errors import DiskFull, PackError
from engine.knowledge.loader import load_pack
from engine.knowledge.records import Rule
from engine.rules.store import is_bundled, merge_rules, save_rules, save_rules_as_copy
from paths import DEMO_PACK, MINI_PACK

R1 = Rule(id="r1", head="citizen_of", body=("born_in", "located_in"), confidence=0.75, support=3)
BORN_CITIZEN = Rule(id="m001", head="citizen_of", body=("born_in",), confidence=0.5, support=2)
LIVED_CITIZEN = Rule(id="m002", head="citizen_of", body=("born_in", "~located_in"), confidence=0.2, support=1)


@pytest.fixture()
def pack_dir(tmp_path: Path) -> Path:
    """A writable copy of the mini pack (one rule, r1 = citizen_of ⇐ born_in, located_in)."""
    return Path(shutil.copytree(MINI_PACK, tmp_path / "mini"))


def _lines(folder: Path) -> list[dict]:
    return [json.loads(line) for line in (folder / "rules.jsonl").read_text(encoding="utf-8").splitlines()]


def test_merging_skips_rules_with_the_same_head_and_body_and_renames_taken_ids():
    same_as_r1 = Rule(id="m001", head="citizen_of", body=("born_in", "located_in"), confidence=0.1, support=9)
    taken_id = Rule(id="r1", head="citizen_of", body=("born_in",), confidence=0.5, support=2)
    twice = Rule(id="m003", head="citizen_of", body=("born_in",), confidence=0.5, support=2)
    added, duplicates = merge_rules([R1], [same_as_r1, taken_id, twice, LIVED_CITIZEN])
    assert [(r.id, r.head, r.body) for r in added] == [
        ("m001", "citizen_of", ("born_in",)),  # r1 is taken: the first free m-number
        ("m002", "citizen_of", ("born_in", "~located_in")),
    ]
    assert duplicates == (same_as_r1, twice)


def test_saved_rules_are_appended_and_the_pack_loads_with_them(pack_dir):
    before = (pack_dir / "rules.jsonl").read_text(encoding="utf-8")
    saved = save_rules(pack_dir, [BORN_CITIZEN, LIVED_CITIZEN])
    assert (pack_dir / "rules.jsonl").read_text(encoding="utf-8").startswith(before)  # old lines kept as they were
    assert [r["id"] for r in _lines(pack_dir)] == ["r1", "m001", "m002"]
    assert saved.added == (BORN_CITIZEN, LIVED_CITIZEN) and saved.duplicates == ()
    reloaded = load_pack(pack_dir)
    assert [r.id for r in reloaded.rules] == ["r1", "m001", "m002"]
    assert reloaded.rules[1] == BORN_CITIZEN
    assert saved.pack.rules == reloaded.rules and saved.pack.path == pack_dir.resolve()
    assert sorted(p.name for p in pack_dir.iterdir() if p.name.startswith(".")) == []  # no temp file left


def test_saving_the_same_rules_twice_adds_nothing_the_second_time(pack_dir):
    save_rules(pack_dir, [BORN_CITIZEN])
    written = (pack_dir / "rules.jsonl").read_bytes()
    again = save_rules(pack_dir, [BORN_CITIZEN, R1])
    assert again.added == () and again.duplicates == (BORN_CITIZEN, R1)
    assert (pack_dir / "rules.jsonl").read_bytes() == written
    assert [r.id for r in load_pack(pack_dir).rules] == ["r1", "m001"]


def test_a_pack_without_rules_gets_a_rules_file(pack_dir):
    (pack_dir / "rules.jsonl").unlink()
    save_rules(pack_dir, [BORN_CITIZEN])
    assert _lines(pack_dir) == [{"id": "m001", "head": "citizen_of", "body": ["born_in"], "confidence": 0.5,
                                 "support": 2}]


def test_a_last_line_without_a_newline_is_not_glued_to_the_first_new_one(pack_dir):
    path = pack_dir / "rules.jsonl"
    path.write_text(path.read_text(encoding="utf-8").rstrip("\n"), encoding="utf-8")
    save_rules(pack_dir, [BORN_CITIZEN])
    assert [r.id for r in load_pack(pack_dir).rules] == ["r1", "m001"]


def test_a_failure_mid_write_leaves_the_original_rules_file_untouched(pack_dir, monkeypatch):
    before = (pack_dir / "rules.jsonl").read_bytes()

    def disk_full(fd: int) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(engine.files.os, "fsync", disk_full)  # the bytes are written, not yet on disk
    with pytest.raises(DiskFull, match=f"{pack_dir.name}: out of disk space"):  # named, not an OSError traceback
        save_rules(pack_dir, [BORN_CITIZEN])
    assert (pack_dir / "rules.jsonl").read_bytes() == before
    assert sorted(p.name for p in pack_dir.iterdir()) == sorted(p.name for p in MINI_PACK.iterdir())


def test_save_as_copy_refuses_a_source_whose_files_link_out_of_it(pack_dir, tmp_path):
    """Issue 26: a pack file linking out of the pack folder was read and copied into the new pack."""
    secret = tmp_path / "secret.jsonl"
    (pack_dir / "documents.jsonl").rename(secret)
    (pack_dir / "documents.jsonl").symlink_to(secret)
    packs = tmp_path / "packs"
    with pytest.raises(PackError, match=r"^documents\.jsonl: a symbolic link to .*secret\.jsonl, outside the pack"):
        save_rules_as_copy(pack_dir, packs, "mini-mined", [], [BORN_CITIZEN])
    assert not (packs / "mini-mined").exists()


def test_a_rule_the_loader_rejects_is_reported_and_nothing_is_replaced(pack_dir):
    before = (pack_dir / "rules.jsonl").read_bytes()
    unknown = Rule(id="m001", head="citizen_of", body=("married_to",), confidence=0.5, support=2)
    with pytest.raises(PackError) as caught:
        save_rules(pack_dir, [unknown])
    assert caught.value.problems[0].startswith("rules.jsonl:2: unknown relation 'married_to'; known: ")
    assert (pack_dir / "rules.jsonl").read_bytes() == before
    assert sorted(p.name for p in pack_dir.iterdir()) == sorted(p.name for p in MINI_PACK.iterdir())


def test_the_bundled_demo_pack_is_refused_and_left_as_it_is():
    before = (DEMO_PACK / "rules.jsonl").read_bytes()
    assert is_bundled(DEMO_PACK) and not is_bundled(MINI_PACK)
    with pytest.raises(PackError, match=r"ships with ragscope .* copy under \$RAGSCOPE_HOME/packs"):
        save_rules(DEMO_PACK, [BORN_CITIZEN])
    assert (DEMO_PACK / "rules.jsonl").read_bytes() == before


def test_saving_into_a_copy_makes_a_new_pack_with_the_rules_and_leaves_the_source_alone(pack_dir, tmp_path):
    source_rules = (pack_dir / "rules.jsonl").read_bytes()
    packs = tmp_path / "packs"
    saved = save_rules_as_copy(pack_dir, packs, "mini-mined", ["mini"], [BORN_CITIZEN])
    copy = load_pack(packs / "mini-mined")
    assert copy.info.name == "mini-mined" and copy.info.title == "Mini test pack"
    assert [r.id for r in copy.rules] == ["r1", "m001"]
    assert copy.documents == load_pack(pack_dir).documents
    assert saved.pack.path == (packs / "mini-mined").resolve()
    assert (pack_dir / "rules.jsonl").read_bytes() == source_rules
    assert [p.name for p in packs.iterdir()] == ["mini-mined"]


def test_a_copy_that_fails_leaves_nothing_under_the_packs_folder(pack_dir, tmp_path):
    packs = tmp_path / "packs"
    unknown = Rule(id="m001", head="citizen_of", body=("married_to",), confidence=0.5, support=2)
    with pytest.raises(PackError, match="unknown relation 'married_to'"):
        save_rules_as_copy(pack_dir, packs, "mini-mined", [], [unknown])
    assert list(packs.iterdir()) == []
    with pytest.raises(PackError, match="a pack named 'Mini' already exists"):
        save_rules_as_copy(pack_dir, packs, "Mini", ["mini"], [BORN_CITIZEN])
