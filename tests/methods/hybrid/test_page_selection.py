"""Per-question pages: a page listing question ids belongs to those questions; pages listing none are shared."""

from __future__ import annotations

from engine.knowledge.records import Document, Pack, PackInfo, Page, Question
from engine.methods.hybrid.page_selection import select_pages

QUESTIONS = (Question("q1", "Where does the Danube end?", ("Black Sea",), "factoid"),
             Question("q2", "How long is the Rhine?", ("1230 km",), "numeric"),
             Question("q3", "How long is the Rhine?", ("1230 km",), "numeric"))  # CRAG repeats queries


def pack(*pages: Page) -> Pack:
    return Pack(PackInfo("rivers"), (Document("d", "Rivers", "Rivers flow."),), questions=QUESTIONS, pages=pages)


def page(page_id: str, *question_ids: str) -> Page:
    return Page(page_id, f"https://x/{page_id}", page_id, "<p>Text.</p>", question_ids)


RIVERS = pack(page("a", "q1"), page("b", "q2"), page("shared"), page("c", "q1", "q2"), page("d", "q3"))


def ids(selection) -> list[str]:
    return [p.id for p in selection.pages]


def test_a_pack_question_gets_its_own_pages_then_the_shared_ones_and_no_other_questions_pages() -> None:
    chosen = select_pages(RIVERS, "Where does the Danube end?", None, limit=50)
    assert ids(chosen) == ["a", "c", "shared"]
    assert chosen.reason == "2 pages for this question (question_ids q1) + 1 shared"


def test_the_pack_question_is_found_by_its_whitespace_normalised_text_only() -> None:
    assert ids(select_pages(RIVERS, "  Where does\tthe Danube\n end? ", None, limit=50)) == ["a", "c", "shared"]
    assert ids(select_pages(RIVERS, "where does the danube end?", None, limit=50)) == ["shared"]


def test_questions_sharing_a_text_share_their_pages_unless_the_run_names_one() -> None:
    assert ids(select_pages(RIVERS, "How long is the Rhine?", None, limit=50)) == ["b", "c", "d", "shared"]
    named = select_pages(RIVERS, "How long is the Rhine?", QUESTIONS[2], limit=50)
    assert ids(named) == ["d", "shared"] and "question_ids q3)" in named.reason


def test_a_free_form_question_gets_the_shared_pages_only_and_says_why() -> None:
    chosen = select_pages(RIVERS, "Which river is the longest?", None, limit=50)
    assert ids(chosen) == ["shared"]
    assert chosen.reason == ("free-form question (not in the pack): shared pages only (1); 4 pages belong to pack "
                             "questions")


def test_a_free_form_question_on_a_pack_without_shared_pages_gets_none() -> None:
    chosen = select_pages(pack(page("a", "q1")), "Which river is the longest?", None, limit=50)
    assert chosen.pages == ()
    assert chosen.reason.startswith("free-form question (not in the pack): shared pages only (0)")
    assert select_pages(pack(), "Where does the Danube end?", None, limit=50).reason == "the pack has no web pages"


def test_the_cap_keeps_the_question_s_own_pages_first() -> None:
    chosen = select_pages(RIVERS, "Where does the Danube end?", None, limit=2)
    assert ids(chosen) == ["a", "c"] and chosen.reason.endswith("; the first 2 kept")


def test_the_pages_step_of_a_run_says_which_pages_it_read_and_why(demo_workbench) -> None:
    # q056's text, asked without its id: page-03 lists q056, and no demo page is shared
    listed = demo_workbench.ask("How many years after  polonium was francium discovered?", "hybrid").steps[0]
    assert listed.note == "Pages: 1 page for this question (question_ids q056) + 0 shared."
    assert {row[0] for row in listed.rows if row[1] in ("page", "table")} == {"page-03"}
    free = demo_workbench.ask("Which element was named after France?", "hybrid").steps[0]
    assert free.note == ("Pages: free-form question (not in the pack): shared pages only (0); 8 pages belong to "
                         "pack questions.")
    assert free.title.startswith("0 pages, 5 documents") and {row[1] for row in free.rows} == {"document"}
