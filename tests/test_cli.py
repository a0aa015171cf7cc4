"""The CLI contract: ask / eval / index output, and exit code 2 with a clear message on bad input."""

from __future__ import annotations

import json
import resource

import pytest

from engine.cli import main
from engine.trace import Trace

from paths import MINI_PACK

METRIC_KEYS = {"n", "em", "f1", "acc", "recall@5", "recall@10", "recall@all", "evidence_len",
               "latency_ms_median", "latency_ms_p90"}


def test_ask_prints_each_step_and_the_answer(ragscope_home, capsys):
    assert main(["ask", "--pack", str(MINI_PACK), "--method", "vanilla", "When was Grace Hopper born?"]) == 0
    out = capsys.readouterr().out
    assert "[1] retrieval" in out and "[1] answer" in out and "answer: 1906" in out


def test_ask_json_prints_a_trace_that_loads_back(ragscope_home, capsys):
    assert main(["ask", "--pack", str(MINI_PACK), "--json", "-p", "k=3", "When was Grace Hopper born?"]) == 0
    trace = Trace.from_json(capsys.readouterr().out)
    assert trace.answer.text == "1906" and len(trace.steps[0].hits) == 3


def test_eval_writes_metrics_by_method_and_type_and_a_csv(ragscope_home, tmp_path, capsys):
    out = tmp_path / "eval"
    assert main(["eval", "--pack", str(MINI_PACK), "--method", "vanilla", "--out", str(out)]) == 0
    metrics = json.loads((out / "metrics.json").read_text())
    assert set(metrics) == {"vanilla"}
    assert METRIC_KEYS <= set(metrics["vanilla"]["overall"])
    assert metrics["vanilla"]["overall"]["n"] == 6
    assert {"factoid", "comparison", "multi_hop", "numeric", "false_premise"} == set(metrics["vanilla"]["by_type"])
    assert len((out / "results.csv").read_text().strip().splitlines()) == 7
    assert len((out / "traces.jsonl").read_text().strip().splitlines()) == 6
    assert "== vanilla ==" in capsys.readouterr().out


def test_eval_limit_takes_the_first_questions(ragscope_home, capsys):
    assert main(["eval", "--pack", str(MINI_PACK), "--limit", "2"]) == 0
    assert "overall" in capsys.readouterr().out


@pytest.mark.parametrize("argv, message", [
    (["ask", "--pack", str(MINI_PACK), "   "], "question is empty"),
    (["ask", "--pack", str(MINI_PACK), "x" * 100_000], "at most 2000"),
    (["ask", "--pack", str(MINI_PACK), "--method", "tog3", "q?"], "unknown method 'tog3'"),
    (["ask", "--pack", str(MINI_PACK), "--backend", "gpt9", "q?"], "unknown backend 'gpt9'"),
    (["ask", "--pack", str(MINI_PACK), "-p", "k=999", "q?"], "parameter k=999"),
    (["ask", "--pack", "/nonexistent/pack", "q?"], "not a folder"),
    (["eval", "--pack", str(MINI_PACK), "--method", "vanilla,nope"], "unknown method 'nope'"),
])
def test_bad_input_exits_2_with_a_clear_message(ragscope_home, capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_malformed_pack_names_file_and_line(ragscope_home, tmp_path, capsys):
    (tmp_path / "pack.json").write_text('{"name": "bad"}')
    (tmp_path / "documents.jsonl").write_text('{"id": "a", "title": "A", "text": "ok"}\n{"id": "b", oops}\n')
    assert main(["ask", "--pack", str(tmp_path), "q?"]) == 2
    assert "documents.jsonl:2: not valid JSON" in capsys.readouterr().err


def test_ingest_builds_a_pack_that_loads(ragscope_home, tmp_path, capsys):
    (tmp_path / "notes.md").write_text("# Kelvin\n\nLord Kelvin proposed the absolute temperature scale in 1848.\n")
    (tmp_path / "facts.tsv").write_text("Lord Kelvin\tknown_for\tabsolute temperature scale\n")
    out = tmp_path / "pack"
    assert main(["ingest", str(tmp_path / "notes.md"), str(tmp_path / "facts.tsv"), "--out", str(out)]) == 0
    assert main(["ask", "--pack", str(out), "When did Lord Kelvin propose the absolute temperature scale?"]) == 0
    assert "answer: 1848" in capsys.readouterr().out


def test_ingesting_a_fake_pdf_exits_2_and_writes_nothing(ragscope_home, tmp_path, capsys):
    fake = tmp_path / "paper.pdf"
    fake.write_text("<html>this is not a PDF</html>")
    out = tmp_path / "pack"
    assert main(["ingest", str(fake), "--out", str(out)]) == 2
    assert "paper.pdf" in capsys.readouterr().err and not out.exists()


def test_importing_a_malformed_hotpot_file_exits_2_and_writes_nothing(ragscope_home, tmp_path, capsys):
    bad = tmp_path / "hotpot.json"
    bad.write_text('[{"question": "Who?"}]')
    out = tmp_path / "pack"
    assert main(["import-hotpot", str(bad), "--out", str(out)]) == 2
    assert "item 0" in capsys.readouterr().err and not out.exists()


# --- issue 15: hostile and careless input ------------------------------------------------------

QUESTION = "When was Grace Hopper born?"


def _junk_checkpoint(folder) -> str:
    (folder / "junk.pt").write_bytes(b"not a checkpoint")
    return str(folder / "junk.pt")


def _oversized_checkpoint(folder) -> str:
    """The shipped checkpoint with a recorded width that would take ~20 GB to build: it must be refused
    from its tensors, never allocated."""
    import torch

    from engine.methods.r2ag.checkpoint import SHIPPED

    blob = torch.load(SHIPPED, weights_only=True)
    blob["meta"]["config"] = {**blob["meta"]["config"], "d_model": 2**15, "d_ff": 2**15}
    torch.save(blob, folder / "wide.pt")
    return str(folder / "wide.pt")


@pytest.mark.parametrize("params, message", [
    (["-p", "retriever=dense-ft"], "needs a fine-tuned query encoder"),
    (["--method", "r2ag", "-p", "k=3"], "trained for k=10 documents but k=3 was asked"),
    (["--method", "r2ag", "-p", "checkpoint={junk}"], "is not an R2-Former checkpoint"),
    (["--method", "r2ag", "-p", "checkpoint={wide}"], "weights do not fit the recorded configuration"),
])
def test_a_run_that_fails_prints_its_steps_then_exits_2(ragscope_home, tmp_path, capsys, params, message):
    paths = {"junk": _junk_checkpoint(tmp_path)} if "{junk}" in " ".join(params) else {}
    if "{wide}" in " ".join(params):
        paths["wide"] = _oversized_checkpoint(tmp_path)
    argv = ["ask", "--pack", str(MINI_PACK), *(p.format(**paths) for p in params), QUESTION]
    peak_kb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    assert main(argv) == 2
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - peak_kb < 1_000_000  # under 1 GB more at peak
    captured = capsys.readouterr()
    assert "Refused: the run failed" in captured.out  # the steps are still shown
    assert captured.err.startswith("error: the run failed: ") and message in captured.err


@pytest.mark.parametrize("argv, message", [
    (["ask", "--pack", str(MINI_PACK), "--method", "rulerag", "-p", "theta=nan", QUESTION],
     "parameter theta='nan' is not a finite number"),
    (["eval", "--pack", str(MINI_PACK), "--method", ",,"], "--method ',,' names no method; give one or more of"),
    (["eval", "--pack", str(MINI_PACK), "--limit", "-3"], "--limit -3"),
    (["eval", "--pack", str(MINI_PACK), "--type", "riddle"], "no questions to evaluate (questions.jsonl) of type"),
    (["ask", "--pack", str(MINI_PACK), "When was Grace \udcff Hopper born?"],
     "argument 4 'When was Grace \\udcff Hopper born?' is not valid UTF-8 text: byte 0xff at character 16"),
    (["ask", "--pack", str(MINI_PACK), "x\ud800"], "lone surrogate U+D800 at character 2"),
    (["eval", "--pack", str(MINI_PACK) + "\udcc3"], "argument 3"),
    (["mine-rules", "--pack", str(MINI_PACK), "--min-head-coverage", "nan"], "--min-head-coverage must lie"),
])
def test_careless_input_exits_2_with_a_clear_message(ragscope_home, capsys, argv, message):
    assert main(argv) == 2
    assert message in capsys.readouterr().err


def test_a_staging_folder_is_refused_as_a_pack(ragscope_home, tmp_path, capsys):
    import shutil

    staging = tmp_path / ".mini.4242.abcd1234"
    shutil.copytree(MINI_PACK, staging)  # it would load: a staging folder can be complete but unrenamed
    assert main(["ask", "--pack", str(staging), QUESTION]) == 2
    assert "the temp folder of an unfinished pack write, not a pack" in capsys.readouterr().err


@pytest.fixture()
def no_evaluation(monkeypatch):
    import engine.evaluation.runner

    def evaluate(*args, **kwargs):  # noqa: ANN002, ANN003, ANN202
        raise AssertionError("evaluated although --out could never be written")

    monkeypatch.setattr(engine.evaluation.runner, "evaluate", evaluate)


@pytest.mark.parametrize("make_out, message", [
    (lambda tmp: (tmp / "taken").mkdir() or (tmp / "taken" / "old.txt").write_text("x") and tmp / "taken",
     "already exists; choose a new folder"),
    (lambda tmp: (tmp / "a-file").write_text("x") and tmp / "a-file" / "eval", "a-file is not a folder"),
])
def test_eval_checks_out_before_evaluating_anything(ragscope_home, tmp_path, capsys, no_evaluation, make_out,
                                                    message):
    out = make_out(tmp_path)
    before = sorted(str(p) for p in tmp_path.rglob("*"))
    assert main(["eval", "--pack", str(MINI_PACK), "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert sorted(str(p) for p in tmp_path.rglob("*")) == before


def test_eval_writes_its_report_atomically(ragscope_home, tmp_path, capsys, monkeypatch):
    import engine.evaluation.runner

    def write_report(out, results, traces):  # noqa: ANN001, ANN202
        (out / "metrics.json").write_text("{}")  # half the report, then the disk fills up
        raise OSError(28, "No space left on device", str(out / "results.csv"))

    monkeypatch.setattr(engine.evaluation.runner, "write_report", write_report)
    assert main(["eval", "--pack", str(MINI_PACK), "--limit", "1", "--out", str(tmp_path / "eval")]) == 2
    assert "No space left on device" in capsys.readouterr().err
    assert list(tmp_path.iterdir()) == []  # neither the folder nor its staging copy


@pytest.mark.parametrize("make_out, message", [
    (lambda tmp: tmp, "is a folder, not a file"),
    (lambda tmp: (tmp / "a-file").write_text("x") and tmp / "a-file" / "rules.jsonl", "a-file is not a folder"),
])
def test_mine_rules_refuses_an_out_it_cannot_write_and_leaves_nothing(ragscope_home, tmp_path, capsys, make_out,
                                                                      message):
    out = make_out(tmp_path)
    before = sorted(p.name for p in tmp_path.iterdir())
    assert main(["mine-rules", "--pack", str(MINI_PACK), "--out", str(out)]) == 2
    assert message in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == before  # no rules.jsonl.tmp, no out.tmp


def test_mine_rules_writes_the_named_file(ragscope_home, tmp_path, capsys):
    out = tmp_path / "new" / "rules.jsonl"
    assert main(["mine-rules", "--pack", str(MINI_PACK), "--out", str(out)]) == 0
    assert out.is_file() and f"to {out}" in capsys.readouterr().out


@pytest.mark.parametrize("command", ["ingest", "import-hotpot"])
def test_writers_of_a_pack_check_out_before_reading_their_input(ragscope_home, tmp_path, capsys, command):
    source = tmp_path / "missing.json"  # would fail too, but later: the taken --out is reported first
    taken = tmp_path / "taken"
    taken.mkdir()
    (taken / "keep.txt").write_text("keep")
    assert main([command, str(source), "--out", str(taken)]) == 2
    assert "taken: already exists" in capsys.readouterr().err and [p.name for p in taken.iterdir()] == ["keep.txt"]


def test_index_reports_even_when_this_process_already_synced_the_pack(ragscope_home, capsys):
    assert main(["index", "--pack", str(MINI_PACK)]) == 0
    assert main(["index", "--pack", str(MINI_PACK)]) == 0
    assert "kept 12" in capsys.readouterr().out.splitlines()[-1]
