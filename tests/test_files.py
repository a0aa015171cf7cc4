"""Atomic small-file writes: all or nothing, and the file's mode as the user expects."""

from __future__ import annotations

import os
import stat

import pytest

from engine.files import write_text_atomic


def mode(path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_a_new_file_is_0644_and_a_private_one_0600(tmp_path):
    write_text_atomic(tmp_path / "a" / "plain.json", "{}")
    write_text_atomic(tmp_path / "secret.json", "{}", private=True)
    assert mode(tmp_path / "a" / "plain.json") == 0o644 and mode(tmp_path / "secret.json") == 0o600


def test_a_replaced_file_keeps_its_mode(tmp_path):
    target = tmp_path / "rules.jsonl"
    target.write_text("old\n")
    os.chmod(target, 0o664)
    write_text_atomic(target, "new\n")
    assert target.read_text() == "new\n" and mode(target) == 0o664


def test_a_failed_write_leaves_the_old_file_and_no_temp_file(tmp_path, monkeypatch):
    target = tmp_path / "rules.jsonl"
    target.write_text("old\n")

    def no_space(_fd):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "fsync", no_space)
    with pytest.raises(OSError, match="No space"):
        write_text_atomic(target, "new\n")
    assert target.read_text() == "old\n" and sorted(p.name for p in tmp_path.iterdir()) == ["rules.jsonl"]
