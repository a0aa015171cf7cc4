"""`python -m engine diff`: two real runs from `ask --json` files, History run ids, FILE#N, and bad input (exit 2)."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.runs import RunStore
from engine.trace import AnswerStep, Trace
from paths import MINI_PACK

QUESTION = "When was Grace Hopper born?"


@pytest.fixture(scope="module")
def asked(ragscope_home, tmp_path_factory) -> tuple[Path, Path]:
    """One question asked with vanilla and with ras, each trace in its own file as `ask --json` prints it."""
    folder = tmp_path_factory.mktemp("diff_runs")
    files = []
    for method in ("vanilla", "ras"):  # capsys is per test: catch the module's two runs' output here
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert main(["ask", "--pack", str(MINI_PACK), "--method", method, "--json", "-p", "min_confidence=0",
                         QUESTION]) == 0
        files.append(folder / f"{method}.json")
        files[-1].write_text(out.getvalue(), encoding="utf-8")
    return files[0], files[1]


def _diff(capsys, *argv: str) -> tuple[int, str, str]:
    code = main(["diff", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_two_real_runs_diff_from_their_files_with_exit_0(asked, capsys):
    code, out, _ = _diff(capsys, str(asked[0]), str(asked[1]))
    lines = out.split("\n")
    assert code == 0
    assert lines[0].endswith(": same question") and "(vanilla)" in lines[0] and "(ras)" in lines[0]
    assert "  - method           vanilla" in lines and "  + method           ras" in lines
    assert any(line.startswith("  + [1] graph_delta #1") for line in lines)  # ras builds a graph, vanilla does not
    assert "graph, final (+ in B not A, - in A not B)" in lines and "the runs differ (see above)" in lines


def test_the_json_form_parses_and_a_run_against_itself_is_identical(asked, capsys):
    code, out, _ = _diff(capsys, str(asked[0]), str(asked[1]), "--json")
    data = json.loads(out)
    assert code == 0 and data["identical"] is False and data["same_question"] is True
    code, out, _ = _diff(capsys, str(asked[1]), str(asked[1]), "--json")
    assert code == 0 and json.loads(out)["identical"] is True


def _saved(home: Path, *answers: str) -> list[Trace]:
    store = RunStore(home / "runs.sqlite3")
    traces = []
    for n, text in enumerate(answers):
        head = Trace(id=f"diffcli{n}", question="Who?", method="vanilla", backend="offline", model="", pack="mini")
        traces.append(head.with_steps((AnswerStep(text=text),), 1.0))
        store.save(traces[-1])
    return traces


def test_history_run_ids_and_file_picks_name_runs(ragscope_home, tmp_path, capsys):
    a, b = _saved(ragscope_home, "Ada", "Babbage")
    code, out, _ = _diff(capsys, a.id, b.id)
    assert code == 0 and out.startswith(f"A {a.id} (vanilla) vs B {b.id} (vanilla): same question")
    assert "  differs: text (A Ada, B Babbage)" in out.split("\n")
    export = tmp_path / "export.json"
    export.write_text(RunStore(ragscope_home / "runs.sqlite3").export([a.id, b.id]), encoding="utf-8")
    code, picked, _ = _diff(capsys, f"{export}#1", f"{export}#{b.id}")
    assert code == 0 and picked == out


@pytest.mark.parametrize("make, message", [
    (lambda d: str(d / "missing.json"), "is neither a file nor the id of a run saved in History"),
    (lambda d: "no-such-run-id", "is neither a file nor the id of a run saved in History"),
    (lambda d: _write(d / "bad.json", "{not json"), "bad.json"),
    (lambda d: _write(d / "hello.json", '{"hello": "world"}'), "not a ragscope trace"),
    (lambda d: str(d), "is a folder"),
    (lambda d: " ", "a RUN is empty"),
    (lambda d: "9" * 5000, "'" + "9" * 79 + "…' is neither a file nor"),  # too long a name for the system
    (lambda d: _export(d, 2), "holds 2 traces; pick one with"),
    (lambda d: _export(d, 2) + "#3", "no such trace; the file holds 2, pick N from 1 to 2"),
])
def test_bad_input_exits_2_with_a_clear_message(ragscope_home, asked, tmp_path, capsys, make, message):
    RunStore(ragscope_home / "runs.sqlite3")  # a History to look ids up in, whichever test ran first
    code, out, err = _diff(capsys, make(tmp_path), str(asked[0]))
    assert code == 2 and out == ""
    assert err.startswith("error: ") and message in err


def test_without_a_history_a_run_id_is_refused_without_creating_one(tmp_path, asked, capsys, monkeypatch):
    monkeypatch.setenv("RAGSCOPE_HOME", str(tmp_path / "empty-home"))
    code, _, err = _diff(capsys, str(asked[0]), "abc123")
    assert code == 2 and "there is no History at" in err
    assert not (tmp_path / "empty-home" / "runs.sqlite3").exists()


def _write(path: Path, text: str) -> str:
    path.write_text(text, encoding="utf-8")
    return str(path)


def _export(folder: Path, count: int) -> str:
    traces = [Trace(id=f"x{n}", question="Q?", method="vanilla", backend="offline", model="", pack="mini")
              for n in range(count)]
    return _write(folder / "several.json", json.dumps([t.to_dict() for t in traces]))
