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


def test_a_rounds_names_are_encoded_in_one_call_and_never_twice():
    """One encoder call per name made a demo question's first RAS run take 5-20 s (issue 14)."""
    calls: list[list[str]] = []

    def encode(names):
        calls.append(list(names))
        return np.array([[1.0, float(len(n))] for n in names]) / np.sqrt(1 + np.array([[len(n) ** 2] for n in names]))

    graph = QueryGraph(encode=encode, threshold=0.999)
    graph.add([GraphTriple("Paul Dirac", "advisor", "Ralph Fowler", 1),
               GraphTriple("Ralph Fowler", "born in", "Roydon", 1),
               GraphTriple("Paul Dirac", "born in", "Bristol", 1)])
    assert len(calls) == 1 and sorted(calls[0]) == ["Bristol", "Paul Dirac", "Ralph Fowler", "Roydon"]
    graph.add([GraphTriple("Ralph Fowler", "studied at", "Trinity College", 2)])
    assert calls[1:] == [["Trinity College"]]  # only the new name, once
