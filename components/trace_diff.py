"""Two runs side by side, as `engine.trace_diff` finds them different: settings, answer, steps aligned by round and
kind, chunks only in one run, graph nodes and edges added or removed (issue 28). Renders only; every text from a run
goes to markdown through md_text, and tables show cells as text."""

from __future__ import annotations

import streamlit as st

from components.safe import md_text
from engine.trace import Trace
from engine.trace_diff import MISSING, AnswerSide, ChunkRow, GraphEdge, StepPair, TraceDiff, diff_traces

BASICS = ("method", "backend", "model", "pack")  # shown whether or not they differ: they say what each run was
SIDE = {"both": "both", "A": "A only", "B": "B only"}


def render_trace_diff(a: Trace, b: Trace, *, key: str) -> None:
    """A is the reference: "added" means in B and not in A. `key` namespaces every widget (one diff per flipped
    question on a page is fine)."""
    diff = diff_traces(a, b)
    _heading(diff, a, b)
    _settings(diff, key)
    _answers(diff, key)
    _steps(diff, key)
    _chunks(diff, key)
    _graph(diff, key)


def _run(trace: Trace) -> str:
    started = trace.started[:19].replace("T", " ")
    return f"{trace.method} run {trace.id}" + (f" ({started} UTC)" if started else "")


def _heading(diff: TraceDiff, a: Trace, b: Trace) -> None:
    st.markdown(md_text(f"A = {_run(a)} · B = {_run(b)}"))
    if diff.same_question:
        st.caption(md_text(f"Same question: {a.question}"))
    else:
        st.warning(md_text(f"These runs asked different questions — A: “{a.question}” · B: “{b.question}”"),
                   icon=":material/compare_arrows:")
    if diff.identical:
        st.success("No differences but timings.", icon=":material/check_circle:")


def _settings(diff: TraceDiff, key: str) -> None:
    st.markdown("##### Settings")
    rows = [{"setting": f.name, "A": f.a, "B": f.b, "differs": not f.same} for f in diff.header
            if f.name in BASICS or (f.name != "question" and not f.same)]
    st.dataframe(rows, key=f"{key}.settings", hide_index=True, width="stretch",
                 column_config={"differs": st.column_config.CheckboxColumn("differs", width="small")})
    same = sum(f.same for f in diff.header if f.name not in BASICS and f.name != "question")
    if same:
        st.caption(f"{same} other settings are the same in both runs.")


def _answers(diff: TraceDiff, key: str) -> None:
    st.markdown("##### Answer and confidence")
    method = next(f for f in diff.header if f.name == "method")
    for column, name, side in zip(st.columns(2), (f"A · {method.a}", f"B · {method.b}"),
                                  (diff.answer_a, diff.answer_b)):
        with column, st.container(border=True, key=f"{key}.answer_{name[0]}"):
            _answer(name, side)
    if diff.answer_changes:
        st.caption(md_text("Differs: " + "; ".join(f"{f.name} (A {_clip(f.a)} · B {_clip(f.b)})"
                                                     for f in diff.answer_changes)))
    else:
        st.caption("Same answer, confidence, evidence and LLM use (latency aside).")


def _clip(text: str, width: int = 60) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


def _answer(name: str, side: AnswerSide) -> None:
    st.markdown(f"**{md_text(name)}**")
    if not side.answered:
        st.info("No answer: the run stopped before answering.")
        return
    (st.warning if side.refused else st.markdown)(md_text(("Refused: " if side.refused else "") + side.text))
    facts = [f"confidence {side.confidence:.0%}", *([f"best guess {side.guess[:80]}"] if side.guess else []),
             f"evidence {', '.join(side.evidence) or MISSING}", f"{side.llm_calls} LLM calls",
             f"{side.tokens_in}/{side.tokens_out} tokens", f"{side.latency_ms:.0f} ms"]
    st.caption(md_text(" · ".join(facts)))


def _status(pair: StepPair) -> str:
    return SIDE[pair.side] if pair.side != "both" else "changed" if pair.changes else "same"


def _title(title: str | None) -> str:
    return MISSING if title is None else title


def _what(pair: StepPair) -> str:
    """The changes of a pair, or what an unpaired step did."""
    return "; ".join(pair.changes) if pair.side == "both" else (pair.changes[0] if pair.changes else "")


def _steps(diff: TraceDiff, key: str) -> None:
    st.markdown("##### Steps, aligned by round and kind")
    only_changes = st.toggle("Only steps that differ", key=f"{key}.changed_only")
    pairs = [p for p in diff.steps if p.changed or not only_changes]
    rows = [{"round": p.iteration, "kind": p.kind, "#": p.n, "status": _status(p), "what changed": _what(p),
             "step in A": _title(p.title_a), "step in B": _title(p.title_b)} for p in pairs]
    if rows:  # what changed before the titles: at 1280 px the last columns are off screen
        st.dataframe(rows, key=f"{key}.steps", hide_index=True, width="stretch", column_config={
            "round": st.column_config.NumberColumn(width="small"), "#": st.column_config.NumberColumn(width="small"),
            "status": st.column_config.TextColumn(width="small"),
            "what changed": st.column_config.TextColumn(width="large")})
    else:
        st.caption("Every step is the same in both runs." if diff.steps else "Neither run has steps.")
    rounds = [f"rounds only in {name}: {', '.join(map(str, r))}"
              for name, r in (("A", diff.rounds_only_a), ("B", diff.rounds_only_b)) if r]
    if rounds:
        st.caption("; ".join(rounds))


def _chunk_row(row: ChunkRow) -> dict[str, object]:
    return {"in": SIDE[row.side], "chunk": row.chunk_id, "doc": row.doc_id, "title": row.title,
            "best rank A": _rank(row.rank_a), "best rank B": _rank(row.rank_b)}


def _rank(rank: int | None) -> str:
    return MISSING if rank is None else str(rank)


def _chunks(diff: TraceDiff, key: str) -> None:
    st.markdown("##### Chunks")
    if not diff.chunks:
        st.caption("Neither run retrieved any chunk.")
        return
    order = {"A": 0, "B": 1, "both": 2}  # what only one run read first
    rows = [_chunk_row(r) for r in sorted(diff.chunks, key=lambda r: order[r.side])]
    only = sum(r.side != "both" for r in diff.chunks)
    st.caption(f"{only} of {len(diff.chunks)} chunks were retrieved by one run only; ranks are each run's best.")
    st.dataframe(rows, key=f"{key}.chunks", hide_index=True, width="stretch",
                 column_config={"title": st.column_config.TextColumn(width="medium")})


def _ids(edge: GraphEdge) -> str:
    return f"{edge.source} · {edge.relation} · {edge.target}"


def _graph(diff: TraceDiff, key: str) -> None:
    st.markdown("##### Graph")
    graph = diff.graph
    if not graph.rounds:
        st.caption("Neither run built a graph.")
        return
    if not graph.changed:
        st.caption("Both runs ended with the same graph.")
        return
    st.caption(f"Each run's final graph: {len(graph.nodes_added)} nodes and {len(graph.edges_added)} edges added "
               f"(in B and not in A), {len(graph.nodes_removed)} nodes and {len(graph.edges_removed)} edges removed "
               "(in A and not in B).")
    removed = [*({"what": "node", "label": n.label, "id": n.id} for n in graph.nodes_removed),
               *({"what": "edge", "label": e.label, "id": _ids(e)} for e in graph.edges_removed)]
    added = [*({"what": "node", "label": n.label, "id": n.id} for n in graph.nodes_added),
             *({"what": "edge", "label": e.label, "id": _ids(e)} for e in graph.edges_added)]
    for column, title, rows, name in zip(st.columns(2), ("Removed: in A, not in B", "Added: in B, not in A"),
                                         (removed, added), ("removed", "added")):
        with column:
            st.markdown(f"**{title}**")
            if rows:
                st.dataframe(rows, key=f"{key}.graph_{name}", hide_index=True, width="stretch",
                             column_config={"what": st.column_config.TextColumn(width="small"),
                                            "label": st.column_config.TextColumn(width="large")})
            else:
                st.caption("nothing")
    pruned = [*(f"{n.label} pruned in A only" for n in graph.pruned_only_in_a),
              *(f"{n.label} pruned in B only" for n in graph.pruned_only_in_b)]
    if pruned:
        st.caption(md_text("In both graphs, pruned in one: " + "; ".join(pruned)))
    changed = [f"round {r.iteration}: +{r.nodes_added}/−{r.nodes_removed} nodes, +{r.edges_added}/−{r.edges_removed} "
               "edges" for r in graph.rounds if r.changed]
    if changed:
        st.caption("Round by round (B against A): " + "; ".join(changed))
