"""Two evaluations racing for one --out (issue 26 item 9): the loser was told to add --resume, which put a second
writer on a live journal. Now the one writing holds a lock while it lives; the other is told who writes and to
wait, with or without --resume, and a writer killed with SIGKILL blocks nobody."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from engine.cli import main
from paths import MINI_PACK, ROOT

# An evaluation's writer as `eval --out OUT` holds it: the journal beside OUT (its folder made, and with "plan" a
# plan written in it), kept till stdin closes or the process is killed.
HOLDER = """
import sys
from pathlib import Path
from engine.evaluation.journal import Journal
journal = Journal.beside(Path(sys.argv[1]))
journal.folder.mkdir()
if sys.argv[2] == "plan":
    (journal.folder / "plan.json").write_text("{}")
print("holding", flush=True)
sys.stdin.read()
"""
READY_S = 30


@pytest.fixture
def holder(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[subprocess.Popen]:
    process = subprocess.Popen([sys.executable, "-c", HOLDER, str(tmp_path / "eval"), request.param], cwd=ROOT,
                               text=True, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                               env={**os.environ, "PYTHONPATH": str(ROOT)})
    try:
        assert process.stdout.readline() == "holding\n"
        yield process
    finally:
        process.kill()
        process.wait(timeout=READY_S)


@pytest.mark.parametrize("holder", ["plan"], indirect=True)
def test_a_second_evaluation_to_a_busy_out_is_told_who_writes_there_with_or_without_resume(ragscope_home, tmp_path,
                                                                                           holder, capsys):
    out = tmp_path / "eval"
    plan = (tmp_path / ".eval.journal" / "plan.json").read_text()
    for resume in ([], ["--resume"]):
        assert main(["eval", "--pack", str(MINI_PACK), "--limit", "1", "--out", str(out), *resume]) == 2
        err = capsys.readouterr().err
        assert f"error: another evaluation (pid {holder.pid}) is writing to {out}; wait for it to end, or choose " \
               "another --out" in err
        assert "--resume" not in err.replace("another --out", "")
    assert (tmp_path / ".eval.journal" / "plan.json").read_text() == plan  # the live journal untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == [".eval.journal", ".eval.lock"]


@pytest.mark.parametrize("holder", ["no plan"], indirect=True)
def test_a_writer_killed_before_its_plan_was_saved_blocks_nobody(ragscope_home, tmp_path, holder):
    holder.kill()
    holder.wait(timeout=READY_S)
    # its lock file (no process holds it now) and an empty journal folder are left
    assert (tmp_path / ".eval.lock").read_text() == f"{holder.pid}\n" and (tmp_path / ".eval.journal").is_dir()
    assert main(["eval", "--pack", str(MINI_PACK), "--limit", "1", "--out", str(tmp_path / "eval")]) == 0
    assert [p.name for p in tmp_path.iterdir()] == ["eval"]
