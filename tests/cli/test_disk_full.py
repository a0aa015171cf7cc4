"""A full disk (issue 26 item 6) without root: the kernel's own EFBIG under a file size limit (RLIMIT_FSIZE) in a
subprocess, or Chroma's own words for a full disk where its Rust core cannot be limited from Python. Each says
"out of disk space" naming the folder, exits 2 with no traceback, and leaves nothing that blocks a retry.
The real thing, a full 20 MB tmpfs, is in test_disk_full_tmpfs.py (root only)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

from engine.cli import main
from paths import MINI_PACK, ROOT

# Runs `python -m engine ARGS` with writes beyond LIMIT bytes failing as on a full disk (EFBIG, "File too large";
# SIGXFSZ ignored so the write returns the error instead of killing the process). Only the soft limit is
# lowered: the hard one stays, so a non-root process may set it.
LIMITED = """
import resource, runpy, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
resource.setrlimit(resource.RLIMIT_FSIZE, (int(sys.argv.pop(1)), resource.getrlimit(resource.RLIMIT_FSIZE)[1]))
sys.argv[0] = "engine"
runpy.run_module("engine", run_name="__main__", alter_sys=True)
"""
SUBPROCESS_S = 60
CHROMA_FULL = "error returned from database: (code: 13) database or disk is full"  # measured on a full tmpfs


def limited(limit: int, *args: str, home: Path) -> subprocess.CompletedProcess:
    env = {**os.environ, "RAGSCOPE_HOME": str(home), "HF_HUB_OFFLINE": "1"}
    return subprocess.run([sys.executable, "-c", LIMITED, str(limit), *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=SUBPROCESS_S)


def test_eval_out_on_a_full_disk_exits_2_leaves_nothing_and_the_same_command_then_works(ragscope_home, tmp_path,
                                                                                       monkeypatch):
    out = tmp_path / "reports" / "eval"
    argv = ["eval", "--pack", str(MINI_PACK), "--limit", "2", "--out", str(out)]
    full = limited(200, *argv, home=ragscope_home)  # the lock's pid fits in 200 bytes, the plan does not
    assert full.returncode == 2, full.stderr
    assert f"error: {out.parent / '.eval.journal'}: out of disk space (File too large)" in full.stderr
    assert "Traceback" not in full.stderr
    assert list(out.parent.iterdir()) == []  # no empty journal refusing the next try, no lock file
    assert main(argv) == 0
    assert (out / "metrics.json").is_file() and [p.name for p in out.parent.iterdir()] == ["eval"]


def test_ingest_on_a_full_disk_exits_2_naming_the_folder_and_leaves_no_half_pack(tmp_path):
    out = tmp_path / "packs" / "new"
    (tmp_path / "packs").mkdir()
    full = limited(1000, "ingest", str(MINI_PACK / "documents.jsonl"), "--out", str(out), home=tmp_path / "home")
    assert full.returncode == 2, full.stderr
    assert f"error: {out.parent}: out of disk space (File too large)" in full.stderr
    assert "Traceback" not in full.stderr and list(out.parent.iterdir()) == []


def test_a_chroma_open_that_failed_for_want_of_space_works_once_there_is_space(tmp_path):
    """chromadb kept the System of a failed start cached, so every later open of that folder failed with
    "'RustBindingsAPI' object has no attribute 'bindings'" (what the app showed) until the process ended."""
    script = f"""
import resource, signal
from pathlib import Path
from engine.retrieval.index import chroma_client
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
resource.setrlimit(resource.RLIMIT_FSIZE, (20_000, hard))
try:
    chroma_client(Path({str(tmp_path / 'chroma')!r}))
    print("opened with no space")
except Exception as exc:
    print("failed:", type(exc).__name__)
resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
print("then:", chroma_client(Path({str(tmp_path / 'chroma')!r})).heartbeat() > 0)
"""
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True,
                          timeout=SUBPROCESS_S, env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert done.stdout.splitlines() == ["failed: InternalError", "then: True"], done.stderr


def _chroma_writes_fail(monkeypatch: pytest.MonkeyPatch) -> None:
    from chromadb.api.models.Collection import Collection
    from chromadb.errors import InternalError

    def full(*args, **kwargs):
        raise InternalError(CHROMA_FULL)

    monkeypatch.setattr(Collection, "upsert", full)


def test_index_on_a_full_disk_exits_2_naming_the_index_folder_and_a_retry_works(tmp_path, monkeypatch, capsys):
    home = tmp_path / "home"
    monkeypatch.setenv("RAGSCOPE_HOME", str(home))
    _chroma_writes_fail(monkeypatch)
    assert main(["index", "--pack", str(MINI_PACK)]) == 2
    err = capsys.readouterr().err
    assert f"\nerror: {home / 'chroma'}: out of disk space ({CHROMA_FULL}); free some space there" in err
    assert "Traceback" not in err
    monkeypatch.undo()  # space again
    monkeypatch.setenv("RAGSCOPE_HOME", str(home))
    assert main(["index", "--pack", str(MINI_PACK)]) == 0
    assert "12 chunks; embedded 12" in capsys.readouterr().out


def test_ask_on_a_full_disk_says_so_exits_2_and_logs_no_traceback(tmp_path, monkeypatch, capsys, caplog):
    monkeypatch.setenv("RAGSCOPE_HOME", str(tmp_path / "home"))
    _chroma_writes_fail(monkeypatch)
    with caplog.at_level(logging.WARNING):
        assert main(["ask", "--pack", str(MINI_PACK), "--method", "vanilla", "Where was Grace Hopper born?"]) == 2
    err = capsys.readouterr().err
    assert f"{tmp_path / 'home' / 'chroma'}: out of disk space" in err and "Traceback" not in err
    assert [r.getMessage() for r in caplog.records if r.exc_info] == []
