"""Pack files that are links out of the pack folder are refused, as ingestion refuses them (issue 26, item 9):
the app would show, and "save as copy" copy, whatever they point at."""

from __future__ import annotations

import pytest

from engine.app import packs
from engine.errors import PackError
from engine.knowledge.loader import PACK_FILES, load_pack


@pytest.mark.parametrize("name", PACK_FILES)
def test_a_pack_file_linking_out_of_the_pack_folder_is_refused_by_name(make_pack, tmp_path, name):
    outside = make_pack()  # a valid file of the same kind, elsewhere: only the link is wrong
    pack = make_pack({name: None})
    (pack / name).symlink_to(outside / name)
    with pytest.raises(PackError) as refused:
        packs.load(pack)  # what the app and "save as copy" start from
    assert refused.value.problems == [
        f"{name}: a symbolic link to {(outside / name).resolve()}, outside the pack folder; only files inside the "
        "pack folder are read: copy the file into the pack"]


def test_a_link_to_a_secret_never_reaches_the_pack(make_pack, tmp_path):
    secret = tmp_path / "secret.jsonl"
    secret.write_text('{"id": "s", "title": "ssh key", "text": "-----BEGIN OPENSSH PRIVATE KEY-----"}\n')
    pack = make_pack({"documents.jsonl": None})
    (pack / "documents.jsonl").symlink_to(secret)
    with pytest.raises(PackError, match="^documents.jsonl: a symbolic link to .*secret.jsonl, outside"):
        load_pack(pack)


def test_a_dangling_link_or_a_link_loop_is_refused_too(make_pack, tmp_path):
    pack = make_pack({"rules.jsonl": None, "pages.jsonl": None})
    (pack / "rules.jsonl").symlink_to(tmp_path / "gone.jsonl")
    (pack / "pages.jsonl").symlink_to(pack / "pages.jsonl")
    with pytest.raises(PackError) as refused:
        load_pack(pack)
    assert [p.split(":")[0] for p in refused.value.problems] == ["rules.jsonl", "pages.jsonl"]


def test_links_inside_the_pack_folder_and_a_linked_pack_folder_load(make_pack, tmp_path):
    pack = make_pack()
    (pack / "kept").mkdir()
    (pack / "questions.jsonl").rename(pack / "kept" / "questions.jsonl")
    (pack / "questions.jsonl").symlink_to("kept/questions.jsonl")
    linked = tmp_path / "linked-pack"
    linked.symlink_to(pack, target_is_directory=True)
    assert load_pack(linked).questions[0].id == "q1"
