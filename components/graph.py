"""The query-specific knowledge graph as of one round: a fold of the trace's graph deltas, drawn with pyvis.

The pure half (`graph_at`, `cap`, `positions`, `graph_html`, `sandboxed`, `node_rows`, `legend`) needs
no Streamlit and is tested directly; `render_graph` only wires it to widgets and a cache. Every node keeps
one position for the whole trace (laid out once over the final graph, physics off), so stepping through
rounds never makes the drawing jump: new nodes appear in place and pruned ones fade where they were.
Issue 14: every node keeps a (shortened) label at any size, the camera frames what the round changed at a
zoom where labels stay legible, a table lists every node, and an empty graph draws no panel.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import lru_cache, partial
from html import escape
from types import MappingProxyType

import networkx as nx
import numpy as np
import streamlit as st
from pyvis.network import Network

from engine.trace import GraphDeltaStep, Step, Trace, step_to_dict
from engine.trace_graph import (  # the fold lives in the engine; re-exported for this module's callers and tests
    EdgeKey,
    GraphView,
    Skeleton,
    ViewEdge,
    ViewNode,
    edge_key,
    file_name,
    graph_at,
    graph_bytes,
    graph_deltas,
)

# Tableau 10 without its grey, which is reserved for pruned elements; round r takes PALETTE[r % 9].
PALETTE = ("#4e79a7", "#f28e2b", "#59a14f", "#e15759", "#76b7b2", "#edc948", "#b07aa1", "#ff9da7", "#9c755f")
PRUNED_COLOUR = "#c9c9c9"
PRUNED_TEXT = "#9a9a9a"
FOCUS_BORDER = "#1f1f1f"
NEW_GLOW = "#ffb000"
FADED_TEXT = "#707070"  # still 4.9:1 on white: faded, not illegible
FADED_EDGE = "#d0d0d0"
FADED_OPACITY = 0.45
LABEL_CHARS = 24
FONT_PX = 14  # label size in graph units
READABLE_PX = 11  # the camera never zooms out so far that a label is drawn smaller than this on screen
MAX_SCALE = 1.3
EDGE_LABELS_UPTO = 40  # most relations written on edges; the rest are on hover, where node labels need the room
NEIGHBOUR_PX = 90.0
# spring_layout's ideal edge length is k = 1/sqrt(n); three times that evens out its clumps (leaves bunched
# by their hub, long empty edges between), so a frame holds about 1.5 times more nodes at one label size.
SPREAD = 3.0
GAP_SAMPLE = 500
HEIGHT_PX = 480
MAX_HEIGHT_PX = 760
TABLE_MAX_PX = 318  # the node table shows about eight rows and scrolls
# No allow-same-origin: the graph's scripts get an opaque origin and cannot reach the app (issue 14).
SANDBOX = "allow-scripts"
# The graph page fetches nothing (offline by construction); should markup ever slip through `plain`,
# it can neither load nor send anything.
_CSP = "default-src 'none'; script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:"

def round_name(iteration: int) -> str:
    return "set-up" if iteration == 0 else f"round {iteration}"


def round_colour(iteration: int) -> str:
    return PALETTE[iteration % len(PALETTE)]


def has_graph(steps: Sequence[Step], iteration: int) -> bool:
    """Whether there is any node to draw as of `iteration`: callers leave out the graph panel otherwise
    (hybrid builds its graph only in its KG stage, and may find no entity at all)."""
    return bool(graph_at(steps, iteration).nodes)


def degrees(view: GraphView) -> dict[str, int]:
    """Edges at each node, pruned ones included (they are drawn too)."""
    degree = dict.fromkeys((n.id for n in view.nodes), 0)
    for e in view.edges:
        degree[e.source] = degree.get(e.source, 0) + 1
        degree[e.target] = degree.get(e.target, 0) + 1
    return degree


def by_relevance(view: GraphView) -> tuple[ViewNode, ...]:
    """Focus, then new, then live before pruned, by score, by degree: the order the cap keeps and the
    node table lists."""
    degree = degrees(view)
    return tuple(sorted(view.nodes, key=lambda n: (not n.is_focus, not n.is_new, n.pruned, n.score is None,
                                                   -(n.score or 0.0), -degree[n.id], n.first_round, n.id)))


def current_ids(view: GraphView) -> frozenset[str]:
    """What the round is about: its new and focus nodes and the ends of its new edges. The camera frames
    these and draws the rest faded; empty when the round changed nothing."""
    ends = {end for e in view.edges if e.is_new for end in (e.source, e.target)}
    return frozenset({n.id for n in view.nodes if n.is_new or n.is_focus} | ends)


def cap(view: GraphView, max_nodes: int) -> GraphView:
    """The `max_nodes` most relevant nodes (`by_relevance`) and the edges between them; the skeleton is
    kept so positions do not change."""
    if len(view.nodes) <= max_nodes:
        return view
    kept = {n.id for n in by_relevance(view)[:max(max_nodes, 0)]}
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
    order = {n: i for i, n in enumerate(skeleton.nodes)}
    parts = sorted((sorted(c, key=order.__getitem__) for c in nx.connected_components(graph)),
                   key=lambda c: (-len(c), order[c[0]]))
    placed = _pack([_component_points(graph, part, seed) for part in parts])
    return MappingProxyType({n: (round(float(x), 1), round(float(y), 1))
                             for part, points in zip(parts, placed, strict=True)
                             for n, (x, y) in zip(part, points, strict=True)})


def _component_points(graph: nx.Graph, part: Sequence[str], seed: int) -> np.ndarray:
    """A spring layout of one connected component, scaled so its typical node sits NEIGHBOUR_PX from its
    nearest neighbour and moved to start at (0, 0)."""
    if len(part) == 1:
        return np.zeros((1, 2))
    raw = nx.spring_layout(graph.subgraph(part), k=SPREAD / np.sqrt(len(part)), seed=seed)
    points = np.array([raw[n] for n in part], dtype=float)  # (nodes, 2)
    points *= NEIGHBOUR_PX / _typical_gap(points)
    return points - points.min(axis=0)


def _pack(parts: Sequence[np.ndarray]) -> list[np.ndarray]:
    """Components side by side in rows of about the square root of their total area, largest first:
    one spring layout over them all pushes small components into far corners and leaves most of any
    frame empty, so labels shrink for nothing (issue 14)."""
    sizes = [p.max(axis=0) + NEIGHBOUR_PX for p in parts]  # each box with a margin, (2,)
    row_width = max(max(w for w, _ in sizes), float(np.sqrt(sum(w * h for w, h in sizes))))
    placed, x, y, row_height = [], 0.0, 0.0, 0.0
    for points, (w, h) in zip(parts, sizes, strict=True):
        if x > 0 and x + w > row_width + 1e-6:
            x, y, row_height = 0.0, y + row_height, 0.0
        placed.append(points + (x, y))
        x, row_height = x + w, max(row_height, h)
    return placed


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
    """The box around `points`, which the page's camera frames, and the point nearest their mean, which it
    centres on when the box is too big for legible labels (the box's centre may be empty space)."""
    xy = np.array(points or [(0.0, 0.0)], dtype=float)  # (points, 2)
    low, high = xy.min(axis=0), xy.max(axis=0)
    ax, ay = xy[np.linalg.norm(xy - xy.mean(axis=0), axis=1).argmin()]
    return {"cx": float(low[0] + high[0]) / 2, "cy": float(low[1] + high[1]) / 2,
            "w": float(high[0] - low[0]), "h": float(high[1] - low[1]), "ax": float(ax), "ay": float(ay)}


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


def _node_style(n: ViewNode, *, faded: bool) -> dict:
    colour = PRUNED_COLOUR if n.pruned else round_colour(n.first_round)
    text = PRUNED_TEXT if n.pruned else FADED_TEXT if faded else "#1a1a1a"
    style: dict = {
        "color": {"background": colour, "border": FOCUS_BORDER if n.is_focus else colour,
                  "highlight": {"background": colour, "border": FOCUS_BORDER}},
        "borderWidth": 5 if n.is_focus else 1,
        "size": 16 if n.is_new else 10,
        "font": {"color": text, "size": FONT_PX, "strokeWidth": 4, "strokeColor": "#ffffff"},
    }
    opacity = min(0.6 if n.pruned else 1.0, FADED_OPACITY if faded else 1.0)
    if opacity < 1.0:
        style["opacity"] = opacity
    if n.pruned:
        style["shapeProperties"] = {"borderDashes": [4, 3]}
    if n.is_new:
        style["shadow"] = {"enabled": True, "color": NEW_GLOW, "size": 16, "x": 0, "y": 0}
    return style


def _edge_style(e: ViewEdge, *, faded: bool) -> dict:
    colour = (PRUNED_COLOUR if e.pruned else round_colour(e.first_round) if e.is_new
              else FADED_EDGE if faded else "#8c8c8c")
    return {"color": {"color": colour, "highlight": FOCUS_BORDER}, "dashes": e.pruned,
            "width": 2.5 if e.is_new and not e.pruned else 1.2,
            "font": {"color": PRUNED_TEXT if e.pruned else "#555555"}}


_OPTIONS = {
    "physics": {"enabled": False},
    "interaction": {"hover": True, "tooltipDelay": 120},
    # vis-network hides a label drawn under 4 px (drawThreshold 5), which blanked every graph the
    # camera had to zoom out for (issue 14); labels are never hidden now.
    "nodes": {"shape": "dot", "scaling": {"label": {"drawThreshold": 0}}},
    "edges": {"smooth": {"enabled": False}, "arrows": {"to": {"enabled": True, "scaleFactor": 0.5}},
              "font": {"size": 11, "align": "middle", "strokeWidth": 3, "strokeColor": "#ffffff"}},
}

# pyvis' template hard-codes bootstrap from a CDN (unused by a bare graph) and two empty headings.
_REMOTE = re.compile(
    r"<link\b[^>]*\bhref\s*=\s*[\"']?(?:https?:)?//[^>]*>"
    r"|<script\b[^>]*\bsrc\s*=\s*[\"']?(?:https?:)?//[^>]*>\s*</script>", re.IGNORECASE)
_EMPTY_HEADING = re.compile(r"<center>\s*<h1>\s*</h1>\s*</center>")
_OLD_TAGS = re.compile(r"<!--\s*<link[^>]*>\s*<script[^>]*>\s*</script>\s*-->")  # a commented-out vis import
_PAGE_HEAD = (f'<meta http-equiv="Content-Security-Policy" content="{_CSP}">'
              "<style>html,body{margin:0;padding:0;overflow:hidden}"
              "#mynetwork{float:none!important;border:none!important;width:100%!important}</style>")
# Physics is off, so vis-network fits the view synchronously inside `new vis.Network`; the camera then
# frames what the round changed (`current_ids`), never zooming out past READABLE_PX labels nor in past
# MAX_SCALE; pan and zoom reach the rest. The padding leaves room for a label centred under a node.
# The round's focus nodes must all be seen, labels included (issue 22): when that frame cuts one off, the
# camera fits the focus nodes instead (vis-network measures their labels) and steps back by FOCUS_MARGIN.
_CAMERA = """<script>(function () {{
  var frame = {frame};
  var focus = {focus};
  function inside(ids, w, h) {{
    var at = network.getPositions(ids);
    return ids.every(function (id) {{
      var low = network.canvasToDOM({{x: at[id].x - {label_x}, y: at[id].y - {above}}});
      var high = network.canvasToDOM({{x: at[id].x + {label_x}, y: at[id].y + {below}}});
      return low.x >= 0 && low.y >= 0 && high.x <= w && high.y <= h;
    }});
  }}
  function look() {{
    if (typeof network === "undefined" || !network) return;
    var box = document.getElementById("mynetwork");
    var w = box.clientWidth || 600, h = box.clientHeight || {height};
    var fit = Math.min(w / (frame.w + {pad_x}), h / (frame.h + {pad_y}));
    var scale = Math.max({min_scale}, Math.min({max_scale}, fit));
    var at = fit >= scale ? {{x: frame.cx, y: frame.cy}} : {{x: frame.ax, y: frame.ay}};
    network.moveTo({{position: at, scale: scale, animation: false}});
    if (focus.length && !inside(focus, w, h)) {{
      network.fit({{nodes: focus, animation: false, maxZoomLevel: {max_scale}}});
      network.moveTo({{scale: network.getScale() * {margin}, animation: false}});
    }}
  }}
  look();
  window.addEventListener("resize", look);
}})();</script>"""
FOCUS_MARGIN = 0.85  # of the scale at which vis-network's fit puts the focus nodes' labels at the frame edge


def _camera(frame: dict[str, float], focus: Sequence[str], height_px: int) -> str:
    return _CAMERA.format(frame=json.dumps(frame), focus=json.dumps(list(focus)), height=height_px,
                          pad_x=LABEL_CHARS * FONT_PX * 0.6, pad_y=4 * FONT_PX,
                          min_scale=round(READABLE_PX / FONT_PX, 3), max_scale=MAX_SCALE, margin=FOCUS_MARGIN,
                          # a node's dot (up to 16 + a 5 px border) above, its label under it, half a label aside
                          label_x=LABEL_CHARS * FONT_PX * 0.3, above=21, below=21 + 2 * FONT_PX)


def _offline(html: str, camera: str) -> str:
    html = _OLD_TAGS.sub("", _EMPTY_HEADING.sub("", _REMOTE.sub("", html)))
    html = html.replace('<meta charset="utf-8">', '<meta charset="utf-8">' + _PAGE_HEAD, 1)
    return html.replace("</body>", camera + "</body>", 1)


@lru_cache(maxsize=1)
def _templates() -> object:
    """One jinja environment for every graph: pyvis makes a fresh one per Network and recompiles its
    700 KB template (vis-network inline) each time, which is most of the cost of a drawing."""
    return Network(cdn_resources="in_line").templateEnv


def panel_height(node_count: int) -> int:
    """Taller for bigger graphs, so that more of them fits at a legible zoom."""
    return min(MAX_HEIGHT_PX, max(HEIGHT_PX, 360 + 4 * node_count))


def graph_html(view: GraphView, *, height_px: int = HEIGHT_PX, seed: int = 7) -> str:
    """A self-contained page (vis-network inline, nothing fetched) drawing `view` at fixed positions."""
    where = positions(view.skeleton, seed)
    current = current_ids(view)
    net = Network(height=f"{height_px}px", width="100%", directed=True, cdn_resources="in_line")
    net.templateEnv = _templates()
    net.options = dict(_OPTIONS)
    for n in view.nodes:
        x, y = where.get(n.id, (0.0, 0.0))
        net.add_node(n.id, label=plain(_short(n.label)), title=plain(_node_title(n)), x=x, y=y,
                     physics=False, **_node_style(n, faded=bool(current) and n.id not in current))
    labels = {n.id: n.label for n in view.nodes}
    named = _named_edges(view)
    for e in view.edges:
        text = {"label": plain(_short(e.relation))} if edge_key(e) in named else {}
        net.add_edge(e.source, e.target, title=plain(_edge_title(e, labels)),
                     **text, **_edge_style(e, faded=bool(current) and not e.is_new))
    framed = current or {n.id for n in view.nodes}
    frame = _frame([where.get(i, (0.0, 0.0)) for i in sorted(framed)])
    focus = [n.id for n in view.nodes if n.is_focus]
    return _offline(net.generate_html(), _camera(frame, focus, height_px))


def _named_edges(view: GraphView) -> set[EdgeKey]:
    """Edges that show their relation as text: all of them in a small graph, else the round's new ones,
    else (a first round of many edges) none."""
    for chosen in (view.edges, tuple(e for e in view.edges if e.is_new)):
        if len(chosen) <= EDGE_LABELS_UPTO:
            return {edge_key(e) for e in chosen}
    return set()


def sandboxed(page: str, *, height_px: int, title: str) -> str:
    """`page` one frame deeper, in an iframe sandboxed without allow-same-origin. Streamlit 1.67 gives
    `st.iframe`'s srcdoc `allow-same-origin allow-scripts` (it cannot be changed), so the graph's
    scripts would run as the app itself; the outer page here runs no script at all."""
    return ('<!doctype html><html><head><meta charset="utf-8"><style>html,body{margin:0;padding:0;'
            f'overflow:hidden}}iframe{{display:block;border:0;width:100%;height:{height_px}px}}</style>'
            f'</head><body><iframe sandbox="{SANDBOX}" title="{escape(title)}" srcdoc="{escape(page)}">'
            '</iframe></body></html>')


def node_rows(view: GraphView) -> list[dict[str, str | int]]:
    """One row per node, most relevant first, with the full label the drawing shortens."""
    degree = degrees(view)
    return [{"node": n.label, "kind": n.kind, "first seen": round_name(n.first_round), "degree": degree[n.id],
             "status": ", ".join(f for f, on in (("focus", n.is_focus), ("new", n.is_new), ("pruned", n.pruned))
                                 if on),
             "id": n.id} for n in by_relevance(view)]


def legend(view: GraphView) -> str:
    """Markdown for a caption: one coloured dot per round present, then what the marks mean."""
    rounds = sorted({n.first_round for n in view.nodes})
    dots = " ".join(f':color[●]{{foreground="{round_colour(r)}"}} {round_name(r)}' for r in rounds)
    return (f"{dots} · dashed grey: pruned · thick dark border: focus · glow: new in {round_name(view.iteration)}"
            " · faded: from earlier rounds · hover a node for its full label")


# ---- Streamlit -----------------------------------------------------------------------------------


def _digest(deltas: Sequence[GraphDeltaStep]) -> str:
    payload = json.dumps([step_to_dict(d) for d in deltas], sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(payload.encode()).hexdigest()


@st.cache_data(max_entries=64, show_spinner=False)
def _cached_html(digest: str, iteration: int, max_nodes: int | None, _deltas: tuple[GraphDeltaStep, ...]) -> str:
    """Keyed by the deltas' content hash: a live trace that grows gets a new key, a replayed one hits."""
    view = graph_at(_deltas, iteration)
    shown = view if max_nodes is None else cap(view, max_nodes)
    height = panel_height(len(shown.nodes))
    return sandboxed(graph_html(shown, height_px=height), height_px=height,
                     title=f"knowledge graph as of {round_name(iteration)}")


def render_graph(steps: Sequence[Step], iteration: int, *, key: str, max_nodes: int = 100,
                 trace: Trace | None = None) -> bool:
    """The graph as of `iteration`, its legend and its node table; only a caption, and False, when there is
    no node to draw, so that a caller that checked `has_graph` first never shows an empty box. Given the
    `trace` these steps are from, GraphML and JSON downloads of the round's whole graph follow the table."""
    deltas = graph_deltas(steps)
    view = graph_at(deltas, iteration)
    if not view.nodes:
        st.caption(f"the graph has no nodes as of {round_name(iteration)}" if deltas else "this method builds no graph")
        return False
    capped = len(view.nodes) > max_nodes
    show_all = capped and st.toggle(f"Show all {len(view.nodes)} nodes", key=f"{key}.all",
                                    help=f"only the {max_nodes} most relevant nodes are drawn; the table lists all")
    shown = cap(view, max_nodes) if capped and not show_all else view
    pruned = sum(n.pruned for n in shown.nodes)
    st.caption(f"{len(shown.nodes)} of {len(view.nodes)} nodes · {len(shown.edges)} edges · {pruned} pruned"
               f" · as of {round_name(iteration)}")
    html = _cached_html(_digest(deltas), iteration, max_nodes if capped and not show_all else None, deltas)
    # st.iframe takes HTML text in 1.67 (srcdoc); components.v1.html is deprecated there.
    st.iframe(html, height=panel_height(len(shown.nodes)) + 4, alt=f"knowledge graph as of {round_name(iteration)}")
    st.caption(legend(shown))
    rows = node_rows(view)
    # st.dataframe shows cells as plain text: labels from documents stay inert.
    st.dataframe(rows, hide_index=True, width="stretch", key=f"{key}.nodes",
                 height=min(TABLE_MAX_PX, 35 * (len(rows) + 1) + 3))
    if trace is not None:
        _downloads(trace, iteration, key=key)
    return True


# label, suffix, MIME type, what the file is for
EXPORTS = (("GraphML", ".graphml", "application/graphml+xml", "for Gephi, networkx or yEd"),
           ("JSON", ".json", "application/json", "for scripts"))


def _downloads(trace: Trace, iteration: int, *, key: str) -> None:
    """The round's whole graph (never the capped drawing) as files; made only when a button is pressed."""
    st.caption(f"Export the graph as of {round_name(iteration)}:")
    with st.container(horizontal=True):  # the caption above: beside them, the narrow graph column wraps a button
        for label, fmt, mime, use in EXPORTS:
            st.download_button(label, partial(graph_bytes, trace, iteration, fmt),
                               file_name=file_name(trace, iteration, fmt), mime=mime, on_click="ignore",
                               key=f"{key}.export{fmt}.{iteration}", icon=":material/download:",
                               help=f"every node and edge as of {round_name(iteration)} with scores, provenance "
                                    f"and the chunk ids they came from, {use}")
