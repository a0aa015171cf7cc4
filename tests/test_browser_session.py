"""One browser session, several questions, as a researcher works (issue 22): each result shown is the one just
asked, a replayed or linked run brings its own method into the boxes, the answer is in view at 1280×800
without scrolling, and a mistyped link says so. Screenshots go to tests/artifacts/."""

from __future__ import annotations

from pathlib import Path
from urllib.parse import parse_qs, urlparse

import pytest

from engine.methods.base import METHODS
from test_browser import ANSWER_TIMEOUT_MS, ARTIFACTS, CHROMIUM, chromium, serve_app

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (make browser-deps)"),
]

ASKED = (("vanilla", "Who discovered the neutron?"),
         ("tog2", "Where was Paul Dirac born?"),
         ("rulerag", "Where was the doctoral advisor of Paul Dirac born?"))


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    home = tmp_path_factory.mktemp("session_home")
    with serve_app(home, home / ".ragscope") as url:
        yield url, home


@pytest.fixture()
def page(app):
    _, home = app
    with chromium(home / "chromium-profile", 1280, 800) as context:
        yield context.new_page()


def _pick_method(page, method: str) -> None:
    page.get_by_label("Method").click()
    page.get_by_role("option", name=METHODS[method].label, exact=True).click()


def _ask(page, method: str, question: str) -> None:
    """Ask in the page as it is (no reload): the result line must name this question and method."""
    from playwright.sync_api import expect

    _pick_method(page, method)
    page.get_by_label("Question", exact=True).fill(question)
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_text(f"{METHODS[method].label} · offline", exact=False).filter(
        has_text=f"question: {question}")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    page.wait_for_timeout(1_500)  # let any further rerun settle: a stale result would come back here


def _run_in_url(page) -> str:
    return parse_qs(urlparse(page.url).query).get("run", [""])[0]


def test_three_questions_in_one_session_each_show_what_was_asked(app, page):
    from playwright.sync_api import expect

    url, _ = app
    page.goto(f"{url}/?pack=demo")
    expect(page.get_by_label("Question", exact=True)).to_be_visible(timeout=30_000)
    expect(page.get_by_role("link", name="New here? Take the demo tour")).to_be_visible()
    run = page.get_by_role("button", name="Run", exact=True).bounding_box()
    assert run is not None and run["y"] + run["height"] <= 800, "a newcomer must see Run without scrolling"
    page.screenshot(path=str(ARTIFACTS / "explore_first_view_1280x800.png"))
    run_ids = []
    for i, (method, question) in enumerate(ASKED):
        _ask(page, method, question)
        for _, other in ASKED:
            if other != question:
                expect(page.get_by_text(f"question: {other}", exact=False)).to_have_count(0)
        expect(page.get_by_label("Question", exact=True)).to_have_value(question)
        run_ids.append(_run_in_url(page))
        answer = page.get_by_role("heading", name="Answer")
        box = answer.bounding_box()
        assert box is not None and box["y"] + box["height"] <= 800, "the answer must be in view without scrolling"
        page.screenshot(path=str(ARTIFACTS / f"session_question_{i + 1}_1280x800.png"))
    assert len(set(run_ids)) == 3 and all(run_ids), run_ids

    page.get_by_test_id("stSidebar").get_by_role("link", name="History").click()
    page.wait_for_timeout(1_500)
    page.get_by_test_id("stSidebar").get_by_role("link", name="Explore").click()
    expect(page.get_by_text(f"question: {ASKED[-1][1]}", exact=False)).to_be_visible(timeout=30_000)

    page.goto(f"{url}/?pack=demo&run={run_ids[1]}")  # a link to the second run opens it, with its method
    expect(page.get_by_text(f"question: {ASKED[1][1]}", exact=False)).to_be_visible(timeout=30_000)
    expect(page.get_by_role("combobox", name="Method")).to_have_value(METHODS[ASKED[1][0]].label)
    page.set_viewport_size({"width": 1920, "height": 1080})
    page.wait_for_timeout(1_000)
    page.screenshot(path=str(ARTIFACTS / "session_linked_run_1920x1080.png"))


def test_a_replayed_trace_is_shown_with_its_own_method(app, page, tmp_path):
    from playwright.sync_api import expect

    from engine.knowledge.loader import load_pack
    from engine.runner import Workbench
    from paths import DEMO_PACK

    url, _ = app
    trace = Workbench(load_pack(DEMO_PACK)).ask("Who was Niels Bohr's doctoral advisor?", "hybrid",
                                                {"min_confidence": 0.0})
    saved = tmp_path / "replay.json"
    saved.write_text(trace.to_json())
    page.goto(f"{url}/?pack=demo")
    expect(page.get_by_label("Question", exact=True)).to_be_visible(timeout=30_000)
    _ask(page, "vanilla", "Who discovered the neutron?")
    page.get_by_text("Replay a saved trace").click()
    page.locator("input[type=file]").set_input_files(str(saved))
    page.get_by_role("button", name="Replay", exact=True).click()
    expect(page.get_by_text(f"question: {trace.question}", exact=False)).to_be_visible(timeout=30_000)
    page.wait_for_timeout(1_500)
    expect(page.get_by_text("question: Who discovered the neutron?", exact=False)).to_have_count(0)
    expect(page.get_by_role("combobox", name="Method")).to_have_value(METHODS["hybrid"].label)
    assert _run_in_url(page) == "", "a replayed trace is not saved: no link may point at another run"
    expect(page.get_by_label("Question", exact=True)).to_have_value(trace.question)


def test_unknown_pages_and_packs_are_named_not_silently_replaced(app, page):
    from playwright.sync_api import expect

    url, _ = app
    page.goto(f"{url}/nosuchpage")
    expect(page.get_by_text("There is no page “/nosuchpage”", exact=False)).to_be_visible(timeout=30_000)
    page.goto(f"{url}/?pack=nonexistent")
    expect(page.get_by_text("There is no knowledge pack “nonexistent”", exact=False)).to_be_visible(timeout=30_000)
    page.screenshot(path=str(ARTIFACTS / "explore_unknown_pack_1280x800.png"))
