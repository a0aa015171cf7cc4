"""`compare-evals BEFORE AFTER` on two real `eval --out` reports of the mini pack, and on folders that are not."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from engine.cli import main
from engine.evaluation.regression import compare_evaluations, saved_setting
from engine.evaluation.saved import read_evaluation
from paths import MINI_PACK


@pytest.fixture(scope="module")
def reports(ragscope_home, tmp_path_factory) -> tuple[Path, Path]:
    """vanilla with its default k (5) and with k=1: fewer passages, so some answers change."""
    root = tmp_path_factory.mktemp("compare_evals")
    before, after = root / "k5", root / "k1"
    assert main(["eval", "--pack", str(MINI_PACK), "--method", "vanilla", "--out", str(before)]) == 0
    assert main(["eval", "--pack", str(MINI_PACK), "--method", "vanilla", "-p", "k=1", "--out", str(after)]) == 0
    return before, after


def test_two_reports_print_the_deltas_the_flips_and_what_differs(reports, capsys):
    capsys.readouterr()
    assert main(["compare-evals", *map(str, reports)]) == 0
    out = capsys.readouterr().out
    before, after = read_evaluation(reports[0]), read_evaluation(reports[1])
    comparison = compare_evaluations(before.results, after.results,
                                     settings=(saved_setting(before), saved_setting(after)))
    assert comparison.flips, "k=1 should change some answer of the mini pack"
    em = next(r for r in comparison.rows if (r.scope, r.metric) == ("overall", "em"))
    assert f"overall        em        {em.before:>7.3f} {em.after:>7.3f}  {em.delta} n=6" in out
    assert "differs: vanilla k: 5 → 1" in out
    assert "fingerprint" not in out  # both run cards name the same pack fingerprint
    for flip in comparison.flips:  # each flipped question names both its traces
        assert f"traces {flip.trace_before} → {flip.trace_after}" in out
    hint = out.rstrip().splitlines()[-1]  # the command that diffs the first flip's two runs, and it works
    first = comparison.flips[0]
    diff = [f"{reports[0] / 'traces.jsonl'}#{first.trace_before}", f"{reports[1] / 'traces.jsonl'}#{first.trace_after}"]
    assert hint.endswith(f"python -m engine diff {diff[0]} {diff[1]}")
    assert main(["diff", *diff]) == 0 and "settings (- A, + B)" in capsys.readouterr().out


def test_json_output_holds_every_row_and_flip(reports, capsys):
    capsys.readouterr()
    assert main(["compare-evals", *map(str, reports), "--json", "--seed", "3"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["seed"] == 3 and data["paired"] == 6 and data["unpaired"] == []
    assert {row["metric"] for row in data["rows"]} >= {"em", "f1", "acc", "crag", "coverage", "recall_5", "ap"}
    assert all(row["delta"]["n"] >= 1 for row in data["rows"])
    assert data["before"] == str(reports[0]) and data["flips"][0]["trace_after"]


def test_a_report_compared_with_itself_has_no_delta_and_no_flip(reports, capsys):
    capsys.readouterr()
    assert main(["compare-evals", str(reports[0]), str(reports[0]), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["flips"] == [] and {row["delta"]["estimate"] for row in data["rows"]} == {0.0}


def test_run_cards_of_two_packs_make_a_warning_and_their_backend_options_are_compared(reports, tmp_path, capsys):
    copies = []
    for name, (report, fingerprint, quantization) in {"a": (reports[0], "aaaa", "nf4"),
                                                      "b": (reports[1], "bbbb", "none")}.items():
        copies.append(shutil.copytree(report, tmp_path / name))
        card = {"pack": "mini", "pack_fingerprint": fingerprint, "backend": "offline",
                "backend_options": {"quantization": quantization}}
        (copies[-1] / "run_card.json").write_text(json.dumps(card))
    capsys.readouterr()
    assert main(["compare-evals", *map(str, copies)]) == 0
    out = capsys.readouterr().out
    assert "warning: the packs' documents differ (fingerprint aaaa → bbbb)" in out
    assert "differs: backend options: quantization=nf4 → quantization=none" in out


@pytest.mark.parametrize("bad", ["missing", "empty", "no_traces"])
def test_a_folder_that_is_not_a_report_exits_2_saying_why(reports, tmp_path, capsys, bad):
    folder = tmp_path / bad
    if bad != "missing":
        folder.mkdir()
    if bad == "no_traces":
        (folder / "results.csv").write_text((reports[0] / "results.csv").read_text())
    assert main(["compare-evals", str(reports[0]), str(folder)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and str(folder) in err
    assert ("not an evaluation report folder" if bad == "missing" else "no results.csv" if bad == "empty"
            else "no traces.jsonl") in err


def test_a_malformed_results_file_exits_2_naming_the_line(reports, tmp_path, capsys):
    folder = tmp_path / "broken"
    folder.mkdir()
    lines = (reports[0] / "results.csv").read_text().splitlines()
    (folder / "results.csv").write_text("\n".join([lines[0], lines[1].replace(",False,", ",maybe,", 1)]) + "\n")
    (folder / "traces.jsonl").write_text((reports[0] / "traces.jsonl").read_text())
    assert main(["compare-evals", str(folder), str(reports[1])]) == 2
    assert "results.csv:2: refused: 'maybe' is not a bool" in capsys.readouterr().err


@pytest.mark.parametrize("argv", [["--help"], ["compare-evals", "--help"]])
def test_help_lists_compare_evals(argv, capsys):
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 0 and "compare-evals" in capsys.readouterr().out


@pytest.mark.parametrize("seed", ["-1", "x", "1.5"])
def test_a_seed_that_is_not_a_whole_number_from_0_exits_2(reports, capsys, seed):
    with pytest.raises(SystemExit) as stopped:
        main(["compare-evals", *map(str, reports), "--seed", seed])
    assert stopped.value.code == 2 and "give a whole number from 0 up" in capsys.readouterr().err
