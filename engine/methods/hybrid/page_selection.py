"""Which of a pack's web pages are a question's search results (spec §2.0: CRAG hands each question its own).

A page whose `question_ids` list questions belongs to those questions only; a page without them is
shared by every question. The run knows the question's text, so the pack question is found by its
whitespace-normalised text (several pack questions with that text share their pages, unless the run
names one of them). A free-form question gets the shared pages only: other questions' search results
are not its own, and taking them all is what made a 50-page pack cost minutes (issue 16).
"""

from __future__ import annotations

from dataclasses import dataclass

from engine.knowledge.records import Pack, Page, Question


@dataclass(frozen=True)
class PageSelection:
    pages: tuple[Page, ...]
    reason: str  # which pages and why, for the trace's pages step


def select_pages(pack: Pack, question: str, asked: Question | None, limit: int) -> PageSelection:
    """The question's own pages first, then the shared ones, at most `limit` in all."""
    if not pack.pages:
        return PageSelection((), "the pack has no web pages")
    ids = _question_ids(pack, question, asked)
    own = [p for p in pack.pages if ids.intersection(p.question_ids)]
    shared = [p for p in pack.pages if not p.question_ids]
    chosen = tuple((own + shared)[:limit])
    if ids:
        reason = f"{_pages(len(own))} for this question (question_ids {', '.join(sorted(ids))}) + {len(shared)} shared"
    else:
        others = len(pack.pages) - len(shared)
        reason = (f"free-form question (not in the pack): shared pages only ({len(shared)}); "
                  f"{_pages(others)} belong to pack questions")
    if len(chosen) < len(own) + len(shared):
        reason += f"; the first {limit} kept"
    return PageSelection(chosen, reason)


def _question_ids(pack: Pack, question: str, asked: Question | None) -> set[str]:
    text = _normal(question)
    matches = {q.id for q in pack.questions if _normal(q.question) == text}
    return {asked.id} if asked is not None and asked.id in matches else matches


def _pages(n: int) -> str:
    return f"{n} page" + ("" if n == 1 else "s")


def _normal(text: str) -> str:
    return " ".join(text.split())
