"""A report folder read back: results.csv converts to the exact QuestionResults eval wrote; damage is named."""

from __future__ import annotations

import json

import pytest

from engine.cli import main
from engine.errors import RagscopeError
from engine.evaluation.runner import summarise
from engine.evaluation.saved import parse_results, read_evaluation
from paths import MINI_PACK


def test_a_report_reads_back_to_the_results_and_traces_it_was_written_from(ragscope_home, tmp_path):
    out = tmp_path / "eval"
    assert main(["eval", "--pack", str(MINI_PACK), "--method", "vanilla,ras", "--out", str(out)]) == 0
    saved = read_evaluation(out)
    assert len(saved.results) == 12 and [t.id for t in saved.traces] == [r.trace_id for r in saved.results]
    assert summarise(saved.results) == json.loads((out / "metrics.json").read_text())  # every float exact
    assert {type(r.refused) for r in saved.results} == {bool}


def test_optional_and_boolean_columns_convert_and_a_bad_value_is_named():
    header = "method,question_id,type,question,gold,answer,refused,outcome,em,f1,acc,recall_5,recall_10," \
             "recall_all,evidence_len,latency_ms,llm_calls,tokens,trace_id,guess_correct"
    row = "ras,q1,factoid,Q?,A,A,False,correct,1.0,1.0,1.0,,,,3,12.5,0,0,t1,"
    result, = parse_results(f"{header}\n{row}\n")
    assert result.recall_5 is None and result.guess_correct is None and result.refused is False
    assert result.confidence == 0.0  # a column the file lacks takes the field's default
    with pytest.raises(RagscopeError, match=r"results.csv:2: refused: 'maybe' is not a bool"):
        parse_results(f"{header}\n{row.replace('False', 'maybe')}\n")
    with pytest.raises(RagscopeError, match="no trace_id column"):
        parse_results(header.replace(",trace_id", "") + "\n" + row.replace(",t1", "") + "\n")


def test_a_folder_without_a_report_says_what_is_missing(tmp_path):
    with pytest.raises(RagscopeError, match="no results.csv"):
        read_evaluation(tmp_path)


def test_a_damaged_run_card_is_named(ragscope_home, tmp_path):
    out = tmp_path / "eval"
    assert main(["eval", "--pack", str(MINI_PACK), "--method", "vanilla", "--limit", "2", "--out", str(out)]) == 0
    assert read_evaluation(out).card["methods"] == ["vanilla"]
    (out / "run_card.json").write_text("{not json")
    with pytest.raises(RagscopeError, match="run_card.json: not JSON"):
        read_evaluation(out)
    (out / "run_card.json").write_text("[1]")
    with pytest.raises(RagscopeError, match="not a run card"):
        read_evaluation(out)
