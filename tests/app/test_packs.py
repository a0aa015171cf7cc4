"""The packs service: listing, building from uploads, saving mined rules, syncing the index."""

from __future__ import annotations

import shutil

import pytest

from engine.app import packs, runs
from engine.errors import PackError
from engine.settings import Settings
from paths import MINI_PACK


def test_packs_are_listed_by_folder_name_from_the_roots_then_the_users_folder(tmp_path):
    settings = Settings(home=tmp_path / "home")
    shutil.copytree(MINI_PACK, settings.packs / "mine")
    shutil.copytree(MINI_PACK, settings.packs / ".mine.1.abcd")  # a staging folder: never listed
    found = packs.available_packs(settings, roots=(MINI_PACK.parent,))
    assert found["mini"] == MINI_PACK and found["mine"] == settings.packs / "mine"
    assert not any(name.startswith(".") for name in found)


def test_a_pack_built_from_uploads_lands_in_the_users_packs_folder(tmp_path):
    settings = Settings(home=tmp_path)
    upload = packs.Upload("notes.md", b"# Ada\nAda Lovelace was born in London in 1815.\n")
    target = packs.build_from_uploads([upload], "notes", settings, existing=())
    assert target == settings.packs / "notes" and len(packs.load(target).documents) == 1


def test_mined_rules_go_into_a_copy_by_name_and_an_empty_name_changes_nothing(tmp_path):
    settings = Settings(home=tmp_path)
    source = tmp_path / "bundled" / "mini"
    shutil.copytree(MINI_PACK, source)
    before = (source / "rules.jsonl").read_bytes() if (source / "rules.jsonl").exists() else None
    rule = packs.Rule(id="m001", head="educated_at", body=("collaborator", "educated_at"), confidence=0.5, support=1)
    with pytest.raises(PackError, match="empty"):
        packs.save_mined(str(source), [rule], settings, copy_as="")
    saved = packs.save_mined(str(source), [rule], settings, copy_as="mini-mined")
    assert saved.pack.path == (settings.packs / "mini-mined").resolve() and len(saved.added) == 1
    after = (source / "rules.jsonl").read_bytes() if (source / "rules.jsonl").exists() else None
    assert after == before  # the source pack is never changed by a copy


def test_syncing_embeds_once_then_keeps_and_the_status_matches_the_pack(mini_pack, tmp_path):
    settings = Settings(home=tmp_path)
    retrieval = runs.open_workbench(mini_pack, settings).retrieval
    report = packs.sync_index(mini_pack, settings, shared=retrieval)
    assert report.added > 0 and report.removed == 0
    again = packs.sync_index(mini_pack, settings, shared=retrieval)  # a fresh sync each time, not once a process
    assert again.added == 0 and again.kept == report.added
    status = packs.index_status(retrieval)
    assert status.indexed == status.chunks == report.added and status.where == str(settings.index_dir)
