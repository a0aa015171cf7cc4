"""A really full disk (issue 26 item 6): a 20 MB tmpfs filled to the last few pages, so Chroma's Rust core,
SQLite and our own writes meet ENOSPC where they meet it. Mounting needs root: skipped elsewhere
(test_disk_full.py covers the same paths by injection)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from engine.cli import main
from paths import MINI_PACK, ROOT

SIZE = "20m"
SUBPROCESS_S = 60


@dataclass(frozen=True)
class Disk:
    root: Path

    def fill(self, leave: int) -> None:
        """Take all the space but `leave` bytes (tmpfs counts whole 4 KiB pages)."""
        filler = self.root / "filler"
        filler.unlink(missing_ok=True)
        with filler.open("wb") as out:
            out.write(b"\0" * (shutil.disk_usage(self.root).free - leave))

    def free_up(self) -> None:
        (self.root / "filler").unlink()

    def contents(self) -> list[str]:
        return sorted(p.name for p in self.root.iterdir() if p.name != "filler")


@pytest.fixture
def disk(tmp_path: Path) -> Iterator[Disk]:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        pytest.skip("mounting a tmpfs needs root")
    root = tmp_path / "disk"
    root.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={SIZE}", "tmpfs", str(root)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {mounted.stderr.strip()}")
    try:
        yield Disk(root)
    finally:
        subprocess.run(["umount", "-l", str(root)], check=True)


# 100 KiB: Chroma cannot even open its database; 230 KiB: it fails later, in a write or a compaction
@pytest.mark.parametrize("leave", [100 * 1024, 230 * 1024])
def test_index_on_a_full_disk_exits_2_naming_the_folder_and_works_once_space_is_freed(disk, leave, monkeypatch,
                                                                                      capsys):
    home = disk.root / "home"
    monkeypatch.setenv("RAGSCOPE_HOME", str(home))
    disk.fill(leave)
    assert main(["index", "--pack", str(MINI_PACK)]) == 2
    err = capsys.readouterr().err
    assert f"error: {home / 'chroma'}: out of disk space (" in err and "Traceback" not in err
    disk.free_up()
    assert main(["index", "--pack", str(MINI_PACK)]) == 0  # in this process: no broken client kept
    assert "index rs-mini-" in capsys.readouterr().out


def test_ask_on_a_full_disk_says_so_and_exits_2_without_a_traceback(disk, monkeypatch):
    home = disk.root / "home"
    monkeypatch.setenv("RAGSCOPE_HOME", str(home))
    assert main(["index", "--pack", str(MINI_PACK)]) == 0
    disk.fill(0)
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    asked = subprocess.run([sys.executable, "-m", "engine", "ask", "--pack", str(MINI_PACK), "--method", "vanilla",
                            "Where was Grace Hopper born?"], cwd=ROOT, env=env, capture_output=True, text=True,
                           timeout=SUBPROCESS_S)
    assert asked.returncode == 2, asked.stderr
    assert f"{home / 'chroma'}: out of disk space" in asked.stderr and "Traceback" not in asked.stderr


# nothing at all: the lock file cannot be written; one page: it can, the evaluation's plan cannot
@pytest.mark.parametrize("leave, folder", [(0, ""), (4096, ".eval.journal")])
def test_eval_out_on_a_full_disk_exits_2_leaves_nothing_and_the_same_command_then_works(disk, leave, folder,
                                                                                       ragscope_home, capsys):
    argv = ["eval", "--pack", str(MINI_PACK), "--limit", "2", "--out", str(disk.root / "eval")]
    disk.fill(leave)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert f"error: {disk.root / folder}: out of disk space (No space left on device); free some space" in err
    assert "Traceback" not in err
    assert disk.contents() == []  # no empty journal that would refuse the next try, no lock file
    disk.free_up()
    assert main(argv) == 0
    assert disk.contents() == ["eval"]
