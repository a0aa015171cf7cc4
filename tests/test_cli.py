"""The CLI contract: ask / eval / index output, and exit code 2 with a clear message on bad input."""

from __future__ import annotations

import json

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
