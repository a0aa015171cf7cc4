"""In a real browser, Explore on an OpenAI-compatible server shows the model's reply as it is written, then
the finished run (issue 18). The server is the scripted loopback one, slowed to a few tokens a second;
a screenshot taken mid-stream goes to tests/artifacts/ for a human to look at."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from fake_chat_server import MODEL, Answerer, ChatServer, serving
from test_browser import ANSWER_TIMEOUT_MS, ARTIFACTS, CHROMIUM, chromium, serve_app

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (make browser-deps)"),
]

WORDS = "Answer: Paul Dirac was born in Bristol , England , in 1902 .\nEvidence: [1]".split(" ")
TOKENS = tuple(w if i == 0 else " " + w for i, w in enumerate(WORDS))
LABEL = "openai: tiny-chat (scripted server)"


@pytest.fixture(scope="module")
def slow_server() -> Iterator[ChatServer]:
    saved = {k: os.environ.pop(k) for k in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy",
                                            "all_proxy") if k in os.environ}
    try:
        with serving() as script:
            script.answerer = Answerer(TOKENS, token_delay_s=0.4)
            yield script
    finally:
        os.environ.update(saved)


@pytest.fixture(scope="module")
def app_data(tmp_path_factory, slow_server: ChatServer) -> Path:
    """The app's RAGSCOPE_HOME, with the scripted server set up on the Models page already (its saved
    backends file)."""
    data = tmp_path_factory.mktemp("streaming_home") / ".ragscope"
    data.mkdir()
    options = [["base_url", slow_server.url], ["model", MODEL]]
    (data / "backends.json").write_text(json.dumps({"openai": {"label": LABEL, "options": options}}))
    return data


@pytest.fixture(scope="module")
def app(app_data: Path) -> Iterator[str]:
    with serve_app(app_data.parent, app_data) as url:
        yield url


def _ask_the_server(page, app: str, question: str) -> None:
    """Pick the scripted server in the sidebar and ask `question` on Explore."""
    from playwright.sync_api import expect

    page.goto(f"{app}/?pack=demo")
    sidebar = page.get_by_test_id("stSidebar")
    expect(sidebar.get_by_role("combobox", name="Model")).to_be_visible(timeout=30_000)
    sidebar.get_by_role("combobox", name="Model").click()
    page.get_by_role("option", name=LABEL).click()
    page.get_by_label("Question", exact=True).fill(question)
    page.get_by_role("button", name="Run", exact=True).click()


def test_the_reply_appears_token_by_token_then_the_finished_run_replaces_it(app, tmp_path, slow_server):
    from playwright.sync_api import expect

    with chromium(tmp_path / "profile", 1400, 1400) as browser:
        page = browser.new_page()
        _ask_the_server(page, app, "Where was Paul Dirac born?")

        writing = page.get_by_text("reader is writing…")
        expect(writing).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
        reply = page.get_by_test_id("stCode").last
        expect(reply).to_contain_text("Paul Dirac was born", timeout=10_000)  # a few tokens in, far from done
        partial = reply.inner_text()
        page.screenshot(path=str(ARTIFACTS / "explore_streaming.png"))
        assert page.get_by_role("heading", name="Answer").count() == 0  # the run has not finished

        expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
        expect(writing).to_have_count(0)
        full = "".join(TOKENS)
        assert full.startswith(partial.strip()) and len(partial.strip()) < len(full)
        assert [r["body"].get("stream") for r in slow_server.requests if r["body"]] == [True]
        expect(page.get_by_text("mean token logprob −0.10 (perplexity 1.11)").first).to_be_visible()
        page.wait_for_timeout(1_000)
        page.screenshot(path=str(ARTIFACTS / "explore_streamed_run.png"), full_page=True)


def test_a_reload_mid_run_keeps_the_run_and_shows_it_to_its_end(app, tmp_path, slow_server):
    """Issue 22: the run goes on when its page is reloaded; the reloaded page watches it and then shows it,
    and it is in History."""
    from playwright.sync_api import expect

    question = "Where was Paul Dirac born?"
    with chromium(tmp_path / "profile", 1280, 800) as browser:
        page = browser.new_page()
        _ask_the_server(page, app, question)
        expect(page.get_by_text("reader is writing…")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
        assert "run=" in page.url  # the run is named in the address before it ends

        page.reload()
        expect(page.get_by_text("is answering: " + question, exact=False)).to_be_visible(timeout=30_000)
        expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
        expect(page.get_by_text(f"LLM calls · question: {question}", exact=False)).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "explore_after_reload_mid_run.png"))
        again = browser.new_page()  # saved: a fresh session opens it from its link
        again.goto(page.url)
        expect(again.get_by_text(f"LLM calls · question: {question}", exact=False)).to_be_visible(timeout=30_000)
        expect(again.get_by_text("is answering", exact=False)).to_have_count(0)


def test_a_new_question_mid_run_stops_the_previous_run_and_answers_the_new_one(app, app_data, tmp_path, slow_server):
    """Issue 23, seen with a real model: a second question asked while the first run was going started
    beside it, unseen, sharing the one model. Now the first run stops, is saved, and the page says so."""
    from playwright.sync_api import expect

    first, second = "Where was Paul Dirac born?", "Where was Lise Meitner born?"
    with chromium(tmp_path / "profile", 1280, 800) as browser:
        page = browser.new_page()
        _ask_the_server(page, app, first)
        expect(page.get_by_text("reader is writing…")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
        page.get_by_label("Question", exact=True).fill(second)
        page.get_by_role("button", name="Run", exact=True).click()
        expect(page.get_by_text("Stopped the Vanilla RAG run on the previous question", exact=False)).to_be_visible(
            timeout=30_000)
        expect(page.get_by_role("heading", name="Answer")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
        expect(page.get_by_text(f"LLM calls · question: {second}", exact=False)).to_be_visible()
        page.screenshot(path=str(ARTIFACTS / "explore_after_a_question_mid_run.png"))
    from engine.runs import RunStore

    stopped = next(r for r in RunStore(app_data / "runs.sqlite3").list() if r.question == first)  # kept
    assert RunStore(app_data / "runs.sqlite3").get(stopped.id).answer is None  # stopped before it answered
