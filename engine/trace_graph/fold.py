"""The query-specific graph as of one round: the fold of a trace's graph deltas (DESIGN §2).

Engine-side so that everything that reads a round's graph — the Explore panel, `ask --graph-out`, the run diff —
folds it one way: additions before prunings within a round, an edge's unnamed ends kept as implicit nodes until a
delta names them, and pruned ends marking their edges pruned.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace

from engine.trace import Edge, GraphDeltaStep, Node, Step

EdgeKey = tuple[str, str, str]


@dataclass(frozen=True)
class ViewNode:
    id: str
    label: str
    kind: str
    first_round: int
    pruned: bool = False
    score: float | None = None
    is_new: bool = False
    is_focus: bool = False


@dataclass(frozen=True)
class ViewEdge:
    """`pruned` is true when the edge itself was pruned or either of its ends is pruned."""

    source: str
    relation: str
    target: str
    first_round: int
    pruned: bool = False
    score: float | None = None
    is_new: bool = False
    provenance: str = ""


@dataclass(frozen=True)
class Skeleton:
    """Every node and link the whole trace ever shows: the layout is computed on this, once."""

    nodes: tuple[str, ...] = ()
    links: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class GraphView:
    nodes: tuple[ViewNode, ...]
    edges: tuple[ViewEdge, ...]
    iteration: int
    skeleton: Skeleton = Skeleton()


# ---- the fold ------------------------------------------------------------------------------------


def graph_deltas(steps: Iterable[Step]) -> tuple[GraphDeltaStep, ...]:
    return tuple(s for s in steps if isinstance(s, GraphDeltaStep))


def edge_key(edge: Edge | ViewEdge) -> EdgeKey:
    return (edge.source, edge.relation, edge.target)


class _Fold:
    """Graph state while folding deltas; local and mutable, never handed out."""

    def __init__(self) -> None:
        self.nodes: dict[str, ViewNode] = {}
        self.edges: dict[EdgeKey, ViewEdge] = {}
        self.implicit: set[str] = set()  # ends of edges that no delta named as a node (yet)

    def node(self, node: Node, round_: int, *, pruned: bool) -> None:
        old = self.nodes.get(node.id)
        if old is None or node.id in self.implicit:
            self.implicit.discard(node.id)
            first = round_ if old is None else old.first_round
            score = node.score if node.score is not None or old is None else old.score
            self.nodes[node.id] = ViewNode(node.id, node.label or node.id, node.kind, first, pruned, score)
            return
        score = node.score if node.score is not None else old.score
        self.nodes[node.id] = replace(old, pruned=pruned, score=score)

    def end(self, node_id: str, round_: int) -> None:
        if node_id not in self.nodes:
            self.nodes[node_id] = ViewNode(node_id, node_id, "entity", round_)
            self.implicit.add(node_id)

    def edge(self, edge: Edge, round_: int, *, pruned: bool) -> None:
        self.end(edge.source, round_)
        self.end(edge.target, round_)
        old = self.edges.get(edge_key(edge))
        score = edge.score if edge.score is not None or old is None else old.score
        provenance = edge.provenance or (old.provenance if old else "")
        first = round_ if old is None else old.first_round
        self.edges[edge_key(edge)] = ViewEdge(edge.source, edge.relation, edge.target, first, pruned, score,
                                               provenance=provenance)

    def apply(self, delta: GraphDeltaStep) -> None:
        # Additions before prunings: a method that explores and prunes in one round ends that round pruned.
        for node in delta.added_nodes:
            self.node(node, delta.iteration, pruned=False)
        for edge in delta.added_edges:
            self.edge(edge, delta.iteration, pruned=False)
        for node in delta.pruned_nodes:
            self.node(node, delta.iteration, pruned=True)
        for edge in delta.pruned_edges:
            self.edge(edge, delta.iteration, pruned=True)


def skeleton_of(deltas: Sequence[GraphDeltaStep]) -> Skeleton:
    """All nodes and (undirected, deduplicated) links of every delta, in order of first appearance."""
    nodes: dict[str, None] = {}
    links: dict[tuple[str, str], None] = {}
    for delta in deltas:
        for node in (*delta.added_nodes, *delta.pruned_nodes):
            nodes.setdefault(node.id)
        for edge in (*delta.added_edges, *delta.pruned_edges):
            nodes.setdefault(edge.source)
            nodes.setdefault(edge.target)
            if edge.source != edge.target:
                links.setdefault(tuple(sorted((edge.source, edge.target))))
    return Skeleton(tuple(nodes), tuple(links))


def graph_at(steps: Sequence[Step], iteration: int) -> GraphView:
    """The graph as of `iteration`: every graph delta with `step.iteration <= iteration`, folded in order."""
    deltas = graph_deltas(steps)
    fold = _Fold()
    for delta in deltas:
        if delta.iteration <= iteration:
            fold.apply(delta)
    focus = {f for d in deltas if d.iteration == iteration for f in d.focus}
    nodes = tuple(replace(n, is_new=n.first_round == iteration, is_focus=n.id in focus)
                  for n in fold.nodes.values())
    pruned = {n.id for n in nodes if n.pruned}
    edges = tuple(replace(e, is_new=e.first_round == iteration,
                          pruned=e.pruned or e.source in pruned or e.target in pruned)
                  for e in fold.edges.values())
    return GraphView(nodes, edges, iteration, skeleton_of(deltas))
