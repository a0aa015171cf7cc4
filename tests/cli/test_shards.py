"""`eval --shard I/N` and `merge-evals`: shards joined equal one whole run; shards that do not belong together are
refused, naming the field; every bad spec or folder is exit 2 with a message."""

from __future__ import annotations

import csv
import io
import json
from pathlib import Path

import pytest

from engine.cli import main
from engine.errors import RagscopeError
from engine.evaluation.journal import Journal
from engine.evaluation.shards import Shard, question_list_fingerprint
from paths import DEMO_PACK, MINI_PACK

TIMING_COLUMNS = {"trace_id", "latency_ms"}  # what timing decides (engine.evaluation.runner.evaluate)
TIMING_METRICS = {"latency_ms_median", "latency_ms_p90"}


def _eval(pack: Path, out: Path, *extra: str) -> int:
    return main(["eval", "--pack", str(pack), "--out", str(out), *extra])


def _rows(folder: Path) -> list[dict[str, str]]:
    text = (folder / "results.csv").read_text(encoding="utf-8")
    return [{k: v for k, v in row.items() if k not in TIMING_COLUMNS} for row in csv.DictReader(io.StringIO(text))]


def _metrics(folder: Path) -> dict:
    def drop(node: object) -> object:
        if isinstance(node, dict):
            return {k: drop(v) for k, v in node.items() if k not in TIMING_METRICS}
        return node

    return drop(json.loads((folder / "metrics.json").read_text(encoding="utf-8")))


def _card(folder: Path) -> dict:
    return json.loads((folder / "run_card.json").read_text(encoding="utf-8"))


@pytest.mark.parametrize("text, shard", [("1/3", Shard(1, 3)), ("3/3", Shard(3, 3)), (" 2 / 5 ", Shard(2, 5)),
                                         ("1/1", Shard(1, 1))])
def test_a_shard_spec_is_i_of_n(text, shard):
    assert Shard.parse(text) == shard
    assert str(shard) == f"{shard.index}/{shard.count}"


@pytest.mark.parametrize("text, message", [("0/3", "between 1 and 3"), ("4/3", "between 1 and 3"),
                                           ("x", "is not I/N"), ("1/0", "at least 1"), ("-1/3", "is not I/N"),
                                           ("1/3/2", "is not I/N"), ("", "is not I/N")])
def test_a_bad_shard_spec_says_what_is_allowed(text, message):
    with pytest.raises(RagscopeError, match=message):
        Shard.parse(text)


@pytest.mark.parametrize("spec", ["0/3", "4/3", "x"])
def test_eval_with_a_bad_shard_exits_2_before_asking(ragscope_home, tmp_path, capsys, spec):
    assert _eval(MINI_PACK, tmp_path / "out", "--shard", spec) == 2
    assert "--shard" in capsys.readouterr().err
    assert not (tmp_path / "out").exists()


def test_eval_with_more_shards_than_questions_exits_2(ragscope_home, tmp_path, capsys):
    assert _eval(MINI_PACK, tmp_path / "out", "--limit", "2", "--shard", "3/3") == 2
    assert "use at most 2 shards" in capsys.readouterr().err


@pytest.mark.parametrize("count", [1, 2, 3, 4, 7])
def test_every_question_is_in_exactly_one_shard_in_round_robin(count):
    items = [f"q{i}" for i in range(10)]
    taken = [Shard(i, count).take(items) for i in range(1, count + 1)]
    assert sorted(q for part in taken for q in part) == sorted(items)
    assert taken[0] == items[::count]


def test_the_question_list_fingerprint_follows_order_and_ids():
    assert question_list_fingerprint(["a", "b"]) == question_list_fingerprint(["a", "b"])
    assert question_list_fingerprint(["a", "b"]) != question_list_fingerprint(["b", "a"])
    assert question_list_fingerprint(["ab"]) != question_list_fingerprint(["a", "b"])


@pytest.fixture(scope="module")
def mini_shards(tmp_path_factory, ragscope_home) -> Path:
    """A whole mini-pack evaluation (vanilla, ras, k=3) and its three shards."""
    root = tmp_path_factory.mktemp("mini_shards")
    args = ("--method", "vanilla,ras", "-p", "k=3")
    assert _eval(MINI_PACK, root / "whole", *args) == 0
    for i in (1, 2, 3):
        assert _eval(MINI_PACK, root / f"s{i}", *args, "--shard", f"{i}/3") == 0
    return root


def test_a_shard_asks_its_share_and_its_card_says_which(mini_shards):
    card = _card(mini_shards / "s2")
    whole = _card(mini_shards / "whole")
    assert card["shard"] == "2/3" and whole["shard"] == "1/1"
    assert card["questions"] == whole["questions"][1::3]
    assert card["question_list"] == whole["question_list"] and card["question_total"] == 6
    assert {r["question_id"] for r in _rows(mini_shards / "s2")} == set(card["questions"])


def test_shards_merged_equal_one_whole_run_on_the_mini_pack(mini_shards, capsys):
    out = mini_shards / "merged"
    shards = [str(mini_shards / f"s{i}") for i in (3, 1, 2)]  # any order
    assert main(["merge-evals", *shards, "--out", str(out)]) == 0
    assert _rows(out) == _rows(mini_shards / "whole")
    assert _metrics(out) == _metrics(mini_shards / "whole")
    traces = [json.loads(line) for line in (out / "traces.jsonl").read_text().splitlines()]
    assert [t["question_id"] for t in traces] == [r["question_id"] for r in _rows(out)]
    card = _card(out)
    assert card["shard"] == "merged from 1/3, 2/3, 3/3" and card["missing_shards"] == []
    assert card["questions"] == _card(mini_shards / "whole")["questions"]
    assert "merged from 1/3, 2/3, 3/3" in capsys.readouterr().out


def test_merge_with_a_shard_missing_needs_partial_and_then_names_it(mini_shards, capsys):
    shards = [str(mini_shards / "s1"), str(mini_shards / "s3")]
    assert main(["merge-evals", *shards, "--out", str(mini_shards / "no")]) == 2
    assert "shard(s) 2/3 missing" in capsys.readouterr().err
    assert not (mini_shards / "no").exists()
    assert main(["merge-evals", *shards, "--out", str(mini_shards / "part"), "--partial"]) == 0
    card = _card(mini_shards / "part")
    assert card["missing_shards"] == ["2/3"] and card["shard"] == "merged from 1/3, 3/3"
    whole = _card(mini_shards / "whole")["questions"]
    assert card["questions"] == [q for q in whole if q not in whole[1::3]]


def test_merge_refuses_the_same_shard_twice(mini_shards, capsys):
    assert main(["merge-evals", str(mini_shards / "s1"), str(mini_shards / "s1"), str(mini_shards / "s2"),
                 "--out", str(mini_shards / "twice")]) == 2
    assert "shard 1/3 given twice" in capsys.readouterr().err


def test_merge_refuses_a_report_without_a_run_card_and_a_missing_folder(mini_shards, tmp_path, capsys):
    import shutil

    old = tmp_path / "old"
    shutil.copytree(mini_shards / "s1", old)
    (old / "run_card.json").unlink()
    assert main(["merge-evals", str(old), str(mini_shards / "s2"), "--out", str(tmp_path / "m")]) == 2
    assert "no run_card.json" in capsys.readouterr().err
    assert main(["merge-evals", str(tmp_path / "nowhere"), "--out", str(tmp_path / "m")]) == 2
    assert "not an evaluation report folder" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()


def test_merge_refuses_a_merged_report_and_an_edited_shard(mini_shards, tmp_path, capsys):
    import shutil

    assert main(["merge-evals", str(mini_shards / "whole"), "--out", str(tmp_path / "w")]) == 0  # 1/1 merges alone
    assert main(["merge-evals", str(tmp_path / "w"), "--out", str(tmp_path / "ww")]) == 2
    assert "not a merged report" in capsys.readouterr().err
    edited = tmp_path / "edited"
    shutil.copytree(mini_shards / "s2", edited)
    lines = (edited / "results.csv").read_text().splitlines(keepends=True)
    (edited / "results.csv").write_text("".join(lines[:-1]))
    assert main(["merge-evals", str(mini_shards / "s1"), str(edited), str(mini_shards / "s3"),
                 "--out", str(tmp_path / "m")]) == 2
    assert "not its run card's 2 method(s) × 2 question(s)" in capsys.readouterr().err


@pytest.mark.parametrize("change, field", [
    (("--method", "vanilla,rulerag", "-p", "k=3"), "methods"),
    (("--method", "vanilla,ras", "-p", "k=4"), "params.vanilla.k"),
    (("--method", "vanilla,ras", "-p", "k=3", "-p", "min_confidence=0"), "policy.min_confidence"),
    (("--method", "vanilla,ras", "-p", "k=3", "--limit", "5"), "question_list"),
])
def test_merge_refuses_shards_that_differ_naming_the_field_and_both_values(mini_shards, tmp_path, capsys, change,
                                                                          field):
    assert _eval(MINI_PACK, tmp_path / "other", *change, "--shard", "2/3") == 0
    capsys.readouterr()
    assert main(["merge-evals", str(mini_shards / "s1"), str(tmp_path / "other"), str(mini_shards / "s3"),
                 "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert f"the shards differ in {field}:" in err
    if field == "params.vanilla.k":
        assert "has 3, " in err and "has 4;" in err  # the two values, not two whole tables
    assert str(mini_shards / "s1") in err and str(tmp_path / "other") in err
    assert not (tmp_path / "m").exists()


def test_merge_refuses_another_pack_and_another_shard_count(mini_shards, tmp_path, capsys):
    assert _eval(DEMO_PACK, tmp_path / "demo", "--method", "vanilla,ras", "-p", "k=3", "--limit", "6",
                 "--shard", "2/3") == 0
    assert _eval(MINI_PACK, tmp_path / "of2", "--method", "vanilla,ras", "-p", "k=3", "--shard", "2/2") == 0
    capsys.readouterr()
    assert main(["merge-evals", str(mini_shards / "s1"), str(tmp_path / "demo"), "--out", str(tmp_path / "m")]) == 2
    err = capsys.readouterr().err
    assert "the shards differ in pack_fingerprint:" in err
    assert _card(mini_shards / "s1")["pack_fingerprint"] in err and _card(tmp_path / "demo")["pack_fingerprint"] in err
    assert main(["merge-evals", str(mini_shards / "s1"), str(tmp_path / "of2"), "--out", str(tmp_path / "m")]) == 2
    assert "the shards differ in shard count" in capsys.readouterr().err


def test_a_shard_resumes_only_its_own_questions(ragscope_home, tmp_path, capsys):
    """An interrupted shard's journal plans that shard's questions only: the same shard resumes it, another is
    refused (resume checks stay strict)."""
    from engine.app import packs, runs
    from engine.app.evaluations import EvaluationJob, plan_evaluation

    assert _eval(MINI_PACK, tmp_path / "pre", "--method", "vanilla", "--shard", "1/2") == 0
    out = tmp_path / "s1"
    options = {"model": "", "quantization": "auto", "device": "auto", "dtype": "auto", "base_url": "", "api_key": ""}
    bench = runs.open_workbench(packs.load(MINI_PACK), backend="offline", options=options)
    EvaluationJob.begin(plan_evaluation(bench, ["vanilla"], Shard(1, 2).take(list(bench.pack.questions)), {}),
                        Journal.beside(out))
    capsys.readouterr()
    assert main(["eval", "--pack", str(MINI_PACK), "--method", "vanilla", "--shard", "2/2", "--out", str(out),
                 "--resume"]) == 2
    assert "cannot resume the evaluation" in capsys.readouterr().err
    assert main(["eval", "--pack", str(MINI_PACK), "--method", "vanilla", "--shard", "1/2", "--out", str(out),
                 "--resume"]) == 0
    assert _rows(out) == _rows(tmp_path / "pre")
    assert _card(out)["questions"] == _card(tmp_path / "pre")["questions"]


def test_shards_merged_equal_one_whole_run_on_the_demo_pack(ragscope_home, tmp_path):
    args = ("--method", "vanilla,ras", "--limit", "30")
    assert _eval(DEMO_PACK, tmp_path / "whole", *args) == 0
    for i in (1, 2, 3):
        assert _eval(DEMO_PACK, tmp_path / f"s{i}", *args, "--shard", f"{i}/3") == 0
    assert main(["merge-evals", *(str(tmp_path / f"s{i}") for i in (2, 3, 1)), "--out", str(tmp_path / "m")]) == 0
    assert _rows(tmp_path / "m") == _rows(tmp_path / "whole")
    assert _metrics(tmp_path / "m") == _metrics(tmp_path / "whole")
    assert len(_rows(tmp_path / "m")) == 60


def test_the_merged_card_names_the_whole_run_that_writes_it(mini_shards):
    out = mini_shards / "merged_card"
    assert main(["merge-evals", *(str(mini_shards / f"s{i}") for i in (1, 2, 3)), "--out", str(out)]) == 0
    card, shard = _card(out), _card(mini_shards / "s1")
    assert "--shard" not in card["command"] and card["command"][-2:] == ["--out", str(out)]
    assert card["command"][:-2] == [w for w in _card(mini_shards / "whole")["command"] if w not in
                                    ("--out", str(mini_shards / "whole"))]
    assert card["started"] == min(_card(mini_shards / f"s{i}")["started"] for i in (1, 2, 3))
    assert card["finished"] == max(_card(mini_shards / f"s{i}")["finished"] for i in (1, 2, 3))
    assert card["libraries"] == shard["libraries"] and card["pack_fingerprint"] == shard["pack_fingerprint"]


def test_merge_notes_shards_run_by_other_code_but_joins_them(mini_shards, tmp_path, capsys):
    import shutil

    other = tmp_path / "s2"
    shutil.copytree(mini_shards / "s2", other)
    card = _card(other)
    (other / "run_card.json").write_text(json.dumps({**card, "commit": "f" * 40}), encoding="utf-8")
    assert main(["merge-evals", str(mini_shards / "s1"), str(other), str(mini_shards / "s3"),
                 "--out", str(tmp_path / "m")]) == 0
    assert "note: the shards ran different ragscope commits" in capsys.readouterr().out


def test_merge_names_a_run_card_that_is_not_json(mini_shards, tmp_path, capsys):
    import shutil

    broken = tmp_path / "s2"
    shutil.copytree(mini_shards / "s2", broken)
    (broken / "run_card.json").write_text('{"version": ', encoding="utf-8")
    assert main(["merge-evals", str(mini_shards / "s1"), str(broken), str(mini_shards / "s3"),
                 "--out", str(tmp_path / "m")]) == 2
    assert f"{broken / 'run_card.json'}: not JSON (line 1" in capsys.readouterr().err
    assert not (tmp_path / "m").exists()
