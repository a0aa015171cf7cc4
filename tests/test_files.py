"""Atomic small-file writes: all or nothing, the file's mode as the user expects, no temp files left by kills."""

from __future__ import annotations

import os
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from engine.files import write_text_atomic

ROOT = Path(__file__).resolve().parents[1]


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


# A writer that stalls once its text is written, before the rename: killed there, it leaves its temp file.
STALLED_WRITER = """
import os, sys, time
from pathlib import Path
import engine.files

def stall(fd):
    print("written", flush=True)
    time.sleep(60)

engine.files.os.fsync = stall
engine.files.write_text_atomic(Path(sys.argv[1]), "half")
"""


def _temps(folder):
    return sorted(p.name for p in folder.iterdir() if p.name.startswith("."))


def _age(path, seconds):
    old = time.time() - seconds
    os.utime(path, (old, old))


def test_temp_files_of_killed_writes_are_swept_by_the_next_write_never_a_live_writers(tmp_path):
    """Issue 26: `.NAME.XXXX` files were left after kills. A live writer's is kept however old it looks; a dead
    one's is swept once a minute old (younger, it may belong to a writer this process cannot see)."""
    target = tmp_path / "rules.jsonl"
    writer = subprocess.Popen([sys.executable, "-c", STALLED_WRITER, str(target)], cwd=ROOT,
                              stdout=subprocess.PIPE, text=True)
    try:
        assert writer.stdout.readline() == "written\n"
        (left,) = (p for p in tmp_path.iterdir() if p.name.startswith(".rules.jsonl."))
        _age(left, 3600)
        write_text_atomic(target, "one\n")
        assert _temps(tmp_path) == [left.name]  # its writer still runs: kept
        writer.kill()  # kill -9 mid-write
        writer.wait(timeout=10)
        write_text_atomic(target, "two\n")
    finally:
        writer.kill()
    assert _temps(tmp_path) == [] and target.read_text() == "two\n"


def test_a_fresh_temp_file_of_a_gone_writer_and_other_files_temps_are_kept(tmp_path):
    target = tmp_path / "plan.json"
    fresh, legacy, other = (tmp_path / name for name in (".plan.json.999999999.abcd1234", ".plan.json.k3j9x_q2",
                                                          ".plan.json.bak.999999999.abcd1234"))
    for path in (fresh, legacy, other):
        path.write_text("left")
    _age(legacy, 120)
    _age(other, 120)
    write_text_atomic(target, "{}")
    assert _temps(tmp_path) == [fresh.name, other.name]  # the one under a minute old, and the one of plan.json.bak
