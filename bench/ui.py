"""UI budgets (DESIGN §11): app start to an interactive Explore page, and moving between rounds.

1. Starts `streamlit run app.py` like `make run` and times until Chromium shows the Question box.
2. Replays a synthetic 5-round trace with a growing graph in AppTest and times Next (server side).
Usage: python bench/ui.py
"""

from __future__ import annotations

import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from engine.trace import Trace

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


def app_start_seconds() -> float:
    from playwright.sync_api import sync_playwright

    home = Path(tempfile.mkdtemp(prefix="ragscope-ui-"))
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    env = {**os.environ, "HOME": str(home), "RAGSCOPE_HOME": str(home / ".ragscope")}
    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(str(home / "profile"), executable_path="/usr/bin/chromium",
                                                       headless=True, args=CHROMIUM_ARGS)
        page = browser.new_page()
        started = time.perf_counter()
        server = subprocess.Popen([sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
                                   "--server.address", "127.0.0.1", "--server.port", str(port)],
                                  cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            while True:
                try:
                    page.goto(f"http://127.0.0.1:{port}/", timeout=2000)
                    break
                except Exception:  # noqa: BLE001 - not listening yet
                    time.sleep(0.05)
            page.get_by_label("Question", exact=True).wait_for(timeout=30_000)
            return time.perf_counter() - started
        finally:
            server.terminate()
            server.wait(timeout=10)
            browser.close()


def synthetic_trace(rounds: int = 5, nodes_per_round: int = 12) -> Trace:
    from engine.trace import AnswerStep, DecisionStep, Edge, GraphDeltaStep, Hit, Node, RetrievalStep, Trace

    steps, previous = [], "topic"
    steps.append(GraphDeltaStep(iteration=0, added_nodes=(Node("topic", "Topic"),), focus=("topic",)))
    for r in range(1, rounds + 1):
        nodes = tuple(Node(f"n{r}_{i}", f"Entity {r}.{i}", score=1 / (i + 1)) for i in range(nodes_per_round))
        edges = tuple(Edge(previous if i == 0 else nodes[i - 1].id, "related_to", n.id) for i, n in enumerate(nodes))
        hits = tuple(Hit(f"d{r}{i}", f"d{r}{i}#0", f"Doc {r}.{i}", "Some text " * 30, 1 - i / 10, i + 1)
                     for i in range(5))
        steps += [RetrievalStep(iteration=r, query=f"sub-query {r}", retriever="hybrid", hits=hits),
                  GraphDeltaStep(iteration=r, added_nodes=nodes, added_edges=edges, focus=(nodes[0].id,)),
                  DecisionStep(iteration=r, action="continue")]
        previous = nodes[-1].id
    steps.append(AnswerStep(iteration=rounds, text="Entity 5.3", citations=("d50",)))
    head = Trace(id="bench5", question="synthetic", method="vanilla", backend="offline", model="", pack="demo")
    return head.with_steps(tuple(steps), 10.0)


def round_change_ms(repeats: int = 8) -> float:
    from streamlit.testing.v1 import AppTest

    trace = synthetic_trace()
    at = AppTest.from_file(str(ROOT / "app.py"), default_timeout=120)
    at.session_state["explore.trace"] = trace
    at.run()
    times = []
    for _ in range(repeats):
        for label in ("Prev", "Next"):
            button = next(b for b in at.button if b.label == label)
            if button.disabled:
                continue
            started = time.perf_counter()
            button.click().run()
            times.append((time.perf_counter() - started) * 1000)
    return statistics.median(times)


def main() -> None:
    print(f"app start to interactive Explore page: {app_start_seconds():.2f} s (budget ≤ 3 s)")
    print(f"round change, 5-round trace with a graph: {round_change_ms():.0f} ms median, server side "
          "(budget ≤ 300 ms)")


if __name__ == "__main__":
    main()
