"""The demo tour in a real browser, on a fresh server: the first stop shows after Start, and each stop's
answer and graph are on screen at the sizes people present on (issue 22). How soon the first stop shows is
bench/tour.py's to measure (budget ≤ 5 s); here it is only recorded in tests/artifacts/.

The server starts the way `make run` starts it: the demo pack's index is built first (by the CLI, in a
new RAGSCOPE_HOME), nothing else is prepared — no question has been asked, no method has run.
Screenshots go to tests/artifacts/ for a human to look at.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Iterator

import pytest

from paths import DEMO_PACK, ROOT
from test_browser import ARTIFACTS, CHROMIUM, chromium, serve_app

SIZES = [(1280, 800), (1920, 1080)]
MIN_VISIBLE_PX = 200  # of a box taller than that, at least this much must be inside the window
STOP_STALL_S = 240  # the longest a background stop may take before the wait gives up (a slow 2-core machine: ~60 s)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason="Debian's chromium is not installed (make browser-deps)"),
]


@pytest.fixture(scope="module")
def fresh_app(tmp_path_factory) -> Iterator[str]:
    home = tmp_path_factory.mktemp("tour_home")
    data = home / ".ragscope"
    env = {**os.environ, "HOME": str(home), "RAGSCOPE_HOME": str(data), "HF_HUB_OFFLINE": "1"}
    subprocess.run([sys.executable, "-m", "engine", "index", "--pack", str(DEMO_PACK)], cwd=ROOT, env=env,
                   check=True, timeout=600, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    with serve_app(home, data) as url:
        yield url


@pytest.fixture(scope="module")
def browser(fresh_app, tmp_path_factory):
    with chromium(tmp_path_factory.mktemp("chromium-profile"), 1280, 720) as context:
        yield context


def _start(browser, url: str, size: tuple[int, int]):
    from playwright.sync_api import expect

    page = browser.new_page()
    page.set_viewport_size({"width": size[0], "height": size[1]})
    page.goto(f"{url}/demo?pack=demo")
    start = page.get_by_role("button", name="Start the tour")
    expect(start).to_be_visible(timeout=60_000)
    return page, start


def _answer(page):
    return page.locator("[class*='st-key-demo-stop'] [class*='answer-card']").first


def _graph(page):
    return page.locator("[class*='st-key-demo-stop'] iframe[title*='knowledge graph']").first


def _stops_planned(page) -> int:
    """T of the stop heading 'Stop k of T': the stops the tour will have (it drops any it had to leave out)."""
    heading = page.get_by_text(re.compile(r"Stop \d+ of \d+")).first.inner_text()
    return int(re.search(r"Stop \d+ of (\d+)", heading).group(1))


def _wait_for_every_stop(page, options) -> list[str]:
    """The labels of every stop once all are asked. The wait follows progress — it gives up only when no
    new stop arrived for STOP_STALL_S — rather than one fixed budget for the whole tour, which a loaded
    machine overran; and it waits for the stops themselves, not for a caption to vanish (it also vanishes
    for a moment while the page reruns)."""
    seen, since = -1, time.monotonic()
    while True:
        labels = list(dict.fromkeys(text.strip() for text in options.all_inner_texts()))
        if labels and len(labels) >= _stops_planned(page):
            return labels
        if len(labels) != seen:
            seen, since = len(labels), time.monotonic()
        assert time.monotonic() - since < STOP_STALL_S, f"no new stop for {STOP_STALL_S} s; ready: {labels}"
        page.wait_for_timeout(2_000)


def _visible_px(page, box) -> tuple[float, dict]:
    """How many pixels of the element's height lie inside the window, and its box."""
    rect = box.bounding_box()
    assert rect is not None, "the element is not laid out"
    height = page.viewport_size["height"]
    return max(0.0, min(rect["y"] + rect["height"], height) - max(rect["y"], 0.0)), rect


def _assert_on_screen(page, box, what: str) -> None:
    seen, rect = _visible_px(page, box)
    assert seen >= min(rect["height"], MIN_VISIBLE_PX), f"{what} is off screen: {rect} in {page.viewport_size}"
    assert 0 <= rect["y"] < page.viewport_size["height"], f"the top of {what} is off screen: {rect}"


def test_the_first_stop_shows_after_start_on_a_fresh_server(fresh_app, browser):
    """Runs first, on the module's fresh server: no method has run in this process before Start."""
    from playwright.sync_api import expect

    page, start = _start(browser, fresh_app, SIZES[0])
    began = time.perf_counter()
    start.click()
    expect(page.get_by_text("asking", exact=False).first).to_be_visible(timeout=10_000)
    expect(page.get_by_text("Stop 1 of", exact=False).first).to_be_visible(timeout=120_000)
    expect(_answer(page)).to_be_visible(timeout=10_000)
    elapsed = time.perf_counter() - began
    (ARTIFACTS / "demo_tour_first_stop_seconds.txt").write_text(f"{elapsed:.2f}\n")
    print(f"first stop after {elapsed:.2f} s")
    page.get_by_role("button", name="Pause").click()
    page.close()


@pytest.mark.parametrize("size", SIZES)
def test_each_stop_has_its_answer_and_graph_on_screen(fresh_app, browser, size):
    from playwright.sync_api import expect

    page, start = _start(browser, fresh_app, size)
    began = time.perf_counter()
    start.click()
    expect(_answer(page)).to_be_visible(timeout=120_000)
    print(f"first stop after {time.perf_counter() - began:.2f} s at {size[0]}x{size[1]}")
    page.wait_for_timeout(1_500)  # the scroll, and the last redraw, settle
    _assert_on_screen(page, _answer(page), "the answer card")
    page.screenshot(path=str(ARTIFACTS / f"demo_tour_stop1_{size[0]}x{size[1]}.png"))
    page.get_by_role("button", name="Pause").click()
    options = page.locator("[class*='st-key-demo-stop'] [data-testid='stRadioOption']")
    labels = _wait_for_every_stop(page, options)  # read once: clicks redraw
    graphs = 0
    for i, label in enumerate(labels):
        options.filter(has_text=label).first.click()
        expect(page.get_by_text(f"Stop {i + 1} of", exact=False).first).to_be_visible(timeout=20_000)
        page.wait_for_timeout(2_000)
        _assert_on_screen(page, _answer(page), f"the answer card of {label}")
        if _graph(page).count():
            _assert_on_screen(page, _graph(page), f"the graph of {label}")
            graphs += 1
            name = re.sub(r"[^a-z0-9]+", "_", label.lower()).strip("_")
            page.screenshot(path=str(ARTIFACTS / f"demo_tour_{name}_{size[0]}x{size[1]}.png"))
    assert graphs, "no stop of the tour drew a graph"
    page.close()
