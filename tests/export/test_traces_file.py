"""Reading the traces ragscope writes (eval's traces.jsonl, a History export, ask --json), and refusing the rest."""

from __future__ import annotations

import pytest

from engine.errors import RagscopeError
from engine.export.traces_file import read_traces
from engine.runs import RunStore
from engine.trace import DecisionStep


@pytest.fixture()
def two_traces(make_trace):
    return [make_trace(DecisionStep(action="a", elapsed_ms=1.0), id=i) for i in ("t1", "t2")]


def test_eval_traces_jsonl_reads_one_trace_per_line(tmp_path, two_traces):
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(t.to_json() + "\n" for t in two_traces) + "\n", encoding="utf-8")
    assert read_traces(path) == tuple(two_traces)


def test_a_history_export_and_an_ask_json_trace_read_too(tmp_path, two_traces):
    store = RunStore(tmp_path / "runs.db")
    for trace in two_traces:
        store.save(trace)
    exported, single = tmp_path / "runs.json", tmp_path / "ask.json"
    exported.write_text(store.export(["t1", "t2"]), encoding="utf-8")
    single.write_text(two_traces[0].to_json(indent=2), encoding="utf-8")
    assert read_traces(exported) == tuple(two_traces)
    assert read_traces(single) == (two_traces[0],)


def test_a_line_break_inside_a_json_string_does_not_cut_the_line(tmp_path, make_trace):
    """JSON writes U+2028 and U+0085 unescaped; str.splitlines would cut a trace there."""
    traces = [make_trace(DecisionStep(action="a\u2028b\x85c", elapsed_ms=1.0), id=i) for i in ("t1", "t2")]
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(t.to_json() + "\n" for t in traces), encoding="utf-8")
    assert read_traces(path) == tuple(traces)


@pytest.mark.parametrize("bad, problem", [
    ("{not json", "traces.jsonl:3: not valid JSON"),
    ('{"id": "t9"}', "traces.jsonl:3: not a ragscope trace: trace is missing 'question'"),
    ('{"id": "t9", "question": "q", "method": "m", "backend": "b", "model": "", "pack": "p", "steps": [{"kind": '
     '"retrieval", "query": 3}]}', "traces.jsonl:3: not a ragscope trace: trace.steps[0]"),
], ids=["not-json", "not-a-trace", "bad-step"])
def test_a_bad_line_is_named_by_its_number(tmp_path, two_traces, bad, problem):
    path = tmp_path / "traces.jsonl"
    path.write_text(f"{two_traces[0].to_json()}\n\n{bad}\n{two_traces[1].to_json()}\n", encoding="utf-8")
    with pytest.raises(RagscopeError, match=problem.replace("[", r"\[").replace("]", r"\]")):
        read_traces(path)


def test_two_traces_with_one_id_are_refused_naming_both_lines(tmp_path, two_traces):
    path = tmp_path / "traces.jsonl"
    path.write_text("".join(two_traces[0].to_json() + "\n" for _ in range(2)), encoding="utf-8")
    with pytest.raises(RagscopeError, match=r"traces.jsonl:2: trace id 't1' is already used by .*traces.jsonl:1"):
        read_traces(path)


@pytest.mark.parametrize("content, problem", [(b"\n\n", "holds no traces"), (b"[]", "holds no traces"),
                                              (b"\xff\xfe{}", "not UTF-8 text")])
def test_an_empty_or_undecodable_file_is_refused(tmp_path, content, problem):
    path = tmp_path / "traces.jsonl"
    path.write_bytes(content)
    with pytest.raises(RagscopeError, match=problem):
        read_traces(path)
