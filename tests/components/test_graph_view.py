"""The knowledge-graph view: folding deltas across rounds, capping, stable positions and offline, escaped HTML."""

from __future__ import annotations

import json
import re
from html.parser import HTMLParser

from components.graph import (
    FONT_PX,
    LABEL_CHARS,
    READABLE_PX,
    GraphView,
    cap,
    current_ids,
    graph_at,
    graph_html,
    has_graph,
    legend,
    node_rows,
    plain,
    positions,
    sandboxed,
)
from engine.trace import DecisionStep, Edge, GraphDeltaStep, Node

HOSTILE = "<img src=x onerror=alert(1)>"
STEPS = (
    GraphDeltaStep(iteration=0, added_nodes=(Node("a", "Ada", score=0.9), Node("b", "Bletchley")),
                   added_edges=(Edge("a", "worked_at", "b", 0.8),), focus=("a",)),
    DecisionStep(iteration=1, action="continue"),  # other kinds are ignored by the fold
    GraphDeltaStep(iteration=1, added_nodes=(Node("c", "Colossus", score=0.7),),
                   added_edges=(Edge("b", "built", "c"),), pruned_nodes=(Node("a", "Ada", score=0.1),), focus=("c",)),
    GraphDeltaStep(iteration=2, added_nodes=(Node("a", "Ada"), Node("d", "Dollis Hill", kind="place")),
                   added_edges=(Edge("c", "built_at", "d", 0.6),), pruned_edges=(Edge("b", "built", "c", 0.2),)),
    GraphDeltaStep(iteration=4, added_edges=(Edge("d", "near", "e"),), added_nodes=(Node("e", "London"),)),
)


def _nodes(view: GraphView) -> dict:
    return {n.id: n for n in view.nodes}


def _edges(view: GraphView) -> dict:
    return {(e.source, e.relation, e.target): e for e in view.edges}


def _drawn_nodes(html: str) -> list[dict]:
    return json.loads(re.search(r"nodes = new vis\.DataSet\((.*?)\);\n", html).group(1))


def _drawn_edges(html: str) -> list[dict]:
    return json.loads(re.search(r"edges = new vis\.DataSet\((.*?)\);\n", html).group(1))


def test_graph_at_folds_only_the_deltas_up_to_the_round():
    assert set(_nodes(graph_at(STEPS, 0))) == {"a", "b"}
    assert set(_nodes(graph_at(STEPS, 1))) == {"a", "b", "c"}
    assert set(_nodes(graph_at(STEPS, 9))) == {"a", "b", "c", "d", "e"}
    assert graph_at(STEPS, 1).iteration == 1


def test_nodes_keep_the_round_they_first_appeared_in_and_only_that_round_marks_them_new():
    view = graph_at(STEPS, 2)
    nodes = _nodes(view)
    assert {i: n.first_round for i, n in nodes.items()} == {"a": 0, "b": 0, "c": 1, "d": 2}
    assert {i for i, n in nodes.items() if n.is_new} == {"d"}
    assert {e.relation for e in view.edges if e.is_new} == {"built_at"}
    assert nodes["d"].kind == "place" and nodes["d"].label == "Dollis Hill"


def test_a_pruned_node_stays_with_its_score_and_fades_its_edges():
    view = graph_at(STEPS, 1)
    ada = _nodes(view)["a"]
    assert ada.pruned and ada.score == 0.1
    assert _edges(view)[("a", "worked_at", "b")].pruned  # an edge to a pruned node is drawn pruned too
    assert not _edges(view)[("b", "built", "c")].pruned


def test_a_re_added_node_is_un_pruned_but_not_new_and_keeps_its_last_score():
    ada = _nodes(graph_at(STEPS, 2))["a"]
    assert not ada.pruned and not ada.is_new and ada.first_round == 0 and ada.score == 0.1
    assert not _edges(graph_at(STEPS, 2))[("a", "worked_at", "b")].pruned


def test_a_pruned_edge_is_re_added_by_a_later_delta():
    again = (*STEPS, GraphDeltaStep(iteration=5, added_edges=(Edge("b", "built", "c", 0.9),)))
    assert _edges(graph_at(again, 2))[("b", "built", "c")].pruned
    edge = _edges(graph_at(again, 5))[("b", "built", "c")]
    assert not edge.pruned and edge.score == 0.9 and edge.first_round == 1 and not edge.is_new


def test_focus_is_the_focus_of_that_round_only():
    assert {n.id for n in graph_at(STEPS, 0).nodes if n.is_focus} == {"a"}
    assert {n.id for n in graph_at(STEPS, 1).nodes if n.is_focus} == {"c"}
    quiet = graph_at(STEPS, 3)  # no delta in round 3: nothing new, no focus
    assert not any(n.is_focus or n.is_new for n in quiet.nodes)


def test_an_edge_end_no_delta_named_becomes_a_node_labelled_by_its_id_until_named():
    steps = (GraphDeltaStep(iteration=1, added_edges=(Edge("x", "r", "y"),)),
             GraphDeltaStep(iteration=2, added_nodes=(Node("y", "Why", kind="topic"),)))
    assert _nodes(graph_at(steps, 1))["y"].label == "y"
    named = _nodes(graph_at(steps, 2))["y"]
    assert (named.label, named.kind, named.first_round) == ("Why", "topic", 1)


def test_no_graph_deltas_give_an_empty_view_that_still_draws():
    view = graph_at((DecisionStep(action="answer"),), 3)
    assert view.nodes == () and view.edges == ()
    assert "vis.Network" in graph_html(view)


def _star(n: int) -> tuple[GraphDeltaStep, ...]:
    """A hub with n spokes in round 1, one more spoke (new) and a focus on a weak node in round 2."""
    spokes = tuple(Node(f"s{i}", f"spoke {i}", score=i / n) for i in range(n))
    return (GraphDeltaStep(iteration=1, added_nodes=(Node("hub", "Hub"), *spokes),
                           added_edges=tuple(Edge("hub", "has", s.id) for s in spokes)),
            GraphDeltaStep(iteration=2, added_nodes=(Node("late", "Late", score=0.0),),
                           added_edges=(Edge("s0", "to", "late"),), focus=("s1",)))


def test_cap_keeps_focus_and_new_first_then_the_best_scores_and_only_edges_between_kept_nodes():
    view = graph_at(_star(100), 2)
    small = cap(view, 5)
    kept = {n.id for n in small.nodes}
    assert len(kept) == 5
    assert {"s1", "late"} <= kept  # focus and new, despite low scores
    assert {"s99", "s98", "s97"} <= kept  # then by score
    assert all(e.source in kept and e.target in kept for e in small.edges)
    assert {(e.source, e.target) for e in small.edges} == {(e.source, e.target) for e in view.edges
                                                             if e.source in kept and e.target in kept}
    assert small.skeleton == view.skeleton and small.iteration == view.iteration


def test_cap_prefers_connected_nodes_when_scores_tie_and_leaves_small_views_alone():
    steps = (GraphDeltaStep(iteration=1, added_nodes=(Node("lonely", "L"), Node("hub", "H"), Node("x", "X")),
                            added_edges=(Edge("hub", "r", "x"), Edge("x", "r", "hub"))),)
    view = graph_at(steps, 2)
    assert {n.id for n in cap(view, 2).nodes} == {"hub", "x"}
    assert cap(view, 3) is view


def test_positions_come_from_the_whole_trace_so_nodes_never_move_between_rounds():
    early, late = graph_at(STEPS, 0), graph_at(STEPS, 4)
    assert early.skeleton == late.skeleton
    assert positions(early.skeleton) == positions(late.skeleton)
    drawn = [{n["id"]: (n["x"], n["y"]) for n in _drawn_nodes(graph_html(graph_at(STEPS, i)))} for i in (0, 1, 2, 4)]
    for node_id, where in drawn[0].items():
        assert all(d[node_id] == where for d in drawn[1:])
    capped = {n["id"]: (n["x"], n["y"]) for n in _drawn_nodes(graph_html(cap(graph_at(_star(80), 2), 10)))}
    full = {n["id"]: (n["x"], n["y"]) for n in _drawn_nodes(graph_html(graph_at(_star(80), 2)))}
    assert capped.items() <= full.items()


def test_positions_are_deterministic_for_a_seed_and_physics_is_off():
    view = graph_at(_star(30), 2)
    assert graph_html(view, seed=3) == graph_html(view, seed=3)
    assert positions(view.skeleton, 3) != positions(view.skeleton, 4)
    assert all(n["physics"] is False for n in _drawn_nodes(graph_html(view)))
    assert '"physics": {"enabled": false}' in graph_html(view)


def test_html_is_self_contained_with_vis_network_inline_and_no_remote_sources():
    html = graph_html(graph_at(STEPS, 2))
    assert not re.search(r"<(?:script|link)\b[^>]*\b(?:src|href)\s*=", html, re.IGNORECASE)
    assert "jsdelivr" not in html and "cdnjs" not in html and "node_modules" not in html
    assert "* vis-network" in html and "@version 9.1.2" in html and "vis.Network(" in html


def test_labels_and_titles_from_documents_appear_only_escaped():
    steps = (GraphDeltaStep(iteration=1, added_nodes=(Node("n1", HOSTILE), Node("n2", "ok", kind=HOSTILE)),
                            added_edges=(Edge("n1", "</script><script>alert(2)</script>", "n2",
                                              provenance='<a href="javascript:alert(3)">x</a>'),)),)
    html = graph_html(graph_at(steps, 1))
    assert "<img" not in html.lower() and "onerror=alert(1)>" not in html
    assert "<script>alert(2)" not in html and "<a href" not in html
    (node, other) = _drawn_nodes(html)
    assert node["label"] == "‹img src=x onerror=aler…"
    assert node["title"].startswith("‹img src=x onerror=alert(1)›\n")
    assert "<" not in node["title"] and "<" not in other["title"]
    (edge,) = _drawn_edges(html)
    assert "<" not in edge["label"] and "<" not in edge["title"] and ">" not in edge["title"]


def test_pruned_focus_and_new_elements_are_drawn_differently():
    by_id = {n["id"]: n for n in _drawn_nodes(graph_html(graph_at(STEPS, 1)))}
    assert by_id["a"]["color"]["background"] != by_id["b"]["color"]["background"]  # pruned: grey
    assert by_id["c"]["borderWidth"] > by_id["b"]["borderWidth"]  # focus: thick border
    assert by_id["c"]["size"] > by_id["b"]["size"] and by_id["c"]["shadow"]["enabled"]  # new: bigger, glowing
    edges = {e["label"]: e for e in _drawn_edges(graph_html(graph_at(STEPS, 2)))}
    assert edges["built"]["dashes"] is True and edges["built_at"]["dashes"] is False


def test_legend_names_every_round_shown():
    text = legend(graph_at(STEPS, 2))
    assert "set-up" in text and "round 1" in text and "round 2" in text and "pruned" in text


# ---- issue 14: labels at 100 nodes, focus on the round, node table, no empty panel, sandbox ---------------


def _hundred() -> tuple[GraphDeltaStep, ...]:
    """70 nodes in round 1, 30 more in round 2; every third label is far longer than LABEL_CHARS."""
    def label(i: int) -> str:
        return f"entity {i} " + ("with a very long name from some document <b>" if i % 3 == 0 else "short")

    nodes = tuple(Node(f"n{i}", label(i)) for i in range(100))
    edges = tuple(Edge(f"n{i}", "rel", f"n{i // 3}") for i in range(1, 100))  # a tree
    return (GraphDeltaStep(iteration=1, added_nodes=nodes[:70], added_edges=edges[:69]),
            GraphDeltaStep(iteration=2, added_nodes=nodes[70:], added_edges=edges[69:], focus=("n5",)))


def _frame_of(html: str) -> dict:
    return json.loads(re.search(r"var frame = (\{.*?\});", html).group(1))


def test_every_one_of_100_nodes_is_labelled_shortened_with_its_full_label_on_hover():
    view = graph_at(_hundred(), 2)
    html = graph_html(view)
    drawn = {n["id"]: n for n in _drawn_nodes(html)}
    assert len(drawn) == 100
    for node in view.nodes:
        full = plain(node.label)
        label, title = drawn[node.id]["label"], drawn[node.id]["title"]
        assert label == (full if len(full) <= LABEL_CHARS else full[:LABEL_CHARS - 1] + "…")
        assert len(label) <= LABEL_CHARS and title.split("\n")[0] == full
    assert sum(n["label"].endswith("…") for n in drawn.values()) == 34
    # vis-network hides labels drawn under 4 px unless told not to (why RAS graphs showed none)
    assert '"scaling": {"label": {"drawThreshold": 0}}' in html


def test_the_camera_never_zooms_out_past_legible_labels():
    html = graph_html(graph_at(_hundred(), 2))
    least = float(re.search(r"Math\.max\(([0-9.]+), Math\.min\(", html).group(1))
    assert all(n["font"]["size"] == FONT_PX for n in _drawn_nodes(html))
    assert FONT_PX * least >= READABLE_PX - 0.01


def test_the_round_is_its_new_and_focus_nodes_and_the_ends_of_its_new_edges():
    assert current_ids(graph_at(STEPS, 1)) == {"b", "c"}  # c new and focus, b the other end of the new edge
    assert current_ids(graph_at(STEPS, 2)) == {"c", "d"}
    assert current_ids(graph_at(STEPS, 3)) == frozenset()


def test_the_camera_frames_the_rounds_nodes_and_draws_the_older_ones_faded():
    view = graph_at(_hundred(), 2)
    html = graph_html(view)
    drawn = {n["id"]: n for n in _drawn_nodes(html)}
    now = current_ids(view)
    assert {f"n{i}" for i in range(70, 100)} | {"n5"} <= now and len(now) < 100
    assert all("opacity" not in drawn[i] for i in now)
    assert all(drawn[i]["opacity"] < 1 and drawn[i]["font"]["color"] != drawn["n70"]["font"]["color"]
               for i in drawn.keys() - now)
    where = positions(view.skeleton)
    xs, ys = [where[i][0] for i in now], [where[i][1] for i in now]
    frame = _frame_of(html)
    assert (frame["w"], frame["h"]) == (max(xs) - min(xs), max(ys) - min(ys))
    assert (frame["cx"], frame["cy"]) == ((max(xs) + min(xs)) / 2, (max(ys) + min(ys)) / 2)
    assert (frame["ax"], frame["ay"]) in {where[i] for i in now}  # centred on a node, never on empty space


def test_a_round_that_changed_nothing_fades_nothing_and_frames_the_whole_graph():
    view = graph_at(STEPS, 3)
    html = graph_html(view)
    assert not any("opacity" in n for n in _drawn_nodes(html))
    xs = [positions(view.skeleton)[n.id][0] for n in view.nodes]
    assert _frame_of(html)["w"] == max(xs) - min(xs)


def test_separate_components_are_packed_close_instead_of_flung_apart():
    star = tuple(Edge("hub", "r", f"s{i}") for i in range(30))
    pairs = tuple(Edge(f"p{i}", "r", f"q{i}") for i in range(15))
    where = positions(graph_at((GraphDeltaStep(iteration=1, added_edges=star + pairs),), 1).skeleton)
    xs, ys = zip(*where.values())
    area_per_node = (max(xs) - min(xs)) * (max(ys) - min(ys)) / len(where)
    assert area_per_node < 4 * 90 ** 2  # about the square of the spacing, not a mostly empty box
    assert len(set(where.values())) == len(where)


def test_the_node_table_has_one_row_per_node_with_the_full_label_most_relevant_first():
    view = graph_at(_hundred(), 2)
    rows = node_rows(view)
    assert len(rows) == 100 and {r["id"] for r in rows} == {n.id for n in view.nodes}
    assert set(rows[0]) == {"node", "kind", "first seen", "degree", "status", "id"}
    assert rows[0]["id"] == "n5" and rows[0]["status"] == "focus"
    by_id = {r["id"]: r for r in rows}
    assert by_id["n3"]["node"] == "entity 3 with a very long name from some document <b>"  # full, as text
    assert by_id["n99"]["first seen"] == "round 2" and by_id["n1"]["first seen"] == "round 1"
    assert by_id["n0"]["degree"] == sum(1 for e in view.edges if "n0" in (e.source, e.target))
    assert [r["id"] for r in node_rows(graph_at(STEPS, 1))][0] == "c"


def test_there_is_no_graph_before_the_first_node_nor_for_a_method_that_builds_none():
    kg_stage = (DecisionStep(iteration=1, action="skip"),
                GraphDeltaStep(iteration=5, added_nodes=(Node("x", "X"),), focus=("x",)))
    assert not has_graph(kg_stage, 4) and has_graph(kg_stage, 5) and has_graph(kg_stage, 6)
    assert not has_graph((DecisionStep(action="answer"),), 0)
    assert not has_graph((GraphDeltaStep(iteration=5, title="KG: 0 facts about 0 entities"),), 5)


class _Frames(HTMLParser):
    """Every tag's attributes in the outer document; an iframe's srcdoc stays one (unparsed) attribute."""

    def __init__(self) -> None:
        super().__init__()
        self.tags: list[tuple[str, dict]] = []

    def handle_starttag(self, tag: str, attrs: list) -> None:
        self.tags.append((tag, dict(attrs)))


def test_the_graph_runs_in_an_iframe_sandboxed_without_same_origin():
    page = graph_html(graph_at(STEPS, 2))
    parser = _Frames()
    parser.feed(sandboxed(page, height_px=500, title="graph <b>"))
    frames = [attrs for tag, attrs in parser.tags if tag == "iframe"]
    assert len(frames) == 1 and frames[0]["sandbox"].split() == ["allow-scripts"]
    assert "allow-same-origin" not in frames[0]["sandbox"]
    assert frames[0]["srcdoc"] == page and frames[0]["title"] == "graph <b>"
    assert not any(tag == "script" for tag, _ in parser.tags)  # nothing runs with the app's origin
    assert re.search(r"<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none';", page)


def _panels() -> None:
    """Run by AppTest: a round with a graph, one before the graph exists, and a method without one."""
    import streamlit as st

    from components.graph import render_graph
    from engine.trace import DecisionStep, Edge, GraphDeltaStep, Node

    steps = (DecisionStep(iteration=1, action="skip"),
             GraphDeltaStep(iteration=5, added_nodes=(Node("x", "X"), Node("y", "Y")),
                            added_edges=(Edge("x", "r", "y"),)))
    st.session_state["drew"] = [render_graph(steps, 5, key="kg"), render_graph(steps, 1, key="early"),
                                render_graph(steps[:1], 1, key="none")]


def test_only_a_graph_with_nodes_draws_a_panel_and_its_iframe_is_sandboxed_without_same_origin():
    from streamlit.testing.v1 import AppTest

    at = AppTest.from_function(_panels, default_timeout=60).run()
    assert not at.exception
    assert at.session_state["drew"] == [True, False, False]
    (frame,) = at.get("iframe")
    parser = _Frames()
    parser.feed(frame.proto.srcdoc)
    (inner,) = [attrs for tag, attrs in parser.tags if tag == "iframe"]
    assert "allow-same-origin" not in inner["sandbox"] and "vis.Network(" in inner["srcdoc"]
    (table,) = at.dataframe
    assert sorted(table.value["id"]) == ["x", "y"]
    captions = [c.value for c in at.caption]
    assert "the graph has no nodes as of round 1" in captions and "this method builds no graph" in captions


def test_the_camera_fits_exactly_the_rounds_focus_nodes_when_its_frame_cuts_one_off():
    html = graph_html(graph_at(_hundred(), 2))
    assert json.loads(re.search(r"var focus = (\[.*?\]);", html).group(1)) == ["n5"]
    assert "network.fit({nodes: focus, animation: false" in html
    # a round without focus nodes keeps the legible frame of what it changed
    assert re.search(r"var focus = (\[.*?\]);", graph_html(graph_at(_hundred(), 1))).group(1) == "[]"
