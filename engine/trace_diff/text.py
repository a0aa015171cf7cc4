"""`format_diff`: the terminal text of `python -m engine diff`, stable line for line."""

from __future__ import annotations

from engine.trace_diff.records import MISSING, AnswerSide, GraphDiff, GraphNode, TraceDiff, clip, shown

_MARK = {"A": "-", "B": "+"}


def format_diff(diff: TraceDiff) -> str:
    """Plain text, stable line for line: "- " what only A has, "+ " what only B has, "~ " what both have but
    differently, "= " what is the same. The first line says whether the runs asked the same question."""
    return "\n".join([*_title(diff), "", *_settings(diff), "", *_answers(diff), "", *_steps(diff), "",
                      *_chunk_lines(diff), "", *_graph_lines(diff.graph), "",
                      "no differences but timings" if diff.identical else "the runs differ (see above)"])


def _title(diff: TraceDiff) -> list[str]:
    question = next(f for f in diff.header if f.name == "question")
    method = next(f for f in diff.header if f.name == "method")
    head = f"A {diff.a_id} ({method.a}) vs B {diff.b_id} ({method.b})"
    if diff.same_question:
        return [f"{head}: same question", f"question: {clip(question.a, 200)}"]
    return [f"{head}: DIFFERENT questions", f"- question: {clip(question.a, 200)}",
            f"+ question: {clip(question.b, 200)}"]


def _settings(diff: TraceDiff) -> list[str]:
    changed = [f for f in diff.header_changes if f.name != "question"]
    if not changed:
        return ["settings: the same"]
    width = max(len(f.name) for f in changed)
    return ["settings (- A, + B)", *(line for f in changed
                                     for line in (f"  - {f.name:<{width}}  {clip(f.a)}",
                                                  f"  + {f.name:<{width}}  {clip(f.b)}"))]


def _answer_line(name: str, side: AnswerSide) -> list[str]:
    if not side.answered:
        return [f"  {name}  (no answer: the run stopped before answering)"]
    text = f"REFUSED · {side.text}" if side.refused else side.text
    facts = [f"confidence {side.confidence:.3f}", *([f"guess {clip(side.guess, 40)}"] if side.guess else []),
             f"evidence {', '.join(side.evidence) or MISSING}", f"{side.llm_calls} LLM calls",
             f"{side.tokens_in}/{side.tokens_out} tokens", f"{side.latency_ms:.0f} ms"]
    return [f"  {name}  {clip(text, 200)}", f"     {' · '.join(facts)}"]


def _answers(diff: TraceDiff) -> list[str]:
    changes = "; ".join(f"{f.name} (A {clip(f.a, 40)}, B {clip(f.b, 40)})" for f in diff.answer_changes)
    return ["answer", *_answer_line("A", diff.answer_a), *_answer_line("B", diff.answer_b),
            f"  differs: {changes}" if changes else "  the same (timings aside)"]


def _steps(diff: TraceDiff) -> list[str]:
    lines = ["steps, aligned by round and kind (= same, ~ changed, - only in A, + only in B)"]
    for pair in diff.steps:
        mark = _MARK.get(pair.side) or ("~" if pair.changes else "=")
        titles = dict.fromkeys(t for t in (pair.title_a, pair.title_b) if t is not None)
        lines.append(f"  {mark} [{pair.iteration}] {pair.kind} #{pair.n}  "
                     + " → ".join(clip(t, 60) for t in titles))
        lines.extend(f"        {change}" for change in pair.changes if change)
    if not diff.steps:
        lines.append("  neither run has steps")
    for name, rounds in (("A", diff.rounds_only_a), ("B", diff.rounds_only_b)):
        if rounds:
            lines.append(f"  rounds only in {name}: {', '.join(map(str, rounds))}")
    return lines


def _chunk_lines(diff: TraceDiff) -> list[str]:
    if not diff.chunks:
        return ["chunks: neither run retrieved any"]
    lines = ["chunks, best rank in A / B (- only in A, + only in B, ~ ranked differently, = same rank)"]
    for row in diff.chunks:
        mark = _MARK.get(row.side) or ("=" if row.rank_a == row.rank_b else "~")
        ranks = f"{shown(row.rank_a)} / {shown(row.rank_b)}"
        lines.append(f"  {mark} {row.chunk_id}  doc {row.doc_id}  {clip(row.title, 50)}  rank {ranks}")
    return lines


def _graph_lines(graph: GraphDiff) -> list[str]:
    if not graph.rounds:
        return ["graph: neither run built one"]
    if not graph.changed:
        return ["graph: the same final graph"]
    lines = ["graph, final (+ in B not A, - in A not B)",
             *(f"  + node {_node(n)}" for n in graph.nodes_added),
             *(f"  - node {_node(n)}" for n in graph.nodes_removed),
             *(f"  + edge {clip(e.label, 100)}" for e in graph.edges_added),
             *(f"  - edge {clip(e.label, 100)}" for e in graph.edges_removed),
             *(f"  pruned in A only: {_node(n)}" for n in graph.pruned_only_in_a),
             *(f"  pruned in B only: {_node(n)}" for n in graph.pruned_only_in_b)]
    lines.extend(f"  round {r.iteration}: +{r.nodes_added} −{r.nodes_removed} nodes, +{r.edges_added} "
                 f"−{r.edges_removed} edges" for r in graph.rounds if r.changed)
    return lines


def _node(node: GraphNode) -> str:
    label = clip(node.label, 60)
    return label if node.label == node.id else f"{label} ({node.id})"
