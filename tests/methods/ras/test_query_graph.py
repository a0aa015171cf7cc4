"""The RAS query graph: case folding, pack aliases, embedding merges, dedup and provenance."""

from __future__ import annotations

import numpy as np

from engine.methods.ras.query_graph import GraphTriple, QueryGraph, fold


def test_fold():
    assert fold("The Royal Society's") == "royal society" == fold("royal  society")


def test_case_alias_and_provenance():
    graph = QueryGraph(alias_of=lambda n: "Mercury (planet)" if n.lower() == "mercury" else None)
    d1 = graph.add([GraphTriple("Marie Curie", "born in", "Warsaw", 1, "q1", "c1", "d1")])
    d2 = graph.add([GraphTriple("marie curie", "born in", "warsaw", 2, "q2", "c2", "d2"),
                    GraphTriple("MARIE CURIE", "studied", "Mercury", 2, "q2", "c3", "d3")])
    assert d1.new_nodes == ("Marie Curie", "Warsaw") and len(d2.new_triples) == 1
    assert d2.new_triples[0].tail == "Mercury (planet)" and d2.new_triples[0].head == "Marie Curie"
    assert ("Mercury", "Mercury (planet)", "alias") in d2.merged
    assert [t.chunk_id for t in graph.triples] == ["c1", "c3"] and graph.triples[1].round == 2


def test_embedding_merge_uses_the_threshold():
    vecs = {"Pierre Curie": [1.0, 0.0], "P. Curie": [0.95, 0.312], "Paris": [0.0, 1.0]}
    encode = lambda names: np.array([vecs[n] for n in names])  # noqa: E731
    graph = QueryGraph(encode=encode, threshold=0.9)
    graph.add([GraphTriple("Pierre Curie", "worked in", "Paris", 1)])
    delta = graph.add([GraphTriple("P. Curie", "born in", "Paris", 2)])
    assert delta.new_triples[0].head == "Pierre Curie" and not delta.new_nodes
