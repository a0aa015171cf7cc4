"""The real thing: start the app the README way, ask a demo question in Chromium, see the answer.

Uses Debian's Chromium through Playwright (never a downloaded browser); saves a screenshot to
tests/screenshots/ for a human to look at.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
SHOTS = ROOT / "tests" / "screenshots"
CHROMIUM_ARGS = ["--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (make browser-deps)"),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def app_url(tmp_path_factory):
    home = tmp_path_factory.mktemp("browser_home")
    port = _free_port()
    env = {**os.environ, "HOME": str(home), "RAGSCOPE_HOME": str(home / ".ragscope"), "HF_HUB_OFFLINE": "1"}
    server = subprocess.Popen(
        [sys.executable, "-m", "streamlit", "run", "app.py", "--server.headless", "true",
         "--server.address", "127.0.0.1", "--server.port", str(port)],
        cwd=ROOT, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}"
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                if urllib.request.urlopen(f"{url}/_stcore/health", timeout=2).status == 200:
                    break
            except OSError:
                time.sleep(0.3)
        else:
            pytest.fail("the app did not answer /_stcore/health within 60 s")
        yield url, home
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()


def test_asking_a_demo_question_in_the_browser_shows_chunks_and_an_answer(app_url):
    from playwright.sync_api import expect, sync_playwright

    url, home = app_url
    SHOTS.mkdir(parents=True, exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch_persistent_context(
            str(home / "chromium-profile"), executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 2000})
        page = browser.new_page()
        page.goto(url)
        expect(page.get_by_text("Pick an example or type a question")).to_be_visible(timeout=30_000)
        question = page.get_by_label("Question", exact=True)
        question.fill("When was Marie Curie born?")
        page.get_by_role("button", name="Run", exact=True).click()
        expect(page.get_by_text("confidence", exact=False)).to_be_visible(timeout=120_000)
        expect(page.get_by_text("Top 5 chunks", exact=False)).to_be_visible()
        page.screenshot(path=str(SHOTS / "explore_answer.png"), full_page=True)
        browser.close()
