"""The run diff on two hand-built traces that differ in known ways: every known difference found, nothing else."""

from __future__ import annotations

import json
from dataclasses import replace

from engine.trace import (
    AnswerStep,
    AttentionStep,
    DecisionStep,
    Edge,
    GraphDeltaStep,
    Hit,
    LlmCallStep,
    Node,
    RetrievalStep,
    RuleMatch,
    RulesMatchedStep,
    Trace,
    UnknownStep,
)
from engine.trace_diff import (
    ChunkRow,
    FieldDiff,
    GraphEdge,
    GraphNode,
    RoundGraph,
    StepPair,
    diff_traces,
    format_diff,
)
from engine.trace_diff.steps import _merged

QUESTION = "Where was Ada born?"


def _hit(chunk: str, rank: int, score: float = 0.5) -> Hit:
    doc = chunk.split("#")[0]
    return Hit(doc_id=doc, chunk_id=chunk, title=f"Title {doc}", text=f"text of {chunk}", score=score, rank=rank)


def _rule(rule_id: str) -> RuleMatch:
    return RuleMatch(id=rule_id, text=f"rule {rule_id}", head="born_in", body=("lived_in",), confidence=0.9,
                     support=3, similarity=0.7)


def _call(latency: float) -> LlmCallStep:
    return LlmCallStep(iteration=1, title="Read", role="reader", prompt="p", output="o", tokens_in=10, tokens_out=2,
                       latency_ms=latency, elapsed_ms=latency)


def _trace(run_id: str, params: dict, steps: tuple, latency: float) -> Trace:
    head = Trace(id=run_id, question=QUESTION, method="m", backend="offline", model="", pack="p", params=params,
                 started=f"2030-01-01T00:00:0{run_id[-1]}+00:00")
    return head.with_steps(steps, latency)


ADA, LONDON = Node("ada", "Ada"), Node("london", "London")
BORN = Edge("ada", "born_in", "london")


def run_a() -> Trace:
    return _trace("run-a", {"k": 2}, (
        RulesMatchedStep(iteration=0, title="Rules", rules=(_rule("r1"),), elapsed_ms=1.0),
        RetrievalStep(iteration=1, title="Retrieve", query=QUESTION, retriever="dense",
                      hits=(_hit("d1#0", 1), _hit("d2#0", 2)), elapsed_ms=2.0),
        GraphDeltaStep(iteration=1, title="Graph", added_nodes=(ADA, LONDON), added_edges=(BORN,)),
        _call(40.0),
        AnswerStep(iteration=1, title="Answer", text="London", confidence=0.8, evidence=("d1", "d2")),
    ), 50.0)


def run_b() -> Trace:
    """run_a with rule r2 added, chunk d1 swapped for d3, London gone from the graph, a second round that decides,
    another answer — and other timings everywhere, which must not count."""
    return _trace("run-b", {"k": 3}, (
        RulesMatchedStep(iteration=0, title="Rules", rules=(_rule("r1"), _rule("r2")), elapsed_ms=9.0),
        RetrievalStep(iteration=1, title="Retrieve", query=QUESTION, retriever="dense",
                      hits=(_hit("d2#0", 1), _hit("d3#0", 2)), elapsed_ms=7.0),
        GraphDeltaStep(iteration=1, title="Graph", added_nodes=(ADA,)),
        _call(90.0),
        AnswerStep(iteration=1, title="Answer", text="Paris", confidence=0.4, evidence=("d2", "d3")),
        DecisionStep(iteration=2, title="Decide", action="[SUFFICIENT]", detail="enough"),
    ), 120.0)


def test_every_known_difference_is_found_and_nothing_else():
    diff = diff_traces(run_a(), run_b())
    assert diff.same_question
    assert diff.header_changes == (FieldDiff("k", "2", "3"),)
    assert diff.steps == (
        StepPair(0, "rules_matched", 1, "Rules", "Rules", ("rules: 1 only in B (r2); 1 in both",)),
        StepPair(1, "retrieval", 1, "Retrieve", "Retrieve",
                 ("hits: 1 only in A (d1#0); 1 only in B (d3#0); 1 in both",)),
        StepPair(1, "graph_delta", 1, "Graph", "Graph",
                 ("A +2 nodes +1 edges −0 nodes −0 edges; B +1 nodes +0 edges −0 nodes −0 edges",)),
        StepPair(1, "llm_call", 1, "Read", "Read", ()),  # only its latency differs
        StepPair(1, "answer", 1, "Answer", "Answer", ("text: 'London' → 'Paris'", "confidence: 0.8 → 0.4")),
        StepPair(2, "decision", 1, None, "Decide", ("[SUFFICIENT]: enough",)),
    )
    assert (diff.rounds_only_a, diff.rounds_only_b) == ((), (2,))
    assert diff.chunks == (ChunkRow("d1#0", "d1", "Title d1", 1, None), ChunkRow("d2#0", "d2", "Title d2", 2, 1),
                           ChunkRow("d3#0", "d3", "Title d3", None, 2))
    assert diff.graph.nodes_removed == (GraphNode("london", "London"),) and diff.graph.nodes_added == ()
    assert diff.graph.edges_removed == (GraphEdge("ada", "born_in", "london", "Ada –born_in→ London"),)
    assert diff.graph.edges_added == () and not diff.graph.pruned_only_in_a and not diff.graph.pruned_only_in_b
    assert diff.graph.rounds == (RoundGraph(0, 0, 0, 0, 0), RoundGraph(1, 0, 1, 0, 1), RoundGraph(2, 0, 1, 0, 1))
    assert diff.answer_changes == (FieldDiff("text", "London", "Paris"), FieldDiff("confidence", "0.800", "0.400"),
                                   FieldDiff("evidence only in one run", "d1", "d3"))
    assert (diff.answer_a.latency_ms, diff.answer_b.latency_ms) == (50.0, 120.0)  # shown, not a difference
    assert not diff.identical


def test_a_trace_diffed_with_itself_or_a_rerun_that_differs_only_in_timings_has_no_differences():
    a = run_a()
    rerun = replace(a, id="rerun", started="2031-01-01T00:00:00+00:00",
                    steps=tuple(replace(s, elapsed_ms=s.elapsed_ms + 5) for s in a.steps))
    rerun = rerun.with_steps(tuple(replace(s, latency_ms=99.0) if isinstance(s, LlmCallStep) else s
                                   for s in rerun.steps), 999.0)
    for other in (a, rerun):
        diff = diff_traces(a, other)
        assert diff.identical
        assert not diff.header_changes and not diff.answer_changes and not diff.graph.changed
        assert all(p.side == "both" and not p.changes for p in diff.steps)
        assert all(c.rank_a == c.rank_b for c in diff.chunks)
        assert format_diff(diff).endswith("no differences but timings")


def test_a_pruned_node_and_an_added_edge_are_told_apart_from_added_and_removed_ones():
    a = _trace("run-a", {}, (GraphDeltaStep(iteration=1, added_nodes=(ADA, LONDON)),), 1.0)
    b = _trace("run-b", {}, (GraphDeltaStep(iteration=1, added_nodes=(ADA, LONDON), added_edges=(BORN,)),
                             GraphDeltaStep(iteration=2, pruned_nodes=(LONDON,))), 1.0)
    graph = diff_traces(a, b).graph
    assert graph.pruned_only_in_b == (GraphNode("london", "London"),) and not graph.pruned_only_in_a
    assert graph.edges_added == (GraphEdge("ada", "born_in", "london", "Ada –born_in→ London"),)
    assert not graph.nodes_added and not graph.nodes_removed and not graph.edges_removed


def test_same_hits_with_other_provenance_or_order_are_each_named():
    def retrieval(*hits: Hit) -> Trace:
        return _trace("run-x", {}, (RetrievalStep(iteration=1, query="q", retriever="r", hits=hits),), 1.0)

    first, second = _hit("d1#0", 1), _hit("d2#0", 2)
    reordered = diff_traces(retrieval(first, second), retrieval(replace(second, rank=1), replace(first, rank=2)))
    assert reordered.steps[0].changes == ("same hits, ranked differently",)
    pulled = diff_traces(retrieval(first), retrieval(replace(first, provenance="rule r1")))
    assert pulled.steps[0].changes == ("same hits in the same order; their provenance differs",)


def test_other_kinds_compare_by_payload_and_a_query_change_is_shown():
    def one(step) -> Trace:
        return _trace("run-x", {}, (step,), 1.0)

    unknown = UnknownStep(iteration=1, title="new kind", original_kind="future", data={"x": 1, "y": 2})
    assert diff_traces(one(unknown), one(replace(unknown, data={"x": 1, "y": 3}))).steps[0].changes == \
        ("changed: y",)
    assert diff_traces(one(unknown), one(unknown)).identical
    asked = RetrievalStep(iteration=1, query="old words", retriever="r", hits=())
    assert diff_traces(one(asked), one(replace(asked, query="new words"))).steps[0].changes == \
        ("query: 'old words' → 'new words'",)
    call = _call(1.0)
    assert diff_traces(one(call), one(replace(call, output="other", tokens_out=5))).steps[0].changes == \
        ("prompt same, output changed", "tokens in/out: A 10/2, B 10/5")


def test_an_untitled_attention_map_is_named_by_its_map_and_an_untitled_step_stays_a_step():
    # A model's call maps carry a name but no title (a real hf run's RAS trace has ten of them).
    attention = AttentionStep(iteration=1, name="planner: layer × segment", matrix=((1.0,),), x_labels=("q",),
                              y_labels=("L0",))
    pair, decision = diff_traces(_trace("run-1", {}, (attention,), 1.0),
                                 _trace("run-2", {}, (attention, DecisionStep(iteration=1, action="a")), 1.0)).steps
    assert (pair.title_a, pair.title_b) == ("planner: layer × segment", "planner: layer × segment")
    assert (decision.title_a, decision.title_b, decision.side) == (None, "", "B")


def test_a_kind_only_b_has_is_placed_after_the_kind_it_follows_in_b():
    assert _merged(["retrieval", "answer"], ["decision", "retrieval", "graph_delta", "answer"]) == \
        ["decision", "retrieval", "graph_delta", "answer"]


def test_policy_and_params_are_compared_per_setting():
    a = _trace("run-a", {"k": 2, "min_confidence": 0.2}, (), 1.0)
    b = _trace("run-b", {"k": 2}, (), 1.0)
    changed = {f.name: (f.a, f.b) for f in diff_traces(a, b).header_changes}
    assert changed == {"min_confidence": ("0.2", "—")}  # B recorded no policy: said, not made up


def test_the_text_says_different_questions_on_its_first_line_and_lists_each_part():
    b = replace(run_b(), question="Where was Babbage born?",
                steps=tuple(replace(s, title="Search") if s.kind == "retrieval" else s for s in run_b().steps))
    text = format_diff(diff_traces(run_a(), b))
    lines = text.split("\n")
    assert lines[0] == "A run-a (m) vs B run-b (m): DIFFERENT questions"
    assert lines[1:3] == [f"- question: {QUESTION}", "+ question: Where was Babbage born?"]
    for expected in ("  - k  2", "  + k  3", "  ~ [1] retrieval #1  Retrieve → Search", "  + [2] decision #1  Decide",
                     "  rounds only in B: 2", "  - d1#0  doc d1  Title d1  rank 1 / —",
                     "  + d3#0  doc d3  Title d3  rank — / 2", "  ~ d2#0  doc d2  Title d2  rank 2 / 1",
                     "  - node London (london)", "  - edge Ada –born_in→ London", "  = [1] llm_call #1  Read"):
        assert expected in lines, expected
    assert text == format_diff(diff_traces(run_a(), b))  # stable
    assert format_diff(diff_traces(run_a(), run_b())).split("\n")[0] == "A run-a (m) vs B run-b (m): same question"


def test_the_json_form_holds_every_part_and_whether_the_runs_are_identical():
    data = json.loads(json.dumps(diff_traces(run_a(), run_b()).to_dict()))
    assert data["identical"] is False and data["same_question"] is True
    assert [c["chunk_id"] for c in data["chunks"]] == ["d1#0", "d2#0", "d3#0"]
    assert data["graph"]["nodes_removed"] == [{"id": "london", "label": "London"}]
    assert data["steps"][-1] == {"iteration": 2, "kind": "decision", "n": 1, "title_a": None, "title_b": "Decide",
                                 "changes": ["[SUFFICIENT]: enough"], "side": "B", "changed": True}
    assert [c["side"] for c in data["chunks"]] == ["A", "both", "B"]
    assert [h["name"] for h in data["header"] if not h["same"]] == ["k"]


def test_a_run_without_an_answer_is_said_so():
    stopped = replace(run_a(), steps=run_a().steps[:2])
    diff = diff_traces(stopped, run_a())
    assert not diff.answer_a.answered and diff.answer_b.answered
    assert FieldDiff("answered", "false", "true") in diff.answer_changes
    assert "  A  (no answer: the run stopped before answering)" in format_diff(diff).split("\n")


def test_a_saved_policy_value_that_no_longer_checks_is_shown_as_saved():
    a = _trace("run-a", {"min_confidence": "abc"}, (), 1.0)  # a hand-edited or imported trace
    b = _trace("run-b", {"min_confidence": 0.5}, (), 1.0)
    assert FieldDiff("min_confidence", "abc", "0.5") in diff_traces(a, b).header_changes
