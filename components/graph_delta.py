"""One round's change to the knowledge graph in a few lines; the graph itself is drawn by components.graph."""

from __future__ import annotations

import streamlit as st

from components.safe import md_text
from engine.trace import Edge, GraphDeltaStep, Node

SHOWN_EDGES = 6


def delta_counts(step: GraphDeltaStep) -> str:
    parts = [f"+{len(step.added_nodes)} nodes", f"+{len(step.added_edges)} edges"]
    if step.pruned_nodes or step.pruned_edges:
        parts.append(f"pruned {len(step.pruned_nodes)} nodes, {len(step.pruned_edges)} edges")
    return " · ".join(parts)


def edge_lines(edges: tuple[Edge, ...], labels: dict[str, str], limit: int = SHOWN_EDGES) -> str:
    """`a –rel→ b` per edge (labels where this delta names the node), then how many more there are."""
    lines = [f"{labels.get(e.source, e.source)} –{e.relation}→ {labels.get(e.target, e.target)}"
             + (f"  ({e.score:.2f})" if e.score is not None else "") for e in edges[:limit]]
    if len(edges) > limit:
        lines.append(f"… and {len(edges) - limit} more")
    return "\n".join(lines)


def _names(nodes: tuple[Node, ...], labels: dict[str, str]) -> str:
    return ", ".join(labels.get(n.id, n.label or n.id) + (f" ({n.score:.2f})" if n.score is not None else "")
                     for n in nodes)


def render_graph_delta(step: GraphDeltaStep, *, key: str) -> None:
    labels = {n.id: n.label or n.id for n in (*step.added_nodes, *step.pruned_nodes)}
    title = f"**{md_text(step.title)}** · " if step.title else ""
    st.markdown(f":material/hub: {title}{delta_counts(step)}")
    if step.focus:
        st.caption("focus: " + md_text(", ".join(labels.get(f, f) for f in step.focus)))
    if step.added_edges:
        st.text(edge_lines(step.added_edges, labels))
    elif step.added_nodes:
        st.text("new: " + _names(step.added_nodes[:SHOWN_EDGES], labels))
    if step.pruned_nodes:
        st.caption("pruned: " + md_text(_names(step.pruned_nodes[:SHOWN_EDGES], labels))
                   + (" …" if len(step.pruned_nodes) > SHOWN_EDGES else ""))
