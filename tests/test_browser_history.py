"""History, Compare and Evaluate in Debian's Chromium: re-importing an export keeps one copy of each run,
and the Compare and Evaluate screens at 1280×800 (screenshots in tests/artifacts/ for a human to look at).
"""

from __future__ import annotations

from pathlib import Path

import pytest

from engine.runs import RunStore
from engine.trace import AnswerStep, Trace
from test_browser import ANSWER_TIMEOUT_MS, ARTIFACTS, CHROMIUM, chromium, serve_app

SEEDED = 3

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not Path(CHROMIUM).exists(), reason="Debian's chromium is not installed (make browser-deps)"),
]


def _seed(data: Path) -> None:
    store = RunStore(data / "runs.sqlite3")
    for i in range(SEEDED):
        head = Trace(id=f"seeded{i}", question=f"Who was seeded {i}?", method="vanilla", backend="offline",
                     model="", pack="demo", started=f"2030-01-01T00:00:0{i}+00:00")
        store.save(head.with_steps((AnswerStep(text=f"answer {i}"),), 10.0 + i))


@pytest.fixture(scope="module")
def app(tmp_path_factory):
    home = tmp_path_factory.mktemp("browser_history_home")
    _seed(home / ".ragscope")
    with serve_app(home, home / ".ragscope") as url:
        yield url, home


@pytest.fixture(scope="module")
def browser(app):
    _, home = app
    with chromium(home / "chromium-profile", 1280, 800, accept_downloads=True) as context:
        yield context


def _screens(page, stem: str, most: int = 6) -> None:
    """Viewport screenshots down the page (stem_1.png, …): Streamlit scrolls its main block, not the page,
    so a full-page screenshot would hold only the first screen."""
    scroller = page.locator("[data-testid='stMain']")
    for n in range(1, most + 1):
        page.screenshot(path=str(ARTIFACTS / f"{stem}_{n}.png"))
        moved = scroller.evaluate("el => { const top = el.scrollTop; el.scrollBy(0, 700); return el.scrollTop > top; }")
        if not moved:
            break
        page.wait_for_timeout(300)


def _listed_rows(page) -> int:
    """Data rows of the History table, as the grid reports them to assistive technology (header excluded)."""
    grid = page.get_by_test_id("stDataFrame").locator("[aria-rowcount]").first
    return int(grid.get_attribute("aria-rowcount")) - 1


def _open_history(page, url: str) -> None:
    from playwright.sync_api import expect

    page.goto(f"{url}/history?pack=demo")  # a fresh page each time: no notice left from an earlier import
    expect(page.get_by_role("heading", name="History")).to_be_visible(timeout=30_000)
    expect(page.get_by_test_id("stDataFrame")).to_be_visible(timeout=30_000)


def test_importing_an_export_twice_keeps_one_copy_of_each_run(app, browser, tmp_path):
    from playwright.sync_api import expect

    url, home = app
    page = browser.new_page()
    _open_history(page, url)
    assert _listed_rows(page) == SEEDED
    with page.expect_download() as download:
        page.get_by_role("button", name="Export all runs").click()
    exported = tmp_path / "ragscope-runs.json"
    download.value.save_as(exported)
    for _ in range(2):
        _open_history(page, url)
        page.get_by_text("Import runs").click()
        page.get_by_test_id("stFileUploaderDropzoneInput").set_input_files(str(exported))
        page.get_by_role("button", name="Import", exact=True).click()
        expect(page.get_by_text(f"0 imported, {SEEDED} already there")).to_be_visible(timeout=30_000)
        assert _listed_rows(page) == SEEDED
    assert len(RunStore(home / ".ragscope" / "runs.sqlite3").list()) == SEEDED
    page.screenshot(path=str(ARTIFACTS / "history_reimport_1280x800.png"))
    page.close()


def test_compare_at_1280_shows_the_baseline_first_and_whole_words(app, browser):
    from playwright.sync_api import expect

    url, _ = app
    page = browser.new_page()
    page.goto(f"{url}/compare?pack=demo")
    expect(page.get_by_role("heading", name="Compare methods")).to_be_visible(timeout=30_000)
    page.get_by_label("Question", exact=True).fill("Where was Marie Curie born?")
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_role("heading", name="Chunks in common")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    page.wait_for_timeout(2_000)
    _screens(page, "compare_1280x800")
    headings = page.locator("[data-testid='stColumn'] h3").all_inner_texts()
    assert headings and headings[0].strip() == "Vanilla RAG"
    page.close()


def test_evaluate_at_1280_warns_of_few_answers_and_lists_past_evaluations(app, browser):
    from playwright.sync_api import expect

    url, _ = app
    page = browser.new_page()
    page.goto(f"{url}/evaluate?pack=demo")
    expect(page.get_by_role("heading", name="Evaluate")).to_be_visible(timeout=30_000)
    limit = page.get_by_role("spinbutton", name="At most this many questions")
    limit.fill("7")
    limit.press("Enter")
    expect(page.get_by_text("7 questions × 6 methods", exact=False)).to_be_visible(timeout=30_000)
    page.get_by_role("button", name="Run", exact=True).click()
    expect(page.get_by_role("heading", name="Calibration")).to_be_visible(timeout=ANSWER_TIMEOUT_MS)
    page.wait_for_timeout(2_000)
    _screens(page, "evaluate_1280x800")
    expect(page.get_by_text("Few answers to judge calibration by", exact=False)).to_have_count(1)
    expect(page.get_by_role("heading", name="Past evaluations")).to_have_count(1)
    page.close()
