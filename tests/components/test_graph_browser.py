"""The graph page in Debian's Chromium: it draws inside a sandbox without allow-same-origin, where its scripts
get an opaque origin, and keeps every label at a legible zoom (issue 14)."""

from __future__ import annotations

import functools
import json
import os
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from components.graph import FONT_PX, LABEL_CHARS, READABLE_PX, graph_at, graph_html, panel_height, plain, sandboxed
from engine.trace import Edge, GraphDeltaStep, Node
from test_browser import CHROMIUM, chromium

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (make browser-deps)"),
]


class _Quiet(SimpleHTTPRequestHandler):
    def log_message(self, format: str, *args: object) -> None:
        pass


@pytest.fixture()
def served(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A folder served over http, as the app is: a file:// page has an opaque origin whatever the sandbox."""
    (tmp_path / "favicon.ico").write_bytes(b"")  # else the browser logs a 404 for it
    handler = functools.partial(_Quiet, directory=str(tmp_path))
    with ThreadingHTTPServer(("127.0.0.1", 0), handler) as server:
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        try:
            yield tmp_path, f"http://127.0.0.1:{server.server_address[1]}"
        finally:
            server.shutdown()


def test_a_100_node_graph_draws_in_an_opaque_origin_with_every_label(served: tuple[Path, str]):
    folder, url = served
    nodes = tuple(Node(f"n{i}", f"node {i} named at length by some document") for i in range(100))
    steps = (GraphDeltaStep(iteration=1, added_nodes=nodes[:70],
                            added_edges=tuple(Edge(f"n{i}", "r", f"n{i // 3}") for i in range(1, 70))),
             GraphDeltaStep(iteration=2, added_nodes=nodes[70:],
                            added_edges=tuple(Edge(f"n{i}", "r", f"n{i // 3}") for i in range(70, 100))))
    height = panel_height(100)
    drawing = graph_html(graph_at(steps, 2), height_px=height)
    (folder / "graph.html").write_text(sandboxed(drawing, height_px=height, title="g"))
    with chromium(folder / "profile", 440, height, env={**os.environ, "HOME": str(folder)}) as browser:
        page = browser.new_page()
        problems: list[str] = []
        page.on("console", lambda m: problems.append(m.text) if m.type == "error" else None)
        page.on("pageerror", lambda e: problems.append(str(e)))
        page.goto(f"{url}/graph.html")
        graph = page.frames[1]
        graph.wait_for_function("typeof network === 'object' && network !== null", timeout=20_000)
        assert graph.evaluate("window.origin") == "null"
        assert graph.evaluate("(() => { try { return parent.document.title; } catch (e) { return e.name; } })()") \
            == "SecurityError"
        labels = graph.evaluate("nodes.get().map(n => n.label)")
        assert labels == [plain(n.label)[:LABEL_CHARS - 1] + "…" for n in nodes]
        assert graph.evaluate("network.getScale()") >= READABLE_PX / FONT_PX - 1e-3
        assert problems == []  # the content security policy blocked nothing the graph needs


FOCUS_CHECK = """() => {
  const canvas = document.querySelector("#mynetwork canvas");
  const at = network.getPositions(FOCUS);
  return FOCUS.filter(id => {
    const p = network.canvasToDOM(at[id]);
    return !(p.x >= 0 && p.y >= 0 && p.x <= canvas.clientWidth && p.y <= canvas.clientHeight);
  });
}"""


def _spread_focus() -> tuple[tuple[GraphDeltaStep, ...], tuple[str, ...]]:
    """A 100-node tree whose second round's focus nodes lie far apart: at a legible zoom no frame holds them all."""
    nodes = tuple(Node(f"n{i}", f"node {i}") for i in range(100))
    edges = tuple(Edge(f"n{i}", "r", f"n{i // 3}") for i in range(1, 100))
    focus = ("n70", "n84", "n99", "n2")
    return (GraphDeltaStep(iteration=1, added_nodes=nodes[:70], added_edges=edges[:69]),
        GraphDeltaStep(iteration=2, added_nodes=nodes[70:], added_edges=edges[69:], focus=focus)), focus


def test_every_focus_node_of_the_round_is_inside_the_frame(served: tuple[Path, str]):
    folder, url = served
    steps, focus = _spread_focus()
    height = panel_height(100)
    (folder / "graph.html").write_text(graph_html(graph_at(steps, 2), height_px=height))
    with chromium(folder / "profile", 440, height, env={**os.environ, "HOME": str(folder)}) as browser:
        page = browser.new_page()
        page.goto(f"{url}/graph.html")
        page.wait_for_function("typeof network === 'object' && network !== null", timeout=20_000)
        outside = page.evaluate(FOCUS_CHECK.replace("FOCUS", json.dumps(list(focus))))
        assert outside == []
