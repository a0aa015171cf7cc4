"""Export of a round's query-specific graph (issue 28): exact JSON, GraphML that networkx reads back equal."""

from __future__ import annotations

import io
import json

import networkx as nx
import pytest

from engine.errors import RagscopeError
from engine.trace import AnswerStep, Edge, GraphDeltaStep, Hit, Node, RetrievalStep, Trace
from engine.trace_graph.export import (
    ChunkIndex,
    checked_round,
    file_name,
    graph_bytes,
    graph_json,
    graphml_bytes,
    to_networkx,
    write_graph,
)

HOSTILE = "<script>alert('x')</script> & \"quoted\" Ærø 漢字 😀"
LINES = "two\r\nlines\tand  spaces "
C = "c <&\"'> ü"  # a node id with markup in it


def _hit(doc: str, chunk: str, provenance: str = "") -> Hit:
    return Hit(doc, chunk, f"title of {doc}", "text", 0.5, 1, provenance=provenance)


def hand_built() -> Trace:
    """Round 0: a topic node with a hostile label, two relations between one pair (one from a doc id, one from
    a chunk id). Round 1: a new node, an edge naming a chunk retrieved only in round 1, and `b` pruned."""
    steps = (
        RetrievalStep(iteration=0, query="q", retriever="bm25",
                      hits=(_hit("d1", "d1#0", provenance="a"), _hit("d1", "d1#1"), _hit("d2", "d2#0"))),
        GraphDeltaStep(iteration=0, added_nodes=(Node("a", HOSTILE, "topic", 1.0), Node("b", "Beta")),
                       added_edges=(Edge("a", "r1", "b", 0.5, "pack KG, as read in d1"),
                                    Edge("a", "r2", "b", None, "round 0, chunk d2#0"),
                                    Edge("a", "later", "a", None, "chunk d3#0")),
                       focus=("a",)),
        RetrievalStep(iteration=1, query="q1", retriever="bm25", hits=(_hit("d3", "d3#0", provenance=C),)),
        GraphDeltaStep(iteration=1, added_nodes=(Node(C, LINES, score=2),),
                       added_edges=(Edge("b", HOSTILE, C, 0.25, "round 1, chunk d3#0."),),
                       pruned_nodes=(Node("b", "Beta"),), focus=(C,)),
        AnswerStep(iteration=1, text="Gamma"),
    )
    head = Trace(id="t28", question=f"what links {HOSTILE}?", method="ras", backend="offline", model="",
                 pack="mini")
    return head.with_steps(steps, 1.0)


def _node(id_: str, label: str, kind: str, first: int, pruned: bool, focus: bool, score, chunks) -> dict:
    return {"id": id_, "label": label, "kind": kind, "first_round": first, "pruned": pruned, "focus": focus,
            "score": score, "chunk_ids": chunks}


def _edge(source: str, relation: str, target: str, first: int, pruned: bool, score, provenance: str,
          chunks) -> dict:
    return {"source": source, "relation": relation, "target": target, "first_round": first, "pruned": pruned,
            "score": score, "provenance": provenance, "chunk_ids": chunks}


def test_the_last_round_exports_exactly_with_chunk_ids_from_doc_and_chunk_provenance():
    assert graph_json(hand_built(), 1) == {
        "trace_id": "t28", "question": f"what links {HOSTILE}?", "method": "ras", "pack": "mini", "round": 1,
        "nodes": [_node("a", HOSTILE, "topic", 0, False, False, 1.0, ["d1#0"]),
                  _node("b", "Beta", "entity", 0, True, False, None, []),
                  _node(C, LINES, "entity", 1, False, True, 2.0, ["d3#0"])],
        "edges": [_edge("a", "r1", "b", 0, True, 0.5, "pack KG, as read in d1", ["d1#0", "d1#1"]),
                  _edge("a", "r2", "b", 0, True, None, "round 0, chunk d2#0", ["d2#0"]),
                  _edge("a", "later", "a", 0, False, None, "chunk d3#0", ["d3#0"]),
                  _edge("b", HOSTILE, C, 1, True, 0.25, "round 1, chunk d3#0.", ["d3#0"])],
    }


def test_an_earlier_round_folds_only_the_deltas_and_hits_up_to_it():
    data = graph_json(hand_built(), 0)
    assert data["round"] == 0
    assert [(n["id"], n["pruned"], n["focus"]) for n in data["nodes"]] == [("a", False, True), ("b", False, False)]
    assert [(e["relation"], e["pruned"]) for e in data["edges"]] == [("r1", False), ("r2", False), ("later", False)]
    # d3#0 is retrieved in round 1: as of round 0 the edge naming it has no chunk to point to yet
    assert data["edges"][2]["chunk_ids"] == []


def _read(content: bytes) -> nx.MultiDiGraph:
    return nx.read_graphml(io.BytesIO(content))


def test_graphml_reads_back_with_the_same_nodes_edges_and_attributes():
    trace = hand_built()
    back = _read(graphml_bytes(trace, 1))
    expected = to_networkx(graph_json(trace, 1))
    assert isinstance(back, nx.MultiDiGraph)
    assert {k: v for k, v in back.graph.items() if not k.endswith("_default")} == expected.graph
    assert dict(back.nodes(data=True)) == dict(expected.nodes(data=True))
    assert list(back.edges(keys=True, data=True)) == list(expected.edges(keys=True, data=True))
    # both relations between a and b are kept, None left out, chunk ids one ';'-joined string
    assert [(k, d["relation"]) for u, v, k, d in back.edges(keys=True, data=True) if (u, v) == ("a", "b")] == [
        ("e0", "r1"), ("e1", "r2")]
    assert "score" not in back.edges["a", "b", "e1"] and back.edges["a", "b", "e0"]["score"] == 0.5
    assert back.edges["a", "b", "e0"]["chunk_ids"] == "d1#0;d1#1"
    assert back.nodes["a"]["label"] == HOSTILE and back.nodes[C]["label"] == LINES
    assert back.edges["b", C, "e3"]["label"] == HOSTILE  # Gephi shows an edge's `label`


def test_graphml_escapes_markup_and_declares_key_types_for_gephi():
    text = graphml_bytes(hand_built(), 1).decode("utf-8")
    assert "<script>" not in text and "&lt;script&gt;" in text and "&amp;" in text
    for name, kind in (("score", "double"), ("pruned", "boolean"), ("first_round", "long"), ("label", "string")):
        assert f'attr.name="{name}" attr.type="{kind}"' in text


def test_characters_xml_cannot_hold_become_a_replacement_mark_in_graphml_only():
    trace = hand_built()
    odd = trace.with_steps((GraphDeltaStep(iteration=0, added_nodes=(Node("x", "bell\x07 vt\x0b"),)),), 1.0)
    assert graph_json(odd, 0)["nodes"][0]["label"] == "bell\x07 vt\x0b"
    assert _read(graphml_bytes(odd, 0)).nodes["x"]["label"] == "bell\ufffd vt\ufffd"


def test_json_bytes_load_back_equal_even_with_a_lone_surrogate():
    trace = hand_built()
    assert json.loads(graph_bytes(trace, 1, ".json")) == graph_json(trace, 1)
    with pytest.raises(RagscopeError, match="unknown graph format '.gml'; known: .graphml, .json"):
        graph_bytes(trace, 1, ".gml")
    broken = Trace(id="t", question="half \udc80 a pair", method="ras", backend="offline", model="", pack="p")
    assert json.loads(graph_bytes(broken, 0, ".json"))["question"] == "half \udc80 a pair"


def test_write_graph_picks_the_format_from_the_suffix(tmp_path):
    trace = hand_built()
    view = write_graph(trace, 1, tmp_path / "g.GraphML")
    assert len(view.nodes) == 3 and _read((tmp_path / "g.GraphML").read_bytes()).number_of_edges() == 4
    write_graph(trace, 0, tmp_path / "g.json")
    assert json.loads((tmp_path / "g.json").read_text(encoding="utf-8")) == graph_json(trace, 0)
    with pytest.raises(RagscopeError, match=r"must end in \.graphml or \.json \(got '\.gml'\)"):
        write_graph(trace, 1, tmp_path / "g.gml")
    assert not (tmp_path / "g.gml").exists()


def test_the_round_defaults_to_the_last_and_a_missing_one_lists_the_rounds():
    trace = hand_built()
    assert checked_round(trace, None) == 1 and checked_round(trace, 0) == 0
    with pytest.raises(RagscopeError, match="round 4 is not in trace t28; its rounds: 0, 1"):
        checked_round(trace, 4)


def test_an_id_counts_only_where_it_stands_alone():
    index = ChunkIndex(("doc-1#0", "doc-10#0", "doc-10#1"),
                       {"doc-1": ("doc-1#0",), "doc-10": ("doc-10#0", "doc-10#1")})
    assert index.named_in("chunk doc-1#0.") == ("doc-1#0",)
    assert index.named_in("from doc-10, then doc-1") == ("doc-10#0", "doc-10#1", "doc-1#0")
    assert index.named_in("doc-1x or xdoc-1 or doc-1#9") == ()
    assert ChunkIndex().named_in("doc-1") == ()


def test_download_file_names_carry_the_trace_and_round():
    assert file_name(hand_built(), 2, ".graphml") == "graph-t28-round2.graphml"


def test_graphml_booleans_are_spelled_as_xml_schema_spells_them():
    text = graphml_bytes(hand_built(), 1).decode("utf-8")
    assert ">true</data>" in text and ">false</data>" in text
    assert ">True</data>" not in text and ">False</data>" not in text
    named = hand_built().with_steps((GraphDeltaStep(iteration=0, added_nodes=(Node("x", "True"),)),), 1.0)
    assert _read(graphml_bytes(named, 0)).nodes["x"] == {"label": "True", "kind": "entity", "first_round": 0,
                                                         "pruned": False, "focus": False, "chunk_ids": ""}


def test_a_score_that_is_not_a_number_exports_as_no_score():
    steps = (GraphDeltaStep(iteration=0, added_nodes=(Node("x", "X", score=float("nan")),),
                            added_edges=(Edge("x", "r", "x", float("inf")),)),)
    data = graph_json(hand_built().with_steps(steps, 1.0), 0)
    assert data["nodes"][0]["score"] is None and data["edges"][0]["score"] is None
