"""`ask --graph-out PATH [--graph-round N]`: the run's graph of one round as a GraphML or JSON file (issue 28)."""

from __future__ import annotations

import json

import networkx as nx
import pytest

from engine.cli import main
from paths import MINI_PACK

QUESTION = "In which city was Ada Lovelace born?"


def _ask(method: str, *options: str) -> int:
    return main(["ask", "--pack", str(MINI_PACK), "--method", method, *options, QUESTION])


@pytest.mark.parametrize("method", ["tog2", "ras"])
def test_a_graph_method_writes_graphml_that_networkx_reads(ragscope_home, tmp_path, capsys, method):
    out = tmp_path / f"{method}.graphml"
    assert _ask(method, "--graph-out", str(out)) == 0
    graph = nx.read_graphml(out, force_multigraph=True)  # a DiGraph otherwise, when no pair has two relations
    assert isinstance(graph, nx.MultiDiGraph) and graph.number_of_edges() >= 1
    assert graph.graph["method"] == method and graph.graph["question"] == QUESTION
    err = capsys.readouterr().err
    assert f"{graph.number_of_nodes()} nodes, {graph.number_of_edges()} edges as of round" in err


def test_ras_json_names_the_chunk_each_edge_was_extracted_from(ragscope_home, tmp_path, capsys):
    out = tmp_path / "ras.json"
    assert _ask("ras", "--json", "--graph-out", str(out)) == 0
    trace = json.loads(capsys.readouterr().out)  # stdout stays the trace JSON alone
    data = json.loads(out.read_text(encoding="utf-8"))
    assert data["trace_id"] == trace["id"] and data["round"] == max(s["iteration"] for s in trace["steps"])
    read = {h["chunk_id"] for s in trace["steps"] if s["kind"] == "retrieval" for h in s["hits"]}
    assert data["edges"] and all(e["chunk_ids"] and set(e["chunk_ids"]) <= read for e in data["edges"])
    assert all(e["chunk_ids"][0] in e["provenance"] for e in data["edges"])


def test_graph_round_writes_an_earlier_round(ragscope_home, tmp_path):
    last, first = tmp_path / "last.json", tmp_path / "first.json"
    assert _ask("tog2", "--graph-out", str(last)) == 0
    assert _ask("tog2", "--graph-out", str(first), "--graph-round", "0") == 0
    last_data, first_data = (json.loads(p.read_text(encoding="utf-8")) for p in (last, first))
    assert first_data["round"] == 0 and last_data["round"] > 0
    assert {n["first_round"] for n in first_data["nodes"]} == {0}
    assert len(first_data["nodes"]) < len(last_data["nodes"])


@pytest.mark.parametrize(("options", "message"), [
    (["--graph-out", "g.gml"], "must end in .graphml or .json (got '.gml')"),
    (["--graph-out", "graph"], "must end in .graphml or .json (got 'no suffix')"),
    (["--graph-round", "1"], "--graph-round needs --graph-out PATH"),
    (["--graph-out", "g.json", "--graph-round", "-1"], "--graph-round -1 is negative"),
])
def test_bad_graph_options_exit_2_before_the_run(ragscope_home, tmp_path, capsys, monkeypatch, options, message):
    monkeypatch.chdir(tmp_path)
    assert _ask("tog2", *options) == 2
    captured = capsys.readouterr()
    assert message in captured.err and captured.out == ""  # nothing ran
    assert list(tmp_path.iterdir()) == []


def test_a_round_the_run_does_not_have_exits_2_listing_its_rounds(ragscope_home, tmp_path, capsys):
    out = tmp_path / "g.json"
    assert _ask("tog2", "--graph-out", str(out), "--graph-round", "99") == 2
    err = capsys.readouterr().err
    assert "round 99 is not in trace" in err and "its rounds: 0, 1" in err and "not written" in err
    assert not out.exists()


def test_a_method_that_builds_no_graph_exits_2_and_writes_nothing(ragscope_home, tmp_path, capsys):
    out = tmp_path / "g.graphml"
    assert _ask("vanilla", "--graph-out", str(out)) == 2
    captured = capsys.readouterr()
    assert "answer:" in captured.out  # the run itself is still shown
    assert "method vanilla builds no graph" in captured.err and not out.exists()


def test_a_graph_path_that_is_a_folder_exits_2_and_leaves_it_alone(ragscope_home, tmp_path, capsys):
    folder = tmp_path / "taken.json"
    folder.mkdir()
    (folder / "keep.txt").write_text("mine", encoding="utf-8")
    assert _ask("tog2", "--graph-out", str(folder)) == 2
    assert "taken.json" in capsys.readouterr().err
    assert [p.name for p in folder.iterdir()] == ["keep.txt"] and sorted(p.name for p in tmp_path.iterdir()) == [
        "taken.json"]
