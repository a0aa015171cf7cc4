"""The real thing: start the app the way `make run` does, use it in Debian's Chromium.

Asks a demo question with every registered method and steps through the rounds, checks that
hostile text in a pack stays inert, and that two browser sessions asking at once both finish.
Screenshots go to tests/artifacts/ for a human to look at.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from engine.methods.base import method_ids
from paths import ROOT

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
ARTIFACTS = ROOT / "tests" / "artifacts"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
HOSTILE = "<img src=x onerror=alert(1)><script>alert(2)</script>"
ANSWER_TIMEOUT_MS = 120_000

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (make browser-deps)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _hostile_pack(folder: Path) -> None:
    folder.mkdir(parents=True)
    (folder / "pack.json").write_text(json.dumps({"name": "hostile", "title": f"Hostile {HOSTILE}"}))
    docs = [{"id": "x1", "title": f"Evil {HOSTILE}", "text": f"The comet Zorblax was seen in 1911. {HOSTILE}"},
            {"id": "x2", "title": "Plain", "text": "Nothing to see here, only plain words about weather."}]
    (folder / "documents.jsonl").write_text("\n".join(json.dumps(d) for d in docs) + "\n")


@contextmanager
def serve_app(home: Path, data: Path) -> Iterator[str]:
    """The app as `make run` starts it (streamlit run app.py on 127.0.0.1) on a free port, with `home` as
    HOME and `data` as RAGSCOPE_HOME; yields its URL and stops it after."""
    port = _free_port()
    env = {**os.environ, "HOME": str(home), "RAGSCOPE_HOME": str(data), "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    home = tmp_path_factory.mktemp("browser_home")
    _hostile_pack(home / ".ragscope" / "packs" / "hostile")
    with serve_app(home, home / ".ragscope") as url:
        yield url, home


def _wait_healthy(url: str) -> None:
    deadline = time.time() + 60
    while time.time() < deadline:
        try:
            if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).status == 200:
                return
        except OSError:
            time.sleep(0.3)
    pytest.fail("the app did not answer /_stcore/health within 60 s")


@contextmanager
def chromium(profile: Path, width: int = 1400, height: int = 2200, **options: Any) -> Iterator[Any]:
    """Debian's Chromium, headless, through Playwright, with its own profile folder (a browser context);
    screenshots go to ARTIFACTS, which exists once this is open."""
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(profile), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": width, "height": height}, **options)
        try:
            yield context
        finally:
            context.close()


@pytest.fixture(scope="module")
def browser(app):
    _, home = app
    with chromium(home / "chromium-profile") as context:
        yield context


def _ask(page, url: str, question: str, method_label: str | None = None, pack: str = "demo") -> None:
    from playwright.sync_api import expect

    page.goto(f"{url}/?pack={pack}")
    expect(page.get_by_label("Question", exact=True)).to_be_visible(timeout=30_000)
    if method_label:
        page.get_by_label("Method").click()
        page.get_by_role("option", name=method_label, exact=True).click()
    page.get_by_label("Question", exact=True).fill(question)
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)


def test_a_deep_link_to_a_page_works_on_a_fresh_server(app, browser):
    """Runs first on the module's fresh server: a shared link must not bypass app.py."""
    from playwright.sync_api import expect

    url, _ = app
    page = browser.new_page()
    page.goto(f"{url}/compare?pack=demo")
    expect(page.get_by_role("heading", name="Compare methods")).to_be_visible(timeout=30_000)
    expect(page.get_by_text("KeyError")).to_have_count(0)
    page.close()


def test_no_request_leaves_the_machine(app, browser):
    """Favicon, fonts, graph scripts: every request the page makes goes to the app itself."""
    url, _ = app
    page = browser.new_page()
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    _ask(page, url, "Where was Paul Dirac born?", "RAS")
    page.wait_for_timeout(2_000)
    outside = [u for u in requested if not u.startswith((url, "data:", "blob:", "about:"))]
    assert requested and outside == []
    icon = page.locator("link[rel~='icon']").first.get_attribute("href") or ""
    assert not icon.startswith("http") or icon.startswith(url)
    page.close()


def _expected(method: str, question: str) -> tuple[list[int], bool]:
    """The rounds the method takes offline (deterministic) and whether its last round has a graph."""
    from components.graph import has_graph
    from components.trace_view import rounds_of
    from engine.knowledge.loader import load_pack
    from engine.runner import Workbench
    from paths import DEMO_PACK

    trace = Workbench(load_pack(DEMO_PACK)).ask(question, method)
    rounds = rounds_of(trace)
    return rounds, has_graph(trace.steps, rounds[-1])


def _round_heading(iteration: int) -> str:
    from components.timeline import round_label

    return round_label(iteration).capitalize()


@pytest.mark.parametrize("method", method_ids())
def test_every_method_answers_a_demo_question_and_its_rounds_can_be_stepped(app, browser, method):
    from playwright.sync_api import expect

    from engine.methods.base import METHODS

    url, _ = app
    question = "Who discovered the neutron?"
    rounds, graph = _expected(method, question)
    page = browser.new_page()
    _ask(page, url, question, METHODS[method].label)
    expect(page.get_by_text("no language model was involved", exact=False)).to_be_visible()
    prev, nxt = (page.get_by_role("button", name=n, exact=True) for n in ("Prev", "Next"))
    heading = page.get_by_role("heading", level=5)
    expect(heading.first).to_have_text(_round_heading(rounds[-1]))  # a new result opens on its answer
    if len(rounds) > 1:
        expect(prev).to_be_enabled()
        prev.click()
        expect(heading.first).to_have_text(_round_heading(rounds[-2]))
        expect(nxt).to_be_enabled()
        nxt.click()
        expect(heading.first).to_have_text(_round_heading(rounds[-1]))
    else:
        expect(prev).to_be_disabled()
    canvas = page.frame_locator("iframe").frame_locator("iframe").locator("canvas")
    if graph:
        expect(canvas.first).to_be_visible(timeout=20_000)
    else:
        expect(page.locator("iframe")).to_have_count(0)  # no empty graph panel
    page.wait_for_timeout(2_000)  # let the last rerun settle, or the screenshot mixes two rounds
    page.screenshot(path=str(ARTIFACTS / f"explore_{method}.png"), full_page=True)
    page.close()


@pytest.mark.parametrize("size", [(1280, 800), (1920, 1080)])
def test_screens_at_laptop_and_desktop_sizes(app, browser, size):
    """Screenshots for a human at the two sizes people present on; the RAS graph must be drawn."""
    from playwright.sync_api import expect

    url, _ = app
    page = browser.new_page()
    page.set_viewport_size({"width": size[0], "height": size[1]})
    _ask(page, url, "Where was the doctoral advisor of Paul Dirac born?", "RAS")
    expect(page.frame_locator("iframe").frame_locator("iframe").locator("canvas").first).to_be_visible(timeout=20_000)
    page.wait_for_timeout(2_000)
    page.screenshot(path=str(ARTIFACTS / f"explore_ras_{size[0]}x{size[1]}.png"))
    page.get_by_test_id("stSidebar").get_by_role("link", name="Demo tour").click()
    page.get_by_role("button", name="Start the tour").click()
    expect(page.get_by_text("Stop 1 of", exact=False)).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    page.wait_for_timeout(1_000)
    page.screenshot(path=str(ARTIFACTS / f"demo_tour_{size[0]}x{size[1]}.png"))
    page.get_by_role("button", name="Pause").click()
    page.close()


def test_picking_an_example_and_running_at_once_runs_what_the_box_shows(app, browser):
    """No waiting between the two clicks: the run and the box must agree on the question."""
    from playwright.sync_api import expect

    url, _ = app
    page = browser.new_page()
    page.goto(f"{url}/?pack=demo")
    box = page.get_by_label("Question", exact=True)
    expect(box).to_be_visible(timeout=30_000)
    page.get_by_label("Example questions from the pack").click()
    page.get_by_role("option").nth(2).click()
    page.get_by_role("button", name="Run", exact=True).click()  # at once, before the page has redrawn
    expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    page.wait_for_timeout(1_500)
    asked = box.input_value()
    assert asked.strip(), "an empty question must never run"
    expect(page.get_by_text(f"question: {asked}", exact=False).first).to_be_visible()
    page.close()


def test_hostile_text_in_a_pack_is_shown_as_text_and_runs_nothing(app, browser):
    from playwright.sync_api import expect

    url, _ = app
    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    _ask(page, url, "When was the comet Zorblax seen?", pack="hostile")
    page.get_by_text("Read the chunks").filter(visible=True).first.click()
    expect(page.get_by_text("onerror=alert(1)", exact=False).filter(visible=True).first).to_be_visible()
    page.screenshot(path=str(ARTIFACTS / "hostile_pack.png"), full_page=True)
    assert dialogs == [] and page.locator("img[src=x]").count() == 0
    page.close()


def test_two_browser_sessions_asking_at_once_both_finish(app, browser):
    from playwright.sync_api import expect

    url, _ = app
    pages = [browser.new_page(), browser.new_page()]
    questions = ["Where was Marie Curie born?", "Who was Paul Dirac's doctoral advisor?"]
    for page in pages:
        page.goto(f"{url}/?pack=demo")
    # Both are submitted before either answer is awaited; the server runs each session's script in
    # its own thread against the one shared workbench.
    for page, question in zip(pages, questions):
        expect(page.get_by_label("Question", exact=True)).to_be_visible(timeout=30_000)
        page.get_by_label("Question", exact=True).fill(question)
        page.get_by_role("button", name="Run", exact=True).click()
    for page in pages:
        expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
        page.close()


def test_heatmaps_render_when_a_local_model_reads_the_evidence(app, browser, tiny_llama):
    """Load the tiny Llama on the Models page, pick it in the sidebar, ask: attention heatmaps draw."""
    from playwright.sync_api import expect

    url, _ = app
    page = browser.new_page()
    page.goto(f"{url}/?pack=demo")
    sidebar = page.get_by_test_id("stSidebar")
    sidebar.get_by_role("link", name="Models").click()
    page.get_by_role("textbox", name="Model folder, .gguf file or cached hub id").fill(str(tiny_llama))
    page.get_by_role("button", name="Load", exact=True).click()
    expect(page.get_by_text("Loaded", exact=False).first).to_be_visible(timeout=60_000)
    sidebar.get_by_role("combobox", name="Model").click()
    page.get_by_role("option", name="hf:", exact=False).click()
    sidebar.get_by_role("link", name="Explore").click()
    page.get_by_label("Question", exact=True).fill("Where was Marie Curie born?")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    expect(page.locator(".js-plotly-plot").first).to_be_visible(timeout=30_000)
    assert page.locator(".js-plotly-plot").count() >= 2  # layer × segment and token × segment
    page.screenshot(path=str(ARTIFACTS / "explore_vanilla_hf_attention.png"), full_page=True)
    page.close()
