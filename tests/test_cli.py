"""The CLI contract: ask / eval / index output, and exit code 2 with a clear message on bad input."""

from __future__ import annotations

import csv
import itertools
import json
import resource
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from engine.cli import main
from engine.methods.base import method_ids
from engine.trace import Trace
from fake_chat_server import MODEL, ChatServer, Reply, completion, serving
from paths import MINI_PACK

METRIC_KEYS = {"n", "em", "f1", "acc", "recall@5", "recall@10", "recall@all", "evidence_len",
               "latency_ms_median", "latency_ms_p90"}


def test_ask_prints_each_step_and_the_answer(ragscope_home, capsys):
    assert main(["ask", "--pack", str(MINI_PACK), "--method", "vanilla", "-p", "min_confidence=0",
                 "When was Grace Hopper born?"]) == 0
    out = capsys.readouterr().out
    assert "[1] retrieval" in out and "[1] answer" in out and "answer: 1906" in out


def test_ask_json_prints_a_trace_that_loads_back(ragscope_home, capsys):
    assert main(["ask", "--pack", str(MINI_PACK), "--json", "-p", "k=3", "-p", "min_confidence=0",
                 "When was Grace Hopper born?"]) == 0
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
    assert main(["ask", "--pack", str(out), "-p", "min_confidence=0",
                 "When did Lord Kelvin propose the absolute temperature scale?"]) == 0
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
    (["eval", "--pack", str(MINI_PACK), "--method", "vanilla,tog2", "-p", "theta=0.5"],
     "unknown parameter(s) theta for vanilla, tog2; known: alpha, candidate_cap"),
    (["eval", "--pack", str(MINI_PACK), "--method", "rulerag,vanilla", "-p", "k=999"], "rulerag: parameter k=999"),
    (["eval", "--pack", str(MINI_PACK), "-p", "k"], "parameter 'k' is not NAME=VALUE"),
    (["eval", "--pack", str(MINI_PACK), "--workers", "0"], "--workers 0: give how many questions to ask at once"),
    (["eval", "--pack", str(MINI_PACK), "--resume"], "--resume needs the evaluation's report folder"),
    (["eval", "--pack", str(MINI_PACK), "--out", "a", "--resume", "b"], "--out a and --resume b name different"),
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

    def evaluate(*args, **kwargs):
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


def test_eval_writes_its_report_atomically_and_keeps_the_answers_when_it_cannot(ragscope_home, tmp_path, capsys,
                                                                             monkeypatch):
    import engine.evaluation.runner

    def write_report(out, results, traces):
        (out / "metrics.json").write_text("{}")  # half the report, then the disk fills up
        raise OSError(28, "No space left on device", str(out / "results.csv"))

    monkeypatch.setattr(engine.evaluation.runner, "write_report", write_report)
    argv = ["eval", "--pack", str(MINI_PACK), "--limit", "1"]
    assert main([*argv, "--out", str(tmp_path / "eval")]) == 2
    err = capsys.readouterr().err
    assert "No space left on device" in err and f"--resume {tmp_path / 'eval'}" in err
    assert [p.name for p in tmp_path.iterdir()] == [".eval.journal"]  # neither the folder nor its staging copy
    monkeypatch.undo()
    asked = counted_asks(monkeypatch)
    assert main([*argv, "--resume", str(tmp_path / "eval")]) == 0
    assert asked == [] and json.loads((tmp_path / "eval" / "metrics.json").read_text())["vanilla"]["overall"]["n"] == 1
    assert [p.name for p in tmp_path.iterdir()] == ["eval"]


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


def test_index_shows_its_rate_and_time_left_while_it_embeds(ragscope_home, capsys, monkeypatch, tmp_path):
    import engine.retrieval.embedder
    import engine.retrieval.index

    monkeypatch.setattr(engine.retrieval.index, "WRITE_BATCHES", 1)
    monkeypatch.setitem(engine.retrieval.embedder._BATCH_SIZE, "cpu", 4)  # 12 chunks in three writes
    monkeypatch.setenv("RAGSCOPE_HOME", str(tmp_path))  # an index no earlier test synced
    assert main(["index", "--pack", str(MINI_PACK)]) == 0
    progress = capsys.readouterr().err.split("\r")[1:]
    assert progress[0] == "indexing: 0 of 12 chunks (0/s)"
    assert any(p.startswith("indexing: 4 of 12 chunks (") and " left)" in p for p in progress)
    assert progress[-1].startswith("indexing: 12 of 12 chunks (") and progress[-1].endswith("/s)\n")


# ---------------------------------------------------------------- eval -p, --workers, --resume (issue 16)

ALL_METHODS = ",".join(method_ids())
# What two runs of the same questions may differ in: trace ids, start times and latencies.
TIMING_FIELDS = {"trace_id", "started", "latency_ms", "elapsed_ms", "latency_ms_median", "latency_ms_p90"}
HOLD_S = 0.3  # how long the scripted server holds each request, so that workers overlap on it


def timeless(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: timeless(v) for k, v in value.items() if k not in TIMING_FIELDS}
    if isinstance(value, list):
        return [timeless(v) for v in value]
    return value


def report_content(out: Path) -> dict[str, Any]:
    """An eval report's files, parsed, without the fields that differ from one run of it to the next."""
    with (out / "results.csv").open(newline="", encoding="utf-8") as handle:
        rows = list(csv.DictReader(handle))
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text(encoding="utf-8").splitlines()]
    return {"metrics": timeless(json.loads((out / "metrics.json").read_text(encoding="utf-8"))),
            "results": timeless(rows), "traces": [timeless({**t, "id": ""}) for t in traces]}


def counted_asks(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str]]:
    """The (method, question id) pairs every workbench is asked from now on."""
    from engine.runner import Workbench

    asked: list[tuple[str, str]] = []
    ask = Workbench.ask

    def counted(self, question, method, params=None, question_id=""):
        asked.append((method, question_id))
        return ask(self, question, method, params, question_id)

    monkeypatch.setattr(Workbench, "ask", counted)
    return asked


def interrupt_after(monkeypatch: pytest.MonkeyPatch, answers: int) -> None:
    """Ctrl-C as the main thread takes in the `answers`-th answer, where it spends its time waiting."""
    import engine.evaluation.runner

    evaluate = engine.evaluation.runner.evaluate

    def interrupted(*args, progress, **kwargs):
        taken = itertools.count(1)

        def hook(result, trace):
            progress(result, trace)
            if next(taken) == answers:
                raise KeyboardInterrupt

        return evaluate(*args, progress=hook, **kwargs)

    monkeypatch.setattr(engine.evaluation.runner, "evaluate", interrupted)


def test_eval_params_reach_the_traces_of_every_method_that_has_them(ragscope_home, tmp_path, capsys):
    out = tmp_path / "eval"
    assert main(["eval", "--pack", str(MINI_PACK), "--method", "vanilla,rulerag", "--limit", "2",
                 "-p", "k=3", "-p", "theta=0.5", "--out", str(out)]) == 0
    traces = [Trace.from_json(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert [(t.method, t.params["k"], t.params.get("theta")) for t in traces] == \
        [("vanilla", 3, None)] * 2 + [("rulerag", 3, 0.5)] * 2
    assert "note: -p theta applies to rulerag only; vanilla has no such parameter" in capsys.readouterr().out


def test_eval_with_four_workers_writes_what_one_worker_writes(ragscope_home, tmp_path):
    for workers in ("1", "4"):
        argv = ["eval", "--pack", str(MINI_PACK), "--method", ALL_METHODS, "--workers", workers]
        assert main([*argv, "--out", str(tmp_path / workers)]) == 0
    assert report_content(tmp_path / "4") == report_content(tmp_path / "1")


@pytest.fixture()
def slow_server(monkeypatch: pytest.MonkeyPatch) -> Iterator[ChatServer]:
    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)  # loopback traffic must never go through a proxy
    with serving(Reply(body=completion("London", {"prompt_tokens": 50, "completion_tokens": 1}),
                       delay_s=HOLD_S)) as server:
        yield server


def test_eval_workers_ask_an_openai_server_several_questions_at_once_and_score_them_alike(
        ragscope_home, tmp_path, slow_server):
    argv = ["eval", "--pack", str(MINI_PACK), "--limit", "4", "--backend", "openai", "--base-url", slow_server.url,
            "--model", MODEL]
    assert main([*argv, "--out", str(tmp_path / "serial")]) == 0
    serial_peak, slow_server.peak_in_flight = slow_server.peak_in_flight, 0
    assert main([*argv, "--workers", "4", "--out", str(tmp_path / "parallel")]) == 0
    assert (serial_peak, slow_server.peak_in_flight >= 2) == (1, True)
    assert report_content(tmp_path / "parallel") == report_content(tmp_path / "serial")


def test_an_interrupted_eval_goes_on_from_its_journal_to_what_an_uninterrupted_one_writes(ragscope_home, tmp_path,
                                                                                         capsys, monkeypatch):
    argv = ["eval", "--pack", str(MINI_PACK), "--method", "vanilla,rulerag", "--workers", "2"]
    out, journal = tmp_path / "eval", tmp_path / ".eval.journal"
    assert main([*argv, "--out", str(tmp_path / "whole")]) == 0
    interrupt_after(monkeypatch, 3)
    assert main([*argv, "--out", str(out)]) == 130
    assert f"--resume {out}" in capsys.readouterr().err and not out.exists()
    kept = {(r["result"]["method"], r["result"]["question_id"])
            for r in map(json.loads, (journal / "results.jsonl").read_text().splitlines())}
    assert 3 <= len(kept) < 12
    monkeypatch.undo()
    assert main([*argv, "--out", str(out)]) == 2  # a new evaluation there would throw the journal away
    assert "an interrupted evaluation waits in" in capsys.readouterr().err
    asked = counted_asks(monkeypatch)
    assert main([*argv, "--out", str(out), "--resume"]) == 0
    assert len(asked) == 12 - len(kept) and not set(asked) & kept
    assert report_content(out) == report_content(tmp_path / "whole")
    assert not journal.exists()


def test_resume_refuses_a_journal_of_another_evaluation_or_none_at_all(ragscope_home, tmp_path, capsys, monkeypatch):
    out = tmp_path / "eval"
    interrupt_after(monkeypatch, 3)
    assert main(["eval", "--pack", str(MINI_PACK), "--out", str(out)]) == 130
    kept = (tmp_path / ".eval.journal" / "results.jsonl").read_text()
    capsys.readouterr()
    assert main(["eval", "--pack", str(MINI_PACK), "-p", "k=3", "--resume", str(out)]) == 2
    assert f"cannot resume the evaluation in {tmp_path / '.eval.journal'}: the parameters differ " \
        "(none → vanilla: k=3)" in capsys.readouterr().err
    assert (tmp_path / ".eval.journal" / "results.jsonl").read_text() == kept
    assert main(["eval", "--pack", str(MINI_PACK), "--resume", str(tmp_path / "other")]) == 2
    assert "no interrupted evaluation to resume" in capsys.readouterr().err
