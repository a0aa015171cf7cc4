"""The query-specific knowledge graph as of one round: a fold of the trace's graph deltas, drawn with pyvis.

The pure half (`graph_at`, `cap`, `positions`, `graph_html`, `legend`) needs no Streamlit and is tested
directly; `render_graph` only wires it to widgets and a cache. Every node keeps one position for the
whole trace (laid out once over the final graph, physics off), so stepping through rounds never makes
the drawing jump: new nodes appear in place and pruned ones fade where they were.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from types import MappingProxyType

import networkx as nx
import numpy as np
import streamlit as st
from pyvis.network import Network

from engine.trace import Edge, GraphDeltaStep, Node, Step, step_to_dict

# Tableau 10 without its grey, which is reserved for pruned elements; round r takes PALETTE[r % 9].
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f")
PRUNED_COLOUR = "#c9c9c9"
PRUNED_TEXT = "#9a9a9a"
FOCUS_BORDER = "#1f1f1f"
NEW_GLOW = "#ffb000"
LABEL_CHARS = 32
NEIGHBOUR_PX = 70.0
GAP_SAMPLE = 500
HEIGHT_PX = 520

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


def round_name(iteration: int) -> str:
    return "set-up" if iteration == 0 else f"round {iteration}"


def round_colour(iteration: int) -> str:
    return PALETTE[iteration % len(PALETTE)]


# ---- the fold ------------------------------------------------------------------------------------


def _deltas(steps: Iterable[Step]) -> tuple[GraphDeltaStep, ...]:
    return tuple(s for s in steps if isinstance(s, GraphDeltaStep))


def _edge_key(edge: Edge) -> EdgeKey:
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
        old = self.edges.get(_edge_key(edge))
        score = edge.score if edge.score is not None or old is None else old.score
        provenance = edge.provenance or (old.provenance if old else "")
        first = round_ if old is None else old.first_round
        self.edges[_edge_key(edge)] = ViewEdge(edge.source, edge.relation, edge.target, first, pruned, score,
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
    deltas = _deltas(steps)
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


def cap(view: GraphView, max_nodes: int) -> GraphView:
    """The `max_nodes` most relevant nodes (focus, then new, then live before pruned, by score, by
    degree) and the edges between them; the skeleton is kept so positions do not change."""
    if len(view.nodes) <= max_nodes:
        return view
    degree: dict[str, int] = {}
    for e in view.edges:
        degree[e.source] = degree.get(e.source, 0) + 1
        degree[e.target] = degree.get(e.target, 0) + 1

    def relevance(n: ViewNode) -> tuple:
        return (not n.is_focus, not n.is_new, n.pruned, n.score is None, -(n.score or 0.0),
                -degree.get(n.id, 0), n.first_round, n.id)

    kept = {n.id for n in sorted(view.nodes, key=relevance)[:max(max_nodes, 0)]}
    return replace(view, nodes=tuple(n for n in view.nodes if n.id in kept),
                   edges=tuple(e for e in view.edges if e.source in kept and e.target in kept))


# ---- layout --------------------------------------------------------------------------------------


@lru_cache(maxsize=32)
def positions(skeleton: Skeleton, seed: int = 7) -> Mapping[str, tuple[float, float]]:
    """Pixel positions for every node of the skeleton; the same skeleton and seed give the same layout.
    Read-only, since the cache hands the same mapping to every caller."""
    if not skeleton.nodes:
        return MappingProxyType({})
    graph = nx.Graph()
    graph.add_nodes_from(skeleton.nodes)
    graph.add_edges_from(skeleton.links)
    raw = nx.spring_layout(graph, seed=seed)
    ids = list(raw)
    points = np.array([raw[n] for n in ids], dtype=float).reshape(len(ids), 2)
    # Scale so the typical node sits NEIGHBOUR_PX from its nearest neighbour, whatever the graph's size or
    # shape (spring_layout squeezes a component together when isolated nodes stretch its unit box).
    scale = NEIGHBOUR_PX / _typical_gap(points)
    return MappingProxyType({n: (round(float(x) * scale, 1), round(float(y) * scale, 1))
                             for n, (x, y) in zip(ids, points, strict=True)})


def _typical_gap(points: np.ndarray) -> float:
    """Median distance from a point to its nearest other point (1.0 when there is no such pair); big
    graphs measure every k-th point only, to keep the distance matrix small."""
    if len(points) < 2:
        return 1.0
    step = max(1, len(points) // GAP_SAMPLE)
    probes = np.arange(0, len(points), step)
    gaps = np.linalg.norm(points[probes, None, :] - points[None, :, :], axis=-1)  # (probes, n)
    gaps[np.arange(len(probes)), probes] = np.inf  # a point is not its own neighbour
    typical = float(np.median(gaps.min(axis=1)))
    return typical if typical > 1e-9 else 1.0


def _frame(points: Sequence[tuple[float, float]]) -> dict[str, float]:
    """The box around every position of the trace, which the page's camera frames."""
    xs, ys = zip(*points, strict=True) if points else ((0.0,), (0.0,))
    return {"cx": (min(xs) + max(xs)) / 2, "cy": (min(ys) + max(ys)) / 2,
            "w": max(xs) - min(xs), "h": max(ys) - min(ys)}


# ---- HTML ----------------------------------------------------------------------------------------


def plain(text: str) -> str:
    """Text that no HTML context can read as markup: vis-network shows string titles as text, but pyvis
    switches to `innerHTML` tooltips when a title contains "href", so no `<` or `>` may survive."""
    return text.replace("<", "‹").replace(">", "›")


def _short(text: str) -> str:
    return text if len(text) <= LABEL_CHARS else text[:LABEL_CHARS - 1] + "…"


def _score(score: float | None) -> str:
    return "" if score is None else f"\nscore {score:.3f}"


def _node_title(n: ViewNode) -> str:
    flags = [f for f, on in (("focus", n.is_focus), ("new this round", n.is_new), ("pruned", n.pruned)) if on]
    return (f"{n.label}\n{n.kind} · first seen in {round_name(n.first_round)}{_score(n.score)}"
            + (f"\n{', '.join(flags)}" if flags else ""))


def _edge_title(e: ViewEdge, labels: dict[str, str]) -> str:
    return (f"{labels.get(e.source, e.source)} –{e.relation}→ {labels.get(e.target, e.target)}\n"
            f"first seen in {round_name(e.first_round)}{_score(e.score)}"
            + (f"\nfrom {e.provenance}" if e.provenance else "") + ("\npruned" if e.pruned else ""))


def _node_style(n: ViewNode) -> dict:
    colour = PRUNED_COLOUR if n.pruned else round_colour(n.first_round)
    style: dict = {
        "color": {"background": colour, "border": FOCUS_BORDER if n.is_focus else colour,
                  "highlight": {"background": colour, "border": FOCUS_BORDER}},
        "borderWidth": 5 if n.is_focus else 1,
        "size": 20 if n.is_new else 13,
        "font": {"color": PRUNED_TEXT if n.pruned else "#222222", "size": 16, "strokeWidth": 3,
                 "strokeColor": "#ffffff"},
    }
    if n.pruned:
        style["shapeProperties"] = {"borderDashes": [4, 3]}
        style["opacity"] = 0.6
    if n.is_new:
        style["shadow"] = {"enabled": True, "color": NEW_GLOW, "size": 16, "x": 0, "y": 0}
    return style


def _edge_style(e: ViewEdge) -> dict:
    colour = PRUNED_COLOUR if e.pruned else (round_colour(e.first_round) if e.is_new else "#8c8c8c")
    return {"color": {"color": colour, "highlight": FOCUS_BORDER}, "dashes": e.pruned,
            "width": 2.5 if e.is_new and not e.pruned else 1.2,
            "font": {"color": PRUNED_TEXT if e.pruned else "#555555"}}


_OPTIONS = {
    "physics": {"enabled": False},
    "interaction": {"hover": True, "tooltipDelay": 120},
    "nodes": {"shape": "dot"},
    "edges": {"smooth": {"enabled": False}, "arrows": {"to": {"enabled": True, "scaleFactor": 0.5}},
              "font": {"size": 10, "align": "middle", "strokeWidth": 3, "strokeColor": "#ffffff"}},
}

# pyvis' template hard-codes bootstrap from a CDN (unused by a bare graph) and two empty headings.
_REMOTE = re.compile(
    r"<link\b[^>]*\bhref\s*=\s*[\"']?(?:https?:)?//[^>]*>"
    r"|<script\b[^>]*\bsrc\s*=\s*[\"']?(?:https?:)?//[^>]*>\s*</script>", re.IGNORECASE)
_EMPTY_HEADING = re.compile(r"<center>\s*<h1>\s*</h1>\s*</center>")
_OLD_TAGS = re.compile(r"<!--\s*<link[^>]*>\s*<script[^>]*>\s*</script>\s*-->")  # a commented-out vis import
_PAGE_STYLE = ("<style>html,body{margin:0;padding:0;overflow:hidden}"
               "#mynetwork{float:none!important;border:none!important;width:100%!important}</style>")
# Physics is off, so vis-network fits the view synchronously inside `new vis.Network`; moving the camera
# afterwards to frame the trace's *whole* graph keeps the zoom fixed from round to round.
_CAMERA = """<script>(function () {{
  var frame = {frame};
  function look() {{
    if (typeof network === "undefined" || !network) return;
    var box = document.getElementById("mynetwork");
    var w = box.clientWidth || 600, h = box.clientHeight || {height};
    var scale = Math.min(1.2, w / (frame.w + 140), h / (frame.h + 100));
    network.moveTo({{position: {{x: frame.cx, y: frame.cy}}, scale: scale, animation: false}});
  }}
  look();
  window.addEventListener("resize", look);
}})();</script>"""


def _offline(html: str, frame: dict[str, float], height_px: int) -> str:
    html = _OLD_TAGS.sub("", _EMPTY_HEADING.sub("", _REMOTE.sub("", html)))
    html = html.replace("</head>", _PAGE_STYLE + "</head>", 1)
    return html.replace("</body>", _CAMERA.format(frame=json.dumps(frame), height=height_px) + "</body>", 1)


@lru_cache(maxsize=1)
def _templates() -> object:
    """One jinja environment for every graph: pyvis makes a fresh one per Network and recompiles its
    700 KB template (vis-network inline) each time, which is most of the cost of a drawing."""
    return Network(cdn_resources="in_line").templateEnv


def graph_html(view: GraphView, *, height_px: int = HEIGHT_PX, seed: int = 7) -> str:
    """A self-contained page (vis-network inline, nothing fetched) drawing `view` at fixed positions."""
    where = positions(view.skeleton, seed)
    net = Network(height=f"{height_px}px", width="100%", directed=True, cdn_resources="in_line")
    net.templateEnv = _templates()
    net.options = dict(_OPTIONS)
    for n in view.nodes:
        x, y = where.get(n.id, (0.0, 0.0))
        net.add_node(n.id, label=plain(_short(n.label)), title=plain(_node_title(n)), x=x, y=y,
                     physics=False, **_node_style(n))
    labels = {n.id: n.label for n in view.nodes}
    for e in view.edges:
        net.add_edge(e.source, e.target, label=plain(_short(e.relation)), title=plain(_edge_title(e, labels)),
                     **_edge_style(e))
    return _offline(net.generate_html(), _frame(list(where.values())), height_px)


def legend(view: GraphView) -> str:
    """Markdown for a caption: one coloured dot per round present, then what the marks mean."""
    rounds = sorted({n.first_round for n in view.nodes})
    dots = " ".join(f':color[●]{{foreground="{round_colour(r)}"}} {round_name(r)}' for r in rounds)
    return f"{dots} · dashed grey: pruned · thick dark border: focus · glow: new in {round_name(view.iteration)}"


# ---- Streamlit -----------------------------------------------------------------------------------


def _digest(deltas: Sequence[GraphDeltaStep]) -> str:
    payload = json.dumps([step_to_dict(d) for d in deltas], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


@st.cache_data(max_entries=64, show_spinner=False)
def _cached_html(digest: str, iteration: int, max_nodes: int | None, _deltas: tuple[GraphDeltaStep, ...]) -> str:
    """Keyed by the deltas' content hash: a live trace that grows gets a new key, a replayed one hits."""
    view = graph_at(_deltas, iteration)
    return graph_html(view if max_nodes is None else cap(view, max_nodes))


def render_graph(steps: Sequence[Step], iteration: int, *, key: str, max_nodes: int = 60) -> None:
    deltas = _deltas(steps)
    if not deltas:
        st.caption("this method builds no graph")
        return
    view = graph_at(deltas, iteration)
    capped = len(view.nodes) > max_nodes
    show_all = capped and st.toggle(f"Show all {len(view.nodes)} nodes", key=f"{key}.all",
                                    help=f"only the {max_nodes} most relevant nodes are drawn")
    shown = cap(view, max_nodes) if capped and not show_all else view
    pruned = sum(n.pruned for n in shown.nodes)
    st.caption(f"{len(shown.nodes)} of {len(view.nodes)} nodes · {len(shown.edges)} edges · {pruned} pruned"
               f" · as of {round_name(iteration)}")
    html = _cached_html(_digest(deltas), iteration, max_nodes if capped and not show_all else None, deltas)
    # st.iframe takes HTML text in 1.67 (srcdoc); components.v1.html is deprecated there.
    st.iframe(html, height=HEIGHT_PX + 4, alt=f"knowledge graph as of {round_name(iteration)}")
    st.caption(legend(shown))
