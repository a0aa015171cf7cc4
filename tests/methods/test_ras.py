"""RAS end to end: offline two-hop bridge, the demo pack, and a scripted LLM path."""

from __future__ import annotations


from engine.knowledge.records import Document, Pack, PackInfo, Triple
from engine.runner import Workbench
from engine.trace import AnswerStep, DecisionStep, GraphDeltaStep, RetrievalStep

MENTOR = "Where was Alice Varga's doctoral advisor born?"


def two_hop_pack() -> Pack:
    docs = (
        Document("h1", "Alice Varga", "Alice Varga is a chemist. Her doctoral advisor was Bruno Kessler.",
                 entities=("Alice Varga", "Bruno Kessler")),
        Document("h2", "Bruno Kessler", "Bruno Kessler is a physicist. He was born in Carlow.",
                 entities=("Bruno Kessler", "Carlow")),
        Document("h3", "Dorvik", "Dorvik is a fishing town in the north, famous for its harbour.", entities=("Dorvik",)),
        Document("h4", "Carlow", "Carlow is a small market town on the river Barrow.", entities=("Carlow",)),
    )
    triples = (Triple("Alice Varga", "doctoral_advisor", "Bruno Kessler"), Triple("Bruno Kessler", "born_in", "Carlow"))
    return Pack(PackInfo("two-hop"), docs, triples)


def test_two_hop_second_subquery_uses_the_bridge(settings):
    trace = Workbench(two_hop_pack(), settings).ask(MENTOR, "ras", {"k": 1})
    queries = [s.query for s in trace.steps if isinstance(s, RetrievalStep)]
    assert queries[0] == MENTOR
    assert len(queries) >= 2 and "Bruno Kessler" in queries[1]
    second = [s for s in trace.steps if isinstance(s, RetrievalStep)][1]
    assert "h2" in {h.doc_id for h in second.hits if "already read" not in h.provenance}
    assert trace.answer.text == "Carlow"


def test_demo_sequence_offline(demo_workbench):
    q = demo_workbench.pack.questions[0]
    trace = demo_workbench.ask(q.question, "ras")
    kinds = [s.kind for s in trace.steps]
    assert kinds[0] == "decision" and kinds[1] == "retrieval" and kinds[2] == "graph_delta"
    assert isinstance(trace.steps[-1], AnswerStep) and trace.answer.evidence
    deltas = [s for s in trace.steps if isinstance(s, GraphDeltaStep)]
    rounds = {s.iteration for s in trace.steps if isinstance(s, RetrievalStep)}
    assert len(deltas) == len(rounds) <= 3
    last = [s for s in trace.steps if isinstance(s, DecisionStep)][-1]
    assert last.action in ("sufficient", "cap")
    if last.action == "cap":
        assert "cap" in last.detail


def test_cap_is_announced(demo_workbench):
    trace = demo_workbench.ask("Who supervised the doctoral research of the discoverer of radium?", "ras",
                               {"max_iterations": 1})
    decision = [s for s in trace.steps if isinstance(s, DecisionStep)][-1]
    assert decision.action in ("cap", "sufficient")
    assert decision.action == "cap" and "cap" in decision.detail.lower()
